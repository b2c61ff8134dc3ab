//! The file header, and the best explanation we can give when the input is not wire bytes.
//!
//! The first bytes are where a user who passed the wrong file finds out, so a wrong magic is
//! explained by what the input looks like (accy text, a NumPy array, an executable, a
//! text-mode-mangled copy, …) rather than reported as a bare mismatch.

use crate::codes::HEADER_LEN;
use crate::reader::{invalid, FileVersion, Reader};
use crate::{DecodeError, MAGIC, VERSION_MAJOR, VERSION_MINOR};

/// What the 16-byte header declares.
#[derive(Debug)]
pub(crate) struct Header {
    /// The file's version.
    pub(crate) version: FileVersion,
    /// How many sections follow the header.
    pub(crate) sections: u32,
}

/// Reads and checks the header, leaving `r` at the first section header.
pub(crate) fn read_header(r: &mut Reader<'_>, bytes: &[u8]) -> Result<Header, DecodeError> {
    if !bytes.starts_with(&MAGIC) {
        let (offset, reason) = explain_bad_magic(bytes);
        return Err(invalid(offset, reason));
    }
    if bytes.len() < HEADER_LEN {
        return Err(invalid(
            bytes.len(),
            format!(
                "truncated header: the input ends after {} bytes, inside the {HEADER_LEN}-byte \
                 header (magic, major, minor, section count)",
                bytes.len()
            ),
        ));
    }
    r.take(MAGIC.len(), "magic")?;
    let major = r.u16("major version")?;
    let minor = r.u16("minor version")?;
    let version = FileVersion { major, minor };
    if major != VERSION_MAJOR {
        return Err(version.unsupported(
            MAGIC.len(),
            format!(
                "major version {major} cannot be read by a decoder of major version \
                 {VERSION_MAJOR} (minor {VERSION_MINOR} or older)"
            ),
        ));
    }
    let sections = r.u32("section count")?;
    Ok(Header { version, sections })
}

