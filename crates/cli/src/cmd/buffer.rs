//! Memory whose size comes from the program or from a file, allocated fallibly: a failed
//! allocation is a [`Failure::Runtime`] saying "out of memory" with the size (exit 4), never an
//! abort.

use std::io::{self, Read};
use std::path::Path;

use super::Failure;

/// The failure for `bytes` bytes of `what` that could not be allocated.
pub fn out_of_memory(what: &str, bytes: u64) -> Failure {
    Failure::Runtime(format!("out of memory: {what} needs {bytes} bytes"))
}

/// One cache line: the unit a [`Buffer`] is allocated in.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Line([u8; 64]);

// SAFETY: `Line` is `repr(C)` around one byte array whose size (64) is a multiple of its
// alignment (64), so it has no padding, and every bit pattern (zero too) is a valid value.
unsafe impl bytemuck::Zeroable for Line {}
// SAFETY: as above; it is `Copy` and `'static`.
unsafe impl bytemuck::Pod for Line {}

/// A byte buffer that starts on a 64-byte boundary: aligned for every accy dtype (8 bytes), as
/// `invoke` requires, and on a cache line, as a host's tensor allocator gives (ONNX Runtime's
/// aligns to 64), so whole-line and non-temporal stores apply from its first byte.
#[derive(Debug)]
pub struct Buffer {
    lines: Vec<Line>,
    len: usize,
}

impl Buffer {
    /// `len` zero bytes for `what` (named in the failure if there is no memory for them).
    pub fn zeroed(len: u64, what: &str) -> Result<Buffer, Failure> {
        let lines = usize::try_from(len.div_ceil(64)).map_err(|_| out_of_memory(what, len))?;
        let mut memory = Vec::new();
        memory
            .try_reserve_exact(lines)
            .map_err(|_| out_of_memory(what, len))?;
        memory.resize(lines, Line([0; 64]));
        Ok(Buffer {
            lines: memory,
            // `len <= 64 * lines`, which fits `usize` (the lines were allocated).
            len: len as usize,
        })
    }

    /// A copy of this buffer for `what`.
    pub fn try_clone(&self, what: &str) -> Result<Buffer, Failure> {
        let mut copy = Buffer::zeroed(self.len as u64, what)?;
        copy.lines.copy_from_slice(&self.lines);
        Ok(copy)
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.lines)[..self.len]
    }

    /// The bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.lines)[..self.len]
    }
}

/// The contents of the file at `path`, read into memory reserved fallibly: an unreadable
/// file is an I/O failure (exit 3), one too large for the memory left a runtime failure.
pub fn read_file(path: &Path) -> Result<Vec<u8>, Failure> {
    let failed = |e: io::Error| match e.kind() {
        io::ErrorKind::OutOfMemory => {
            Failure::Runtime(format!("out of memory reading {}: {e}", path.display()))
        }
        _ => Failure::Io(format!("reading {}: {e}", path.display())),
    };
    let mut file = std::fs::File::open(path).map_err(failed)?;
    let len = file.metadata().map_err(failed)?.len();
    let mut bytes = Vec::new();
    let what = format!("reading {}", path.display());
    bytes
        .try_reserve_exact(usize::try_from(len).map_err(|_| out_of_memory(&what, len))?)
        .map_err(|_| out_of_memory(&what, len))?;
    file.read_to_end(&mut bytes).map_err(failed)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_zeroed_and_refuse_impossible_sizes() {
        let mut b = Buffer::zeroed(13, "test").unwrap();
        assert_eq!(b.bytes(), &[0; 13]);
        assert_eq!(b.bytes().as_ptr() as usize % 64, 0);
        b.bytes_mut()[12] = 7;
        assert_eq!(b.try_clone("copy").unwrap().bytes()[12], 7);
        let err = Buffer::zeroed(1 << 62, "input \"x\"").unwrap_err();
        assert_eq!(err.code(), 4);
        assert_eq!(
            err.message(),
            "out of memory: input \"x\" needs 4611686018427387904 bytes"
        );
    }
}
