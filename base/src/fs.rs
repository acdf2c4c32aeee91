//! Files written whole or not at all.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Write `bytes` to `path` atomically: into a hidden temporary file in the
/// same directory (`.NAME.PID.tmp`), synced, then renamed over `path`, so
/// that a reader sees the old file or the new one, never half of either.
/// On error the temporary file is removed and `path` is untouched; the
/// error names `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} has no file name", path.display()),
        ));
    };
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let r = (|| -> io::Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    r.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_keeps_the_old_file_on_error() {
        let dir = std::env::temp_dir().join(format!("mheta-base-fs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let p = dir.join("f.json");
        write_atomic(&p, b"one").unwrap_or_else(|e| panic!("{e}"));
        write_atomic(&p, b"two").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(std::fs::read(&p).unwrap_or_default(), b"two");
        let bad = dir.join("missing-dir").join("f.json");
        let e = write_atomic(&bad, b"x").err().map(|e| e.to_string());
        assert!(e.is_some_and(|m| m.contains("missing-dir")));
        let left: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert_eq!(left.len(), 1, "only f.json remains: {left:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