/// Formats whose first bytes identify them, with how to name them in a message.
const KNOWN_FORMATS: [(&[u8], &str); 10] = [
    (b"\x93NUMPY", "a NumPy .npy array file"),
    (b"\x7fELF", "an ELF executable or object file"),
    (
        b"PK\x03\x04",
        "a zip archive (a NumPy .npz or PyTorch file?)",
    ),
    (b"\0asm", "a WebAssembly module"),
    (b"GGUF", "a GGUF model file"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\x1f\x8b", "gzip-compressed data (decompress it first)"),
    (
        b"\x28\xb5\x2f\xfd",
        "zstd-compressed data (decompress it first)",
    ),
    (b"MZ", "a Windows executable"),
];

/// The offset and message for input that does not start with [`MAGIC`].
fn explain_bad_magic(bytes: &[u8]) -> (usize, String) {
    let expected = hex(&MAGIC);
    if bytes.is_empty() {
        return (
            0,
            format!("empty input: wire bytes start with the magic {expected}"),
        );
    }
    if MAGIC.starts_with(bytes) {
        return (
            bytes.len(),
            format!(
                "truncated header: the input is only {} bytes, the start of the magic",
                bytes.len()
            ),
        );
    }
    if bytes.len() >= 5 && bytes[1..5] == MAGIC[1..5] {
        if bytes[0] == MAGIC[0] & 0x7f {
            return (
                0,
                "the magic's first byte lost its high bit (09 instead of 89): the file went \
                 through a 7-bit text transfer; copy it as binary"
                    .into(),
            );
        }
        if bytes[0] == MAGIC[0] {
            let first_diff = bytes.iter().zip(MAGIC).position(|(&a, b)| a != b);
            let at = first_diff.unwrap_or(bytes.len());
            let shown = &bytes[..bytes.len().min(MAGIC.len())];
            return (
                at,
                format!(
                    "the magic's line-ending bytes were changed (found {}, expected {expected}): \
                     the file was probably copied in text mode; copy it as binary",
                    hex(shown)
                ),
            );
        }
    }
    for (prefix, name) in KNOWN_FORMATS {
        if bytes.starts_with(prefix) {
            return (0, format!("this looks like {name}, not accy wire bytes"));
        }
    }
    if looks_like_safetensors(bytes) {
        return (
            0,
            "this looks like a safetensors file (weights), not accy wire bytes".into(),
        );
    }
    if let Some(first) = text_start(bytes) {
        if first.starts_with("program") {
            return (
                0,
                "this looks like accy text (starts with `program`), not wire bytes; parse it \
                 with the text format instead"
                    .into(),
            );
        }
        let line: String = first
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(40)
            .collect();
        return (
            0,
            format!("this looks like text (`{line}`), not accy wire bytes"),
        );
    }
    let shown = &bytes[..bytes.len().min(MAGIC.len())];
    (
        0,
        format!(
            "not accy wire bytes: the input starts with {}, but wire bytes start with the \
             magic {expected}",
            hex(shown)
        ),
    )
}

/// A safetensors file starts with a u64 header length followed by a JSON object.
fn looks_like_safetensors(bytes: &[u8]) -> bool {
    let Some(len) = bytes.get(..8) else {
        return false;
    };
    let mut a = [0u8; 8];
    a.copy_from_slice(len);
    let len = u64::from_le_bytes(a);
    bytes.get(8) == Some(&b'{') && (2..1 << 40).contains(&len)
}

/// If the start of `bytes` reads as text, that text with a byte-order mark, leading
/// whitespace and `#` or `//` comment lines removed.
fn text_start(bytes: &[u8]) -> Option<&str> {
    let window = &bytes[..bytes.len().min(4096)];
    let text = match std::str::from_utf8(window) {
        Ok(s) => s,
        // A window cut inside a multi-byte character is still text up to the cut.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&window[..e.valid_up_to()]).ok()?
        }
        Err(_) => return None,
    };
    if text
        .chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return None;
    }
    let mut rest = text.strip_prefix('\u{feff}').unwrap_or(text);
    loop {
        rest = rest.trim_start();
        if rest.starts_with('#') || rest.starts_with("//") {
            rest = rest.split_once('\n').map_or("", |(_, after)| after);
        } else {
            return Some(rest);
        }
    }
}

/// `bytes` as space-separated upper-case hex pairs.
fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(bytes: &[u8]) -> String {
        explain_bad_magic(bytes).1
    }

    #[test]
    fn wrong_inputs_are_named() {
        assert!(reason(b"").starts_with("empty input"));
        assert!(reason(&MAGIC[..3]).starts_with("truncated header"));
        assert!(reason(b"program @f(x: f32[2]) {\n").contains("accy text"));
        assert!(reason(b"# a comment\n\n  program {").contains("accy text"));
        assert!(reason(b"\x93NUMPY\x01\x00v\x00{'descr'").contains(".npy"));
        assert!(reason(b"\x7fELF\x02\x01\x01\0\0\0").contains("ELF"));
        assert!(reason(b"hello world\n").contains("looks like text (`hello world`)"));
        let mut st = 20u64.to_le_bytes().to_vec();
        st.extend_from_slice(b"{\"w\":{}}");
        assert!(reason(&st).contains("safetensors"));
        assert!(reason(&[0, 1, 2, 3, 0xff, 0xfe, 9, 9, 9]).contains("00 01 02 03 FF FE 09 09"));
    }

    #[test]
    fn mangled_magic_says_how() {
        // CR LF converted to LF by a text-mode copy.
        let (at, why) = explain_bad_magic(&[0x89, b'A', b'C', b'C', b'Y', 0x0A, 0x1A, 1, 0]);
        assert_eq!(at, 5);
        assert!(why.contains("text mode"), "{why}");
        let why = reason(&[0x09, b'A', b'C', b'C', b'Y', 0x0D, 0x0A, 0x1A]);
        assert!(why.contains("high bit"), "{why}");
    }
}
