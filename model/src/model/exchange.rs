//! Which sends go both ways at once ([`both_ways`]): a send that its
//! sender posts before it waits for a message from its receiver, to a
//! receiver that does the same towards it, as a halo exchange's sends
//! are (and a send after a blocking receive from its receiver, or one
//! its receiver answers only after taking it, is not). The replay prices
//! every send by its sender's time away from MPI, and a send that goes
//! both ways by what the pair's exchanges back to back took besides
//! ([`super::net::Pair::exchange_transfer`]).

use super::program::Step;

/// Whether a step ends a phase of MPI calls: work inside a stage, or a
/// stage's end.
fn bounds(step: &Step) -> bool {
    matches!(step, Step::Compute { scaled: true, .. } | Step::StageEnd(_))
}

/// The recorded ranks a step waits for a message from.
fn sources(step: &Step) -> &[super::program::Peer] {
    match step {
        Step::Recv(p) | Step::Probe(p) | Step::Peek(p) => std::slice::from_ref(p),
        Step::WaitRecvs(ps) => ps,
        _ => &[],
    }
}

/// Per step of `steps`, whether it is a send posted before its sender
/// waits, in the same phase (the steps between two that [`bounds`]
/// names, the iteration taken as a cycle: its last phase runs on into
/// its first), for a message from the send's receiver.
fn early_sends(steps: &[Step]) -> Vec<bool> {
    let n = steps.len();
    let mut out = vec![false; n];
    let start = steps.iter().position(bounds).map_or(0, |b| b + 1);
    let mut waited: Vec<usize> = Vec::new();
    for off in 0..n {
        let k = (start + off) % n;
        let step = &steps[k];
        if bounds(step) {
            waited.clear();
        } else if let Step::Send(to, _) = step {
            out[k] = !waited.contains(&to.rank);
        } else {
            waited.extend(sources(step).iter().map(|p| p.rank));
        }
    }
    out
}

/// Per rank of `programs` (their steps), per step, whether it is a send
/// that goes both ways at once: posted early ([`early_sends`]) to a rank
/// that posts a send to it early in some phase of its own.
pub(crate) fn both_ways(programs: &[&[Step]]) -> Vec<Vec<bool>> {
    let early: Vec<Vec<bool>> = programs.iter().map(|s| early_sends(s)).collect();
    // Per rank, the ranks it sends to early.
    let to: Vec<Vec<usize>> = (programs.iter().zip(&early))
        .map(|(steps, e)| {
            (steps.iter().zip(e))
                .filter_map(|(s, &e)| match s {
                    Step::Send(p, _) if e => Some(p.rank),
                    _ => None,
                })
                .collect()
        })
        .collect();
    (programs.iter().zip(&early).enumerate())
        .map(|(i, (steps, e))| {
            (steps.iter().zip(e))
                .map(|(s, &e)| match s {
                    Step::Send(p, _) if e => to.get(p.rank).is_some_and(|t| t.contains(&i)),
                    _ => false,
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::program::{Peer, SendMode};
    use super::*;

    fn peer(rank: usize) -> Peer {
        Peer {
            rank,
            tag: 0,
            bytes: 16384.0,
        }
    }

    fn send(rank: usize) -> Step {
        Step::Send(peer(rank), SendMode::Standard)
    }

    #[test]
    fn a_halo_exchange_goes_both_ways_a_blocking_pair_and_a_pipeline_do_not() {
        let work = Step::Compute {
            s: 1e-3,
            scaled: true,
            level: 0,
        };
        // Rank 0 and 1 exchange (each sends, then waits); then rank 0
        // receives from 1 before it answers, as red-black SOR's ranks do,
        // and rank 1 sends first and waits for the answer; then 1 passes
        // on to 2, which sends nothing back.
        let r0 = [
            send(1),
            Step::WaitRecvs(vec![peer(1)]),
            work.clone(),
            Step::Recv(peer(1)),
            send(1),
            work.clone(),
        ];
        let r1 = [
            send(0),
            Step::WaitRecvs(vec![peer(0)]),
            work.clone(),
            send(0),
            Step::Recv(peer(0)),
            work.clone(),
            send(2),
        ];
        let r2 = [Step::Recv(peer(1)), work.clone()];
        let b = both_ways(&[&r0[..], &r1[..], &r2[..]]);
        assert_eq!(b[0], [true, false, false, false, false, false]);
        // Rank 1's second send to 0 is early, and 0 sends early to 1 in
        // the first phase: it counts, though 0 answers it later in this
        // one; its send to 2 does not (2 sends nothing).
        assert_eq!(b[1], [true, false, false, true, false, false, false]);
        assert_eq!(b[2], [false, false]);
        // The last phase runs on into the first: a send at the end and a
        // wait at the start are one phase.
        let r3 = [Step::Recv(peer(0)), work, send(0)];
        assert_eq!(early_sends(&r3), [false, false, true]);
    }
}
