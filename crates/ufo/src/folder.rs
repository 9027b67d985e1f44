//! Files in a trajectory folder, opened without trusting the folder.
//!
//! A trajectory folder may have been prepared by someone else (a shared runs folder, a folder
//! handed over for `ufo report` or `ufo resume`). Every file ufo reads or writes in it goes
//! through this module, which:
//!
//! - never follows a symbolic link (`O_NOFOLLOW`): a planted link is an error that says so;
//! - opens only regular files: a FIFO or a device is refused after `fstat`, and is opened
//!   non-blocking so that the open itself cannot hang;
//! - reads with a bound (whole small files up to a cap, large files line by line with a
//!   longest line);
//! - writes a file whole or not at all through a temporary file created fresh (`O_EXCL`, a
//!   name of its own) and renamed over the target; the temporary file is removed on every
//!   failure.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::libc;

/// The error for a symbolic link where a trajectory file should be.
fn link_error() -> std::io::Error {
    std::io::Error::new(
        ErrorKind::InvalidInput,
        "it is a symbolic link, and ufo neither reads nor writes through links in a trajectory \
         folder; remove the link (or use another folder)",
    )
}

/// The error for a FIFO, a device or a folder where a trajectory file should be.
fn not_regular_error() -> std::io::Error {
    std::io::Error::new(
        ErrorKind::InvalidInput,
        "it is not a regular file (a FIFO, a device or a folder), and ufo reads and writes only \
         regular files in a trajectory folder; remove it",
    )
}

/// Whether `e` says the path was a link (`O_NOFOLLOW` fails with `ELOOP` on one).
fn is_link(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// Open with `options` plus `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`, then check that what was
/// opened is a regular file. A link, a FIFO or a device is an error that says what it is.
fn open_checked(path: &Path, options: &mut OpenOptions) -> std::io::Result<File> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            _ if is_link(&e) => link_error(),
            // a FIFO opened for writing without a reader
            Some(libc::ENXIO) => not_regular_error(),
            _ => e,
        })?;
    if !file.metadata()?.file_type().is_file() {
        return Err(not_regular_error());
    }
    Ok(file)
}

/// Open an existing regular file for reading.
pub fn open_read(path: &Path) -> std::io::Result<File> {
    open_checked(path, OpenOptions::new().read(true))
}

/// Read a whole regular file of at most `max` bytes; a larger one is an error (nothing of it
/// is kept).
pub fn read_capped(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    let (bytes, whole) = read_prefix(path, max)?;
    if !whole {
        return Err(std::io::Error::new(
            ErrorKind::InvalidData,
            format!("it is larger than {max} bytes, more than ufo reads of such a file"),
        ));
    }
    Ok(bytes)
}

/// The first `max` bytes of a regular file, and whether that is all of it.
pub fn read_prefix(path: &Path, max: u64) -> std::io::Result<(Vec<u8>, bool)> {
    let file = open_read(path)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    let whole = bytes.len() as u64 <= max;
    bytes.truncate(usize::try_from(max).unwrap_or(usize::MAX));
    Ok((bytes, whole))
}

/// Open a regular file for appending (and reading), creating it when missing.
pub fn open_append(path: &Path) -> std::io::Result<File> {
    open_checked(
        path,
        OpenOptions::new().read(true).append(true).create(true),
    )
}

/// Whether the path exists as anything (a dangling link counts).
pub fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// The names in `dir` that `wanted` selects and that are symbolic links, sorted.
pub fn links_among(dir: &Path, wanted: impl Fn(&str) -> bool) -> std::io::Result<Vec<String>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if wanted(&name) && entry.file_type()?.is_symlink() {
            found.push(name);
        }
    }
    found.sort();
    Ok(found)
}

/// A fresh temporary file beside `path` (`.<name>.<pid>-<n>.tmp`), created with `O_EXCL` so
/// that nothing already there (a planted file or link) is ever opened.
fn create_temp(path: &Path) -> std::io::Result<(File, PathBuf)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for _ in 0..100 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tmp = path.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists || is_link(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        ErrorKind::AlreadyExists,
        "no free temporary file name beside it; remove the .*.tmp files in the folder",
    ))
}

