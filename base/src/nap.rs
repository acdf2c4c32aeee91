//! How a move waits for its messages ([`wait_napping`]): it polls, and
//! after [`SPIN`] of polling that completes nothing it sleeps [`NAP`]
//! between polls. The runtime's moves wait so (`mheta_runtime::
//! redistribute`), and the microbench times a pair's move-sized messages
//! the same way (`PairCost::moves`), so that the model
//! prices a move at the rate a move gets: where a link's work needs the
//! core a polling rank would hold (TCP's receive path, a relay that adds
//! latency), a napping receiver gets more of the link.

use std::time::{Duration, Instant};

/// How long a wait polls before it starts to sleep.
pub const SPIN: Duration = Duration::from_micros(200);
/// Each sleep, short beside a move's piece.
pub const NAP: Duration = Duration::from_micros(50);

/// Poll `progress` until it says everything is done; `progress` returns
/// (everything done, something completed this poll). Between polls it
/// runs `idle` (a piece of other work; false once there is none); after
/// [`SPIN`], a poll that completed nothing and found no idle work sleeps
/// [`NAP`] when `naps`.
pub fn wait_napping(
    mut progress: impl FnMut() -> (bool, bool),
    idle: &mut dyn FnMut() -> bool,
    naps: bool,
) {
    let t = Instant::now();
    loop {
        let (done, moved) = progress();
        if done {
            return;
        }
        if !moved && !idle() && naps && t.elapsed() > SPIN {
            std::thread::sleep(NAP);
        }
    }
}
