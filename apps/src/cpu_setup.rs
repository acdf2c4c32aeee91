//! How a program's ranks start their CPU emulation: which ranks share a
//! host and a machine, whether the mode is faithful there (else stop with
//! what to pass), and how ranks wait (`--wait`).

use crate::emulate::{Emulation, Machine};
use crate::{Resolved, agree, comm, host_hash, machine_hash};
use anyhow::{Result, anyhow};
use mpi::collective::CommunicatorCollectives;
use mpi::topology::{Communicator, SimpleCommunicator};
use std::path::Path;

/// Why the CPU emulation `mode` is not faithful for a node running ranks
/// of `powers` on `cores` cores: when the ranks outnumber the cores and
/// the powers are emulated (some is not 1), every mode but `clock` runs
/// the real work at the host's own, changing speed, with the ranks
/// contending for the cores (the model's error then grows several-fold:
/// docs/design/apps.md). None when it is.
/// `calibrate` says where the clock's figures come from for this program.
pub fn unfaithful_cpu(mode: &str, powers: &[f64], cores: usize, calibrate: &str) -> Option<String> {
    let emulated = powers.iter().any(|&p| p != 1.0);
    (mode != "clock" && emulated && powers.len() > cores).then(|| {
        format!(
            "cpu: --cpu-emulation {mode} with {} ranks on {cores} cores is not faithful (the real work runs at the host's changing speed and the ranks contend for the cores); pass --cpu-emulation clock --cpu-ns-per-unit NS|FILE, {calibrate}",
            powers.len()
        )
    })
}

/// How a program's ranks set up their CPU emulation: the mode and
/// whether the command line named it, `--wait` (sleep, poll or auto) and
/// where the clock's figures come from (for the stop message).
pub struct CpuSetup<'a> {
    pub mode: &'a str,
    pub named: bool,
    pub wait: &'a str,
    pub calibrate: &'a str,
}

/// Start this rank's CPU emulation (`powers`: every rank's CPU power) and
/// choose how ranks wait. The emulation's node is the host (name): an
/// emulated host's ranks get their base share of its cores, whatever else
/// the machine runs, so that a rank keeps its power at every rank count.
/// The machine's cores (its ranks: those with its boot id,
/// [`crate::machine_hash`], which emulated hosts share) are what the ranks
/// really share: crowding, faithfulness ([`cpu_faithful_or_stop`]) and
/// waiting go by the machine. Collective.
pub fn start_cpu_emulation(
    world: &SimpleCommunicator,
    resolved: &Resolved,
    powers: &[f64],
    how: &CpuSetup,
    dir: &Path,
) -> Result<Emulation> {
    let (np, rank) = (world.size() as usize, world.rank() as usize);
    // SAFETY: getsid(0) only reads this process's session id.
    let sid = unsafe { libc::getsid(0) } as u64;
    let pid = std::process::id() as u64;
    let mut ids = vec![0u64; 4 * np];
    world.all_gather_into(&[host_hash(), machine_hash(), sid, pid][..], &mut ids[..]);
    let (host, machine) = (|j: usize| ids[4 * j], |j: usize| ids[4 * j + 1]);
    let session = |j: usize| ids[4 * j + 2];
    let powers_where = |same: &dyn Fn(usize) -> bool| -> Vec<f64> {
        (0..np).filter(|&j| same(j)).map(|j| powers[j]).collect()
    };
    let node_powers = powers_where(&|j| host(j) == host(rank));
    let machine_powers = powers_where(&|j| machine(j) == machine(rank));
    let local = (0..rank).filter(|&j| host(j) == host(rank)).count();
    let (note, cores) =
        cpu_faithful_or_stop(world, how.mode, how.named, &machine_powers, how.calibrate)?;
    let machine_local = (0..rank).filter(|&j| machine(j) == machine(rank)).count();
    // The job's key: rank 0's pid.
    let job = ids[3];
    let sessions_differ =
        (0..np).any(|j| machine(j) == machine(rank) && session(j) != session(rank));
    let machine = Machine {
        powers: &machine_powers,
        local: machine_local,
        job: sessions_differ.then_some(job),
    };
    let mut emu = Emulation::start(resolved, &node_powers, local, machine, dir);
    let sleep = match how.wait {
        "sleep" => true,
        "poll" => false,
        _ => machine_powers.len() > cores,
    };
    comm::set_sleep(sleep);
    emu.report.wait = if sleep { "sleep" } else { "poll" }.into();
    if sleep {
        emu.fifo_waits();
    }
    if let Some(note) = note {
        if rank == 0 {
            eprintln!("warning: {note}");
        }
        emu.report.notes.push(note);
    }
    Ok(emu)
}

/// The CPU emulation `mode` on a machine whose ranks have `machine_powers`:
/// when it is not faithful there ([`unfaithful_cpu`]) and was not `named`
/// on the command line, every rank stops with the reason and what to pass
/// (`calibrate`: where the clock's figures come from). Otherwise the note
/// to report, if any, and the machine's cores (not this rank's affinity:
/// mpirun binds ranks). Collective.
pub fn cpu_faithful_or_stop(
    world: &SimpleCommunicator,
    mode: &str,
    named: bool,
    machine_powers: &[f64],
    calibrate: &str,
) -> Result<(Option<String>, usize)> {
    // SAFETY: sysconf takes a constant and returns a number.
    let cores = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    let note = unfaithful_cpu(mode, machine_powers, cores, calibrate);
    agree(
        world,
        match (&note, named) {
            (Some(n), false) => Err(anyhow!(
                "{n}; `--cpu-emulation {mode}` runs anyway, with this note in the report"
            )),
            _ => Ok(()),
        },
    )?;
    Ok((note, cores))
}

/// Where a kernel's clock figures come from (for [`unfaithful_cpu`]).
pub(crate) const CALIBRATE_KERNEL: &str = "FILE the report of a calibration run (the same sizes, --iters 2 --cpu-emulation spin, no --cluster), or run the study with `mheta experiment`, which calibrates the clock itself";

#[cfg(test)]
mod tests {
    use super::unfaithful_cpu;

    #[test]
    fn crowded_emulated_nodes_are_warned_off_all_but_the_clock() {
        let dc = [1.0, 1.0, 0.5, 0.6];
        let note = unfaithful_cpu("share", &dc, 2, "").unwrap();
        assert!(note.contains("4 ranks on 2 cores") && note.contains("--cpu-emulation clock"));
        assert!(unfaithful_cpu("paced", &dc, 2, "").is_some());
        assert!(unfaithful_cpu("clock", &dc, 2, "").is_none());
        // Enough cores, or nothing emulated: faithful.
        assert!(unfaithful_cpu("share", &dc, 4, "").is_none());
        assert!(unfaithful_cpu("share", &[1.0; 4], 2, "").is_none());
    }
}
