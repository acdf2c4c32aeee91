//! A time-shared rank replayed turn by turn (beyond MHETA and Figueira
//! and Berman).
//!
//! Figueira and Berman price a rank that shares its core by a smooth
//! share: its work takes `sd` times as long (eq. 1), which the replay
//! applies to each piece of it. That holds when an iteration spans many
//! of the scheduler's turns. The core, though, is taken from the rank in
//! whole turns whatever it is doing. A rank whose MPI waits poll (Open
//! MPI's default: a blocking call spins) holds its turn while it waits
//! and uses it up; one whose waits sleep leaves the run queue, and its
//! turns resume where they were when it wakes ([`after_wait`]). Where
//! an iteration is shorter than a turn, the ranks it exchanges with run
//! only while it holds the core: each of its turns carries as many
//! iterations as fit at their dedicated pace, and while it is away the
//! others block on its messages. The iteration then takes its dedicated
//! time over the rank's share, `T_ded(d) / a`, so rows taken from the
//! time-shared rank buy nothing: the slowest rank's dedicated time
//! decides. The smooth share instead says `max(w_0 / a, w_1)`, and plans
//! to give the time-shared rank fewer rows, which loses to Block
//! (docs/design/load.md, "A time-shared rank's turns").
//!
//! The replay keeps both regimes by giving such a rank its turns: it
//! runs at its dedicated speed in windows of `on` seconds on average (a
//! turn of the scheduler's round, [`crate::slowdown::NodeLoad::turn_s`]),
//! each followed by `off = on · (sd − 1)` away on average, so that its
//! share is `1/sd` ([`Turn`]; each round's lengths vary, [`SPREAD`]).
//! Its computation and overheads advance through its windows only
//! ([`Cursor::busy`]), and what it waits for is taken at its next window
//! ([`Cursor::ready`]). The replay runs as many iterations back to back as
//! span [`SPAN`] rounds (fewer in a large job) and prices their mean
//! ([`laps`]).

/// How many of the longest mean round (`on + off`) the replayed
/// iterations span: the mean over them is then within about `1/SPAN` of
/// the mean over a long run, whatever turn the last one ends in.
pub(super) const SPAN: f64 = 50.0;

/// At most this many iterations are replayed back to back.
pub(super) const MAX_LAPS: usize = 2000;

/// A turn's length varies from round to round, uniformly between these
/// fractions of its mean: a coefficient of variation of 0.46, near the
/// 0.5 measured beside one spinner (docs/design/load.md, "A time-shared
/// rank's turns": E[q²]/E[q] 4.0 ms over a mean of 3.2 ms). Turns of one
/// length would lock an iteration to whole rounds, which a real
/// scheduler's do not. The fractions follow Weyl sequences (the golden
/// ratio's for windows, √2's for the time away), whose means over `n`
/// rounds are within about `1/n` of the mean where random draws would be
/// within `1/√n`: the [`SPAN`] rounds replayed give the share to about 1%.
const SPREAD: (f64, f64) = (0.2, 1.8);

/// The Weyl sequences' steps ([`SPREAD`]).
const STEP: (f64, f64) = (0.618_033_988_749_894_9, 0.414_213_562_373_095_1);

/// A rank's mean turns on its shared core: it runs `on` seconds, then is
/// away `off`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Turn {
    pub on: f64,
    pub off: f64,
}

impl Turn {
    /// The turns of a rank whose turn lasts `turn_s` and whose CPU
    /// slowdown is `sd` (its share `1/sd`); None where it does not share
    /// its core (`sd` at most 1) or no turn is given.
    pub(crate) fn of(turn_s: f64, sd: f64) -> Option<Turn> {
        (turn_s > 0.0 && turn_s.is_finite() && sd > 1.0 && sd.is_finite()).then_some(Turn {
            on: turn_s,
            off: turn_s * (sd - 1.0),
        })
    }

    pub(super) fn round(&self) -> f64 {
        self.on + self.off
    }
}

/// Where one rank is in its rounds during a replay: round `k` begins at
/// `start` and holds a window of `on` then `off` away, each its mean
/// times a factor in [`SPREAD`] (round `k`'s of sequences that start
/// where `seed` says). A rank's clock
/// only moves forward, so the replay asks about ever later times and the
/// cursor only moves forward too.
#[derive(Clone, Debug)]
pub(crate) struct Cursor {
    mean: Turn,
    seed: u64,
    k: u64,
    start: f64,
    on: f64,
    off: f64,
}

