//! What the subcommands share to start programs: where mheta's own
//! binaries and the interposer live, which launchers are Open MPI's, and
//! an exit status as a code.

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The directory of the running `mheta` binary (its sibling binaries).
pub fn exe_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot locate the mheta executable")?;
    Ok(exe.parent().map(Path::to_path_buf).unwrap_or_default())
}

/// The interposer library: $MHETA_INTERPOSE_LIB, or next to this binary.
pub fn interposer() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("MHETA_INTERPOSE_LIB") {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("MHETA_INTERPOSE_LIB={}: no such file", p.display());
        }
        return Ok(p);
    }
    let dir = exe_dir()?;
    for cand in [
        dir.join("libmheta_interpose.so"),
        dir.join("../lib/libmheta_interpose.so"),
    ] {
        if cand.is_file() {
            return Ok(cand.canonicalize().unwrap_or(cand));
        }
    }
    bail!(
        "libmheta_interpose.so not found next to {}; build it with `cargo build --release -p mheta-interpose` or set MHETA_INTERPOSE_LIB",
        dir.display()
    )
}

/// Is `prog` Open MPI's launcher (it takes `-x`, `--oversubscribe`)?
pub fn is_open_mpi_launcher(prog: &OsString) -> bool {
    let name = Path::new(prog)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    matches!(
        name,
        "mpirun" | "mpiexec" | "orterun" | "mpirun.openmpi" | "mpiexec.openmpi"
    )
}

/// Does mheta run as root (Open MPI then needs `--allow-run-as-root`)?
pub fn is_root() -> bool {
    std::env::var("USER").map(|u| u == "root").unwrap_or(false)
        || std::env::var("HOME").map(|h| h == "/root").unwrap_or(false)
}

/// A child's exit status as mheta's exit code (1 when a signal ended it).
pub fn status_code(st: std::process::ExitStatus) -> i32 {
    st.code().unwrap_or(1)
}
