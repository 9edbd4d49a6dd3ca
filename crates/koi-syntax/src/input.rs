//! Reading the text files koi is given (P4 sources and includes, entries files, STF tests)
//! with a size limit, so that a huge file, a device such as `/dev/zero`, a FIFO or a directory
//! is refused with a clear error instead of being read until memory runs out.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

/// The largest P4 source file (a program or one of its includes): about 70 times the largest
/// program of p4c's corpus (switch_p4_16.p4, 240 KB). The frontend keeps a few dozen bytes per
/// token, so this bounds a check to a few hundred MiB.
pub const MAX_SOURCE: u64 = 16 * MIB;
/// The largest STF test file.
pub const MAX_STF: u64 = 64 * MIB;
/// The largest entries file (`--entries`): room for some million table entries.
pub const MAX_ENTRIES: u64 = 256 * MIB;

/// Why a file could not be read.
#[derive(Debug)]
pub enum InputError {
    /// The file is larger than `limit` bytes.
    TooLarge { path: PathBuf, limit: u64 },
    /// A directory, a device, a FIFO or a socket.
    NotAFile { path: PathBuf, kind: &'static str },
    /// Not valid UTF-8; `offset` is the first invalid byte.
    NotUtf8 { path: PathBuf, offset: usize },
    /// The system refused (missing file, no permission, ...).
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::TooLarge { path, limit } => write!(
                f,
                "{}: file is larger than {} (koi's limit for this kind of file)",
                path.display(),
                size(*limit)
            ),
            InputError::NotAFile { path, kind } => {
                write!(f, "{}: is a {kind}, not a regular file", path.display())
            }
            InputError::NotUtf8 { path, offset } => write!(
                f,
                "{}: not UTF-8 text (invalid byte at offset {offset})",
                path.display()
            ),
            InputError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for InputError {}

/// `limit` bytes as "N MiB" (or "N bytes" below one MiB).
fn size(limit: u64) -> String {
    if limit >= MIB && limit.is_multiple_of(MIB) {
        format!("{} MiB", limit / MIB)
    } else {
        format!("{limit} bytes")
    }
}

/// Reads the regular file at `path` as UTF-8 text of at most `limit` bytes.
pub fn read_text(path: &Path, limit: u64) -> Result<String, InputError> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Reads the regular file at `path`, at most `limit` bytes.
pub fn read_bytes(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let io = |error| InputError::Io {
        path: path.to_path_buf(),
        error,
    };
    // Look before opening: opening a FIFO waits for a writer.
    check_regular(path, &std::fs::metadata(path).map_err(io)?)?;
    let file = std::fs::File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    check_regular(path, &meta)?;
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    // The size may change while reading (or be reported as 0, as in /proc): read one byte
    // past the limit to tell.
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut out).map_err(io)?;
    if out.len() as u64 > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(out)
}

/// Checks, without reading it, that `path` is a regular file of at most `limit` bytes.
pub fn check_file(path: &Path, limit: u64) -> Result<(), InputError> {
    let meta = std::fs::metadata(path).map_err(|error| InputError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    check_regular(path, &meta)?;
    if meta.len() > limit {
        return Err(InputError::TooLarge {
            path: path.to_path_buf(),
            limit,
        });
    }
    Ok(())
}

/// Refuses what is not a regular file.
pub fn check_regular(path: &Path, meta: &std::fs::Metadata) -> Result<(), InputError> {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "directory"
    } else if t.is_char_device() || t.is_block_device() {
        "device"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    };
    Err(InputError::NotAFile {
        path: path.to_path_buf(),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        (dir, p)
    }

    #[test]
    fn reads_a_file_within_the_limit() {
        let (_d, p) = temp("a.p4", b"control c() { apply {} }\n");
        assert_eq!(read_text(&p, 100).unwrap(), "control c() { apply {} }\n");
    }

    #[test]
    fn refuses_a_file_past_the_limit() {
        let (_d, p) = temp("a.p4", &vec![b' '; 2 * MIB as usize + 1]);
        let e = read_text(&p, 2 * MIB).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "{}: file is larger than 2 MiB (koi's limit for this kind of file)",
                p.display()
            )
        );
        assert!(read_text(&p, 2 * MIB + 1).is_ok());
    }

    #[test]
    fn refuses_directories_and_devices() {
        let d = tempfile::tempdir().unwrap();
        let e = read_text(d.path(), MAX_SOURCE).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is a directory, not a regular file"),
            "{e}"
        );
        let e = read_text(Path::new("/dev/zero"), MAX_SOURCE).unwrap_err();
        assert_eq!(e.to_string(), "/dev/zero: is a device, not a regular file");
    }

    #[test]
    fn proc_files_that_report_no_size_are_still_limited() {
        // /proc files have size 0 in their metadata; the limit holds on what is read.
        let e = read_bytes(Path::new("/proc/self/maps"), 1).unwrap_err();
        assert!(matches!(e, InputError::TooLarge { .. }), "{e}");
    }

    #[test]
    fn refuses_text_that_is_not_utf8() {
        let (_d, p) = temp("a.p4", b"const bit<8> x = 1; // \xff\xfe\n");
        let e = read_text(&p, 100).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: not UTF-8 text (invalid byte at offset 23)",
                p.display()
            )
        );
    }
}
