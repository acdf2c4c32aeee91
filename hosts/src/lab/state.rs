//! A lab's state file, `/run/mheta/hosts/LAB/state.json`: what `up`
//! made, written before anything is made so that `down` finds it after a
//! crash; and the lab's other paths (its hosts' UTS files and TMPDIRs).

use super::LabError;
use crate::spec::Lab;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where labs keep their state.
pub const STATE_ROOT: &str = "/run/mheta/hosts";

/// What a lab's state file records.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct State {
    /// The format of this file.
    pub version: u32,
    pub lab: Lab,
    /// Every step of `up` finished.
    pub complete: bool,
    /// Relay processes, by host name.
    pub relays: Vec<(String, u32)>,
    /// Daemons started for the lab (Slurm, munge): name and pid.
    #[serde(default)]
    pub daemons: Vec<(String, u32)>,
}

pub(super) const STATE_VERSION: u32 = 1;

/// True when this process runs as root.
pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// The lab's state directory.
pub fn state_dir(name: &str) -> PathBuf {
    Path::new(STATE_ROOT).join(name)
}

/// Host `host`'s UTS namespace file.
pub fn uts_file(name: &str, host: &str) -> PathBuf {
    state_dir(name).join("uts").join(host)
}

/// Host `host`'s TMPDIR (Open MPI's session directories go there).
pub fn tmp_dir(name: &str, host: &str) -> PathBuf {
    std::env::temp_dir()
        .join(format!("mheta-hosts-{name}"))
        .join(host)
}

/// Read a lab's state file (None: the lab is not up).
pub fn read_state(name: &str) -> Result<Option<State>, LabError> {
    let path = state_dir(name).join("state.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(LabError::State {
                path: path.display().to_string(),
                detail: e.to_string(),
            });
        }
    };
    let st: State = serde_json::from_str(&text).map_err(|e| LabError::State {
        path: path.display().to_string(),
        detail: format!("{e}; remove the lab by hand (ip netns, ip link) and delete this file"),
    })?;
    if st.version != STATE_VERSION {
        return Err(LabError::State {
            path: path.display().to_string(),
            detail: format!(
                "version {} but this mheta writes {STATE_VERSION}",
                st.version
            ),
        });
    }
    Ok(Some(st))
}

/// Write the state file whole or not at all ([`mheta_base::write_atomic`]).
pub fn write_state(st: &State) -> Result<(), LabError> {
    let dir = state_dir(&st.lab.name);
    let err = |e: std::io::Error| LabError::State {
        path: dir.display().to_string(),
        detail: e.to_string(),
    };
    std::fs::create_dir_all(&dir).map_err(err)?;
    let path = dir.join("state.json");
    let text = serde_json::to_string_pretty(st).map_err(|e| LabError::State {
        path: path.display().to_string(),
        detail: e.to_string(),
    })?;
    mheta_base::write_atomic(&path, text.as_bytes()).map_err(err)
}