/// Write `path` whole or not at all: `fill` writes into a fresh temporary file beside it,
/// which is then renamed over `path` (a link at `path` is replaced, never followed). On any
/// failure the temporary file is removed and an earlier version of `path` stays.
pub fn write_atomic(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let (file, tmp) = create_temp(path)?;
    let result = (|| {
        let mut w = std::io::BufWriter::new(file);
        fill(&mut w)?;
        w.flush()?;
        let file = w.into_inner().map_err(|e| e.into_error())?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Write `bytes` as the whole of `path` (see [`write_atomic`]).
pub fn write_bytes(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic(path, |w| w.write_all(bytes))
}

/// One line read by [`read_line`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line is in the buffer (without its newline).
    Text,
    /// The line was longer than the cap: it was skipped up to its newline (the buffer is
    /// empty); its length in bytes.
    TooLong(u64),
    /// End of input.
    Eof,
}

/// Read one line into `buf` (cleared first), keeping at most `max` bytes of it: a longer line
/// is consumed up to its newline and reported as [`Line::TooLong`], so a file without
/// newlines never fills memory. A last line without a newline counts as a line.
pub fn read_line(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    buf.clear();
    let mut len: u64 = 0;
    let mut any = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, used, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        len += part.len() as u64;
        if len <= max as u64 {
            buf.extend_from_slice(part);
        } else if !buf.is_empty() {
            buf.clear();
            buf.shrink_to(64 * 1024);
        }
        reader.consume(used);
        if done {
            break;
        }
    }
    Ok(match (any, len > max as u64) {
        (false, _) => Line::Eof,
        (true, true) => Line::TooLong(len),
        (true, false) => Line::Text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn victim(dir: &Path) -> PathBuf {
        let v = dir.join("victim");
        std::fs::write(&v, "precious").expect("write");
        v
    }

    #[test]
    fn links_are_neither_read_nor_written_through() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let v = victim(tmp.path());
        let link = tmp.path().join("link");
        symlink(&v, &link).expect("symlink");
        for r in [
            open_read(&link).map(drop),
            open_append(&link).map(drop),
            read_capped(&link, 100).map(drop),
        ] {
            let e = r.expect_err("refused");
            assert!(e.to_string().contains("symbolic link"), "{e}");
        }
        // a dangling link is not created through either
        let dangling = tmp.path().join("dangling");
        symlink(tmp.path().join("nowhere"), &dangling).expect("symlink");
        assert!(open_append(&dangling).is_err());
        assert!(!tmp.path().join("nowhere").exists());
        assert_eq!(std::fs::read_to_string(&v).expect("read"), "precious");
        assert_eq!(
            links_among(tmp.path(), |n| n != "victim").expect("list"),
            vec!["dangling".to_string(), "link".to_string()]
        );
    }

    #[test]
    fn a_fifo_or_a_device_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let fifo = tmp.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        for r in [
            open_read(&fifo).map(drop),
            open_append(&fifo).map(drop),
            open_read(Path::new("/dev/zero")).map(drop),
        ] {
            let e = r.expect_err("refused");
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn atomic_writes_use_a_fresh_temporary_file_and_clean_up() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let v = victim(tmp.path());
        let target = tmp.path().join("out.json");
        // the temporary name of the old scheme, planted
        symlink(&v, tmp.path().join(".out.json.tmp")).expect("symlink");
        write_bytes(&target, b"new").expect("write");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "new");
        assert_eq!(std::fs::read_to_string(&v).expect("read"), "precious");
        // a failing writer: the old file stays, no temporary file is left
        let failed = write_atomic(&target, |w| {
            w.write_all(b"half")?;
            Err(std::io::Error::from(ErrorKind::StorageFull))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "new");
        let names: Vec<String> = std::fs::read_dir(tmp.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names
                .iter()
                .all(|n| n == ".out.json.tmp" || !n.ends_with(".tmp")),
            "{names:?}"
        );
    }

    #[test]
    fn capped_reads() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let f = tmp.path().join("f");
        std::fs::write(&f, "0123456789").expect("write");
        assert_eq!(read_capped(&f, 10).expect("read"), b"0123456789");
        assert!(read_capped(&f, 9).is_err());
        assert_eq!(read_prefix(&f, 4).expect("read"), (b"0123".to_vec(), false));
    }

    #[test]
    fn lines_are_bounded() {
        let text = format!("short\n{}\nlast", "x".repeat(100));
        let mut r = std::io::BufReader::with_capacity(16, text.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 10).expect("read"), Line::Text);
        assert_eq!(buf, b"short");
        assert_eq!(
            read_line(&mut r, &mut buf, 10).expect("read"),
            Line::TooLong(100)
        );
        assert!(buf.is_empty());
        assert_eq!(read_line(&mut r, &mut buf, 10).expect("read"), Line::Text);
        assert_eq!(buf, b"last");
        assert_eq!(read_line(&mut r, &mut buf, 10).expect("read"), Line::Eof);
    }
}