impl Cursor {
    /// The rounds of a rank with mean turns `mean` from time 0, their
    /// lengths' sequences started by `seed` (the replay gives each rank
    /// its own).
    pub(crate) fn new(mean: Turn, seed: u64) -> Cursor {
        let mut c = Cursor {
            mean,
            seed,
            k: 0,
            start: 0.0,
            on: 0.0,
            off: 0.0,
        };
        c.lengths();
        c
    }

    /// Round `k`'s window and time away.
    fn lengths(&mut self) {
        let k = self.k as f64;
        let f =
            |start: f64, step: f64| SPREAD.0 + (SPREAD.1 - SPREAD.0) * (start + k * step).fract();
        self.on = self.mean.on * f(unit(self.seed), STEP.0);
        self.off = self.mean.off * f(unit(self.seed ^ 1), STEP.1);
    }

    /// The rank slept `s` seconds from a time inside its window: its
    /// rounds resume where they were, `s` later.
    pub(crate) fn slept(&mut self, s: f64) {
        self.start += s.max(0.0);
    }

    fn next_round(&mut self) {
        self.start += self.on + self.off;
        self.k += 1;
        self.lengths();
    }

    /// The first time at or after `t` that the rank holds its core.
    pub(crate) fn ready(&mut self, t: f64) -> f64 {
        loop {
            let end = self.start + self.on + self.off;
            if t < self.start + self.on {
                return t.max(self.start);
            }
            // A time a rounding error short of the round's end is at the
            // next round's start.
            if t < end && end - t > 1e-9 * (self.on + self.off) {
                self.next_round();
                return self.start;
            }
            self.next_round();
        }
    }

    /// When `w` seconds of the rank's own CPU begun at `t` end: `t + w`
    /// where they fit in its window, else across as many as they need.
    pub(crate) fn busy(&mut self, t: f64, w: f64) -> f64 {
        if w <= 0.0 {
            return t;
        }
        let mut t = self.ready(t);
        let mut w = w;
        loop {
            let left = self.start + self.on - t;
            if w <= left {
                return t + w;
            }
            w -= left;
            self.next_round();
            t = self.start;
        }
    }
}

/// `t` seconds of a rank's own CPU from its clock: `t` later, or across
/// its turns where it is replayed by them; the wall time they took.
pub(super) fn spend(turn: Option<&mut Option<Cursor>>, clock: &mut f64, t: f64) -> f64 {
    match turn.and_then(Option::as_mut) {
        None => {
            *clock += t;
            t
        }
        Some(turn) => {
            let from = *clock;
            *clock = turn.busy(from, t);
            *clock - from
        }
    }
}

/// A rank replayed by its turns goes on only in its next turn: what it
/// waited for is taken then. The time that adds to its clock.
pub(super) fn in_turn(turn: Option<&mut Option<Cursor>>, clock: &mut f64) -> f64 {
    let Some(turn) = turn.and_then(Option::as_mut) else {
        return 0.0;
    };
    let at = turn.ready(*clock);
    let waited = at - *clock;
    *clock = at;
    waited
}

/// After a wait that took the rank's clock from `from` to `*clock`: a
/// rank replayed by its turns that slept through this one (`slept`: its
/// waits sleep and this one outlasted the polling before the sleeps,
/// [`super::Program::sleeps_through`]) is off the run queue meanwhile,
/// and its turns resume where they were ([`Cursor::slept`]): the
/// scheduler gives it its share of the core over the time it is
/// runnable, so a wait it sleeps costs the wait, where a polling rank's
/// wait uses its turns up as computation does (beside one hog, rank 0's
/// run-queue delay an iteration equals its CPU time in either mode:
/// docs/design/load.md, "Rows on a time-shared rank"). Any other rank goes on in its next turn
/// ([`in_turn`]). The time that adds to its clock.
pub(super) fn after_wait(
    turn: Option<&mut Option<Cursor>>,
    clock: &mut f64,
    from: f64,
    slept: bool,
) -> f64 {
    match turn {
        Some(Some(c)) if slept => {
            // It went to sleep inside its window (its last piece of CPU
            // ended there) or, the wait begun as it was taken off the
            // core, at its next one.
            let at = c.ready(from);
            c.slept(*clock - at);
            let on = c.ready(*clock);
            let waited = on - *clock;
            *clock = on;
            waited
        }
        turn => in_turn(turn, clock),
    }
}

