//! What the subcommands share to start programs: where mheta's own
//! binaries and the interposer live, which launcher a command is, and
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

/// The MPI launchers mheta passes its settings to, each in its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// Open MPI's `mpirun`/`mpiexec`/`orterun`/`prterun`: `-x NAME=VALUE`.
    OpenMpi,
    /// MPICH's Hydra (`mpiexec.hydra`, `mpiexec.mpich`; Intel MPI and
    /// MVAPICH2 use it too): `-genv NAME VALUE`.
    Hydra,
    /// Anything else (srun, a script): the environment, inherited.
    Other,
}

/// Which launcher `prog` is: by its name, and for the generic `mpirun`
/// and `mpiexec` by the file they resolve to on the PATH (Debian's
/// alternatives point them at `orterun` or `mpiexec.hydra`).
pub fn launcher_kind(prog: &OsString) -> Launcher {
    let by_name = |name: &str| match name {
        "orterun" | "prterun" | "mpirun.openmpi" | "mpiexec.openmpi" => Some(Launcher::OpenMpi),
        "mpiexec.hydra" | "mpiexec.mpich" | "mpirun.mpich" | "hydra_pmi_proxy" => {
            Some(Launcher::Hydra)
        }
        _ => None,
    };
    let name = Path::new(prog)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if let Some(k) = by_name(name) {
        return k;
    }
    if !matches!(name, "mpirun" | "mpiexec") {
        return Launcher::Other;
    }
    let resolved = which(Path::new(prog)).and_then(|p| p.canonicalize().ok());
    match resolved
        .as_deref()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .and_then(by_name)
    {
        Some(k) => k,
        // An mpirun that resolves to nothing known: Open MPI's name.
        None => Launcher::OpenMpi,
    }
}

/// `prog` as the shell would find it: itself when it has a directory,
/// else the first match on the PATH.
fn which(prog: &Path) -> Option<PathBuf> {
    if prog.components().count() > 1 {
        return Some(prog.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(prog))
        .find(|p| p.is_file())
}

/// Is `prog` Open MPI's launcher (it takes `-x`, `--oversubscribe`)?
pub fn is_open_mpi_launcher(prog: &OsString) -> bool {
    launcher_kind(prog) == Launcher::OpenMpi
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_are_told_apart_by_name() {
        let k = |s: &str| launcher_kind(&OsString::from(s));
        assert_eq!(k("mpirun.openmpi"), Launcher::OpenMpi);
        assert_eq!(k("/usr/bin/orterun"), Launcher::OpenMpi);
        assert_eq!(k("mpiexec.hydra"), Launcher::Hydra);
        assert_eq!(k("/usr/bin/mpiexec.mpich"), Launcher::Hydra);
        assert_eq!(k("srun"), Launcher::Other);
        assert_eq!(k("/no/such/dir/mpirun"), Launcher::OpenMpi);
    }
}
