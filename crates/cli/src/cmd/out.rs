//! Standard output for the subcommands, with every write checked.
//!
//! `println!` panics when a write fails. Here a reader that went away (a closed pipe, as in
//! `accy inspect … | head -1`) ends the command quietly ([`Failure::ClosedPipe`], exit 0), and
//! any other write error (a full disk, `> /dev/full`) is an I/O failure (exit 3) naming it.
//! Use it with `write!` / `writeln!`, which return `Result<(), Failure>` here.

use std::fmt;
use std::io::{self, Write};

use super::Failure;

/// The process's standard output, locked for the command's lifetime.
#[derive(Debug)]
pub struct Out {
    stdout: io::StdoutLock<'static>,
}

impl Default for Out {
    fn default() -> Out {
        Out::new()
    }
}

impl Out {
    /// Locks standard output.
    pub fn new() -> Out {
        Out {
            stdout: io::stdout().lock(),
        }
    }

    /// Writes formatted text (what `write!` and `writeln!` call).
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result<(), Failure> {
        self.stdout.write_fmt(args).map_err(failure)
    }

    /// Writes raw bytes.
    pub fn bytes(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.stdout.write_all(bytes).map_err(failure)
    }

    /// Flushes what is buffered, so a failing last write is reported too.
    pub fn flush(&mut self) -> Result<(), Failure> {
        self.stdout.flush().map_err(failure)
    }
}

/// The failure a standard-output write error means.
fn failure(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::ClosedPipe
    } else {
        Failure::Io(format!("writing to standard output: {e}"))
    }
}