/// A number in [0, 1) from `x` (splitmix64's finalizer).
fn unit(x: u64) -> f64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// How many iterations to replay back to back for turns of at most
/// `round` seconds a round on average, when an iteration takes about
/// `iter_s` and its ranks' programs hold `steps` steps: enough to span
/// [`SPAN`] rounds, at least 2, at most [`MAX_LAPS`] and at most
/// [`MAX_STEPS`] steps in all (a large job replays fewer rounds).
pub(super) fn laps(round: f64, iter_s: f64, steps: usize) -> usize {
    let most = (MAX_STEPS / steps.max(1)).clamp(2, MAX_LAPS);
    if iter_s.is_nan() || iter_s <= 0.0 {
        return most;
    }
    ((SPAN * round / iter_s).ceil() as usize + 1).clamp(2, most)
}

/// At most this many steps in one replay by turns.
const MAX_STEPS: usize = 400_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rank_runs_in_its_windows_only() {
        // 4 ms on, 4 ms away on average: a share of one half.
        let t = Turn::of(4e-3, 2.0).unwrap();
        assert_eq!(t.off, 4e-3);
        let mut c = Cursor::new(t, 7);
        // Walk the rounds: every time `ready` gives is in a window, and
        // a piece of CPU ends after at least its own length, exactly so
        // where it fits.
        let (mut now, mut cpu, mut rounds) = (0.0, 0.0, 0u64);
        for n in 0..20_000 {
            let w = 1e-4 * (1 + n % 17) as f64;
            let r = c.ready(now);
            assert!(r >= now && r >= c.start && r < c.start + c.on + 1e-15);
            let (k0, left) = (c.k, c.start + c.on - r);
            let end = c.busy(r, w);
            if w <= left {
                assert_eq!(end, r + w);
            } else {
                assert!(c.k > k0 && end > r + w);
            }
            cpu += w;
            now = end;
            rounds = c.k;
        }
        // Over thousands of rounds the share is one half.
        assert!(rounds > 1000);
        assert!((cpu / now - 0.5).abs() < 0.02, "{}", cpu / now);
        // Begun a rounding error short of a round's end: that round's
        // next window, not one a round later.
        let mut c = Cursor::new(t, 1);
        let end = c.start + c.on + c.off;
        let r = c.ready(end - 1e-18);
        assert_eq!(c.k, 1);
        assert_eq!(r, c.start);
        assert!((r - end).abs() < 1e-15);
    }

    #[test]
    fn a_rank_that_slept_resumes_its_turn() {
        let t = Turn::of(4e-3, 2.0).unwrap();
        let first = Cursor::new(t, 7);
        // 1 ms of CPU from 0 ends inside the first window.
        let mut c = Some(first.clone());
        let mut clock = c.as_mut().unwrap().busy(0.0, 1e-3);
        let left = first.start + first.on - clock;
        assert!(left > 0.0);
        // It sleeps through a 20 ms wait: on at once, with the rest of
        // its window ahead, every later round 20 ms later.
        let from = clock;
        clock += 20e-3;
        assert_eq!(after_wait(Some(&mut c), &mut clock, from, true), 0.0);
        let cur = c.as_ref().unwrap();
        assert!((cur.start + cur.on - clock - left).abs() < 1e-12);
        assert_eq!(cur.k, first.k);
        // Polling through the same wait, or a wait shorter than the spin
        // before the sleeps (not slept through): it goes on in its next
        // turn, as `in_turn`.
        let mut c = Some(first.clone());
        let mut clock = c.as_mut().unwrap().busy(0.0, 1e-3) + 20e-3;
        let mut expect = c.as_ref().unwrap().clone();
        let (on, before) = (expect.ready(clock), clock);
        let added = after_wait(Some(&mut c), &mut clock, before - 20e-3, false);
        assert_eq!((clock, added), (on, on - before));
        // A rank without turns: nothing added.
        let mut clock = 5.0;
        assert_eq!(after_wait(Some(&mut None), &mut clock, 4.0, true), 0.0);
        assert_eq!(clock, 5.0);
    }

    #[test]
    fn no_turns_without_a_share_below_one() {
        assert_eq!(Turn::of(4e-3, 1.0), None);
        assert_eq!(Turn::of(0.0, 2.0), None);
        assert_eq!(Turn::of(4e-3, f64::NAN), None);
    }

    #[test]
    fn laps_span_the_rounds() {
        assert_eq!(laps(8e-3, 1e-3, 20), 401);
        assert_eq!(laps(8e-3, 1.0, 20), 2);
        assert_eq!(laps(8e-3, 1e-9, 20), MAX_LAPS);
        // A large job: no more than MAX_STEPS steps.
        assert_eq!(laps(8e-3, 1e-3, 10_000), 40);
        assert_eq!(laps(8e-3, 1e-3, 1_000_000), 2);
    }
}
