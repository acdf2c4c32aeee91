//! Slurm on a lab: munged, slurmctld and one slurmd per host.

use crate::lab::LabError;
use crate::spec::Lab;

/// Start munged, slurmctld and one slurmd per host of `lab` (which is
/// up); returns the daemons as (name, pid), in start order.
pub fn start(lab: &Lab) -> Result<Vec<(String, u32)>, LabError> {
    let _ = lab;
    Err(LabError::Command {
        cmd: "slurm".into(),
        detail: "not built yet".into(),
    })
}

/// The environment Slurm's clients (srun, salloc, sinfo) need for `lab`.
pub fn client_env(lab: &Lab) -> Vec<(String, String)> {
    let _ = lab;
    vec![]
}
