//! Which core of this machine each emulated rank, and each host's latency
//! relay, runs on when the ranks outnumber the cores.
//!
//! The CPU emulation pins a crowded machine's ranks to cores by
//! [`core_slots`]. A relay ([`crate::relay`]) is its host's link, and on a
//! real cluster a host's network work runs on that host's own cores; so
//! `mheta hosts up` pins a crowded lab's relay to the core of its host's
//! first rank ([`relay_slot`]). Left to the scheduler, a relay landed on
//! either core from one `hosts up` to the next and the same run's times
//! changed with it (figures: docs/design/hosts.md, "Relay pinning").

use crate::Lab;

/// The slot (0..cores) of each of a machine's ranks, so that the powers on
/// every slot sum about alike: largest power first, each to the slot with
/// the least power so far (ties: the lower rank, the lower slot). Under
/// pacing a busy rank of power p takes base × p of its core, so this
/// keeps every core below one core of demand where an order by rank
/// would not (DC at 4 ranks on 2 cores, powers 1, 1, 0.5, 0.6: slots by
/// rank carry 1 + 1 and 0.5 + 0.6, at base 0.5 a full core and 55%;
/// balanced, 1 + 0.6 and 1 + 0.5, 80% and 75%).
pub fn core_slots(powers: &[f64], cores: usize) -> Vec<usize> {
    let cores = cores.max(1);
    let mut order: Vec<usize> = (0..powers.len()).collect();
    order.sort_by(|&a, &b| powers[b].total_cmp(&powers[a]).then(a.cmp(&b)));
    let mut load = vec![0.0f64; cores];
    let mut slot = vec![0usize; powers.len()];
    for r in order {
        let c = (0..cores)
            .min_by(|&x, &y| load[x].total_cmp(&load[y]).then(x.cmp(&y)))
            .unwrap_or(0);
        load[c] += powers[r];
        slot[r] = c;
    }
    slot
}

/// The slot of host `host`'s relay among `cores` cores: its first rank's
/// [`core_slots`] slot over all the lab's ranks (each of its host's
/// `cpu_power`); None when the ranks fit the cores (nothing is pinned) or
/// the host carries no rank.
pub fn relay_slot(lab: &Lab, host: usize, cores: usize) -> Option<usize> {
    let hosts = lab.rank_hosts();
    if hosts.len() <= cores {
        return None;
    }
    let powers: Vec<f64> = hosts.iter().map(|&h| lab.hosts[h].cpu_power).collect();
    let first = hosts.iter().position(|&h| h == host)?;
    Some(core_slots(&powers, cores)[first])
}

/// The CPUs this process may run on, in order, when that is every
/// online CPU; None when something (mpirun's binding, a cpuset) already
/// chose fewer: then nothing here pins.
pub fn free_cpus() -> Option<Vec<usize>> {
    let allowed = mheta_base::os::allowed_cores();
    // SAFETY: sysconf reads a system constant.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    (!allowed.is_empty() && allowed.len() >= online).then_some(allowed)
}

/// The CPU for host `host`'s relay: its [`relay_slot`] among the
/// [`free_cpus`]; None where nothing is to be pinned.
pub fn relay_cpu(lab: &Lab, host: usize) -> Option<usize> {
    let cpus = free_cpus()?;
    relay_slot(lab, host, cpus.len()).map(|s| cpus[s])
}

#[cfg(test)]
mod tests {
    use super::{core_slots, relay_slot};

    /// Each core's summed power, from the slots.
    fn loads(powers: &[f64], cores: usize) -> Vec<f64> {
        let mut l = vec![0.0; cores];
        for (r, c) in core_slots(powers, cores).into_iter().enumerate() {
            l[c] += powers[r];
        }
        l
    }

    #[test]
    fn slots_balance_the_powers_on_each_core() {
        // DC at 4 ranks: by rank order 2.0 and 1.1; balanced 1.6 and 1.5.
        assert_eq!(core_slots(&[1.0, 1.0, 0.5, 0.6], 2), vec![0, 1, 1, 0]);
        assert_eq!(loads(&[1.0, 1.0, 0.5, 0.6], 2), vec![1.6, 1.5]);
        // Equal powers alternate; one core takes everything.
        assert_eq!(core_slots(&[1.0; 4], 2), vec![0, 1, 0, 1]);
        assert_eq!(core_slots(&[1.0, 0.5, 0.2], 1), vec![0, 0, 0]);
        // DC at 8 ranks: 0.8 x4, 0.4, 0.5, 1.0, 1.0 over 2 cores: 2.75 each.
        let l = loads(&[0.8, 0.8, 0.8, 0.8, 0.4, 0.5, 1.0, 1.0], 2);
        assert!((l[0] - l[1]).abs() < 0.21, "{l:?}");
    }

    #[test]
    fn a_relay_takes_its_hosts_first_rank_core_when_crowded() {
        let hosts = ["a", "b", "c", "d"].map(|n| crate::spec::plain_host(n, 1));
        let lab = crate::Lab::new(None, hosts.to_vec(), "t.toml", "t").unwrap();
        // Ranks alternate 0, 1, 0, 1: d's rank 3 is on core 1.
        assert_eq!(relay_slot(&lab, 3, 2), Some(1));
        assert_eq!(relay_slot(&lab, 2, 2), Some(0));
        // Four ranks on four cores: nothing pinned.
        assert_eq!(relay_slot(&lab, 3, 4), None);
    }
}
