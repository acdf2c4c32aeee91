//! How many repetitions a measurement takes when it is bounded by time as
//! well as by count. Pure rules, MPI-free: the rank of a pair that times
//! decides with them and sends the counts to its peer, so both agree.
//!
//! A loop keeps its nominal count when that fits its time budget (shared
//! memory: every budget here is far above what the nominal counts take),
//! and otherwise takes as many repetitions as fit, never fewer than its
//! minimum (a 200 Mbit/s link moves 4 MiB in 170 ms: 64 such messages a
//! window, as osu_bw sends them, take 11 s).

/// Repetitions of a loop whose nominal count is `nominal`, each taking
/// about `per_rep_s`, within `budget_s`: the nominal count when it fits,
/// else as many as fit, but at least `min` (and never above `nominal`).
/// A non-positive or non-finite `per_rep_s` (nothing measured) keeps the
/// nominal count.
pub fn budgeted_count(nominal: usize, min: usize, budget_s: f64, per_rep_s: f64) -> usize {
    let min = min.min(nominal);
    if !(per_rep_s.is_finite() && per_rep_s > 0.0) {
        return nominal;
    }
    let fit = (budget_s.max(0.0) / per_rep_s).floor();
    if fit >= nominal as f64 {
        nominal
    } else {
        (fit as usize).max(min)
    }
}

/// Weight of a message size in the sweep's time budget: 1 up to 4 MiB
/// (the default sweep's largest), proportional to the size above it
/// (`--max-size` sizes move more per message and need the time).
pub fn size_weight(size: usize) -> f64 {
    (size as f64 / (4 << 20) as f64).max(1.0)
}

/// The share of the sweep's remaining budget for the next size: the
/// remaining seconds (none when overspent) times its weight over the
/// weights of every size still to measure (this one first).
pub fn share(remaining_s: f64, sizes_left: &[usize]) -> f64 {
    let total: f64 = sizes_left.iter().map(|&s| size_weight(s)).sum();
    match sizes_left.first() {
        Some(&s) if total > 0.0 => remaining_s.max(0.0) * size_weight(s) / total,
        _ => 0.0,
    }
}

/// One size's streaming bandwidth measurement: `repeats` streams, each of
/// `skip` untimed and `iters` timed windows of `window` non-blocking sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamCounts {
    pub window: usize,
    pub iters: usize,
    pub skip: usize,
    pub repeats: usize,
}

impl StreamCounts {
    /// Windows sent in all (timed and skipped).
    pub fn windows(&self) -> usize {
        self.repeats * (self.iters + self.skip)
    }
}

/// Sends a window of a stream may hold: `window` when `window` messages of
/// about `per_msg_s` each take at most `window_budget_s`, else as many as
/// fit, at least one.
/// It never falls below what spans [`HANDSHAKE_SPAN`] of the pair's
/// small round trips `rtt_s` (up to `window`): in each window the link
/// idles for about two round trips (a large message's rendezvous, and the
/// window's closing acknowledgement), and on a far link a window cut to
/// fit the budget would measure the latency as much as the rate
/// (docs/design/microbench.md).
pub fn stream_window(window: usize, per_msg_s: f64, window_budget_s: f64, rtt_s: f64) -> usize {
    let fit = budgeted_count(window, 1, window_budget_s, per_msg_s);
    if !(per_msg_s.is_finite() && per_msg_s > 0.0 && rtt_s.is_finite() && rtt_s > 0.0) {
        return fit;
    }
    let spans = (HANDSHAKE_SPAN * rtt_s / per_msg_s).ceil() as usize;
    fit.max(spans.min(window))
}

/// The fewest small round trips a stream's window spans: its two idle
/// round trips then cost at most 1/32 of it (3%).
pub const HANDSHAKE_SPAN: f64 = 64.0;

/// The streams of one size within `budget_s` when a window takes about
/// `window_s`: the nominal counts when they fit; else no skipped window
/// (a window sent before these streams warmed the pair) and as many timed
/// ones per stream as fit (at least one), then fewer streams (at least
/// one).
pub fn stream_counts(nominal: StreamCounts, window_s: f64, budget_s: f64) -> StreamCounts {
    if !(window_s.is_finite() && window_s > 0.0) || nominal.windows() as f64 * window_s <= budget_s
    {
        return nominal;
    }
    let mut c = nominal;
    c.skip = 0;
    let per_stream = budget_s.max(0.0) / (c.repeats as f64 * window_s);
    c.iters = budgeted_count(c.iters, 1, per_stream, 1.0);
    if c.windows() as f64 * window_s > budget_s {
        c.repeats = budgeted_count(c.repeats, 1, budget_s, (c.iters + c.skip) as f64 * window_s);
    }
    c
}

/// Per-round counts of the interleaved small figures (8-byte ping-pongs,
/// o_s and o_r samples) within `budget_s` for `rounds` rounds, when a
/// small round trip takes `rtt_s` and each o_r sample first waits
/// `delay_s`: the nominal counts when they fit, else both scaled down
/// alike, to no fewer than `min` each (the modes need 20 samples).
/// Each round also takes `extra` untimed ping-pongs.
pub fn small_counts(
    (pp, over, extra): (usize, usize, usize),
    rounds: usize,
    rtt_s: f64,
    delay_s: f64,
    budget_s: f64,
    min: usize,
) -> (usize, usize) {
    let cost = |pp: usize, over: usize| {
        rounds as f64 * ((pp + extra) as f64 * rtt_s + over as f64 * (2.0 * rtt_s + delay_s))
    };
    let full = cost(pp, over);
    if !(full.is_finite() && full > 0.0) || full <= budget_s {
        return (pp, over);
    }
    let f = (budget_s.max(0.0) / full).min(1.0);
    let scale = |n: usize| (((n as f64) * f).floor() as usize).clamp(min.min(n), n);
    (scale(pp), scale(over))
}

/// The eager-limit probe's hold (how long the sender tests its send) and
/// slack (how much longer than the hold the receiver stays out of MPI,
/// counted from when the sender sent the size) for a message whose
/// one-way time is `one_way_s` on a pair whose small round trip is
/// `rtt_s`: the hold covers four one-way times of the message (a send
/// into a slow link completes once the data has left, which takes its
/// transfer time), the slack eight round trips (the size is sent,
/// answered and the answer matched before the hold begins); the hold is
/// at least `hold_min` and hold plus slack at least `quiet_min` (shared
/// memory's figures).
pub fn eager_times(one_way_s: f64, rtt_s: f64, hold_min: f64, quiet_min: f64) -> (f64, f64) {
    let ok = |x: f64| if x.is_finite() && x > 0.0 { x } else { 0.0 };
    let hold = hold_min.max(4.0 * ok(one_way_s));
    let slack = (quiet_min - hold).max(8.0 * ok(rtt_s));
    (hold, slack)
}

/// The slack of the next take of a probe that could not be kept, when
/// the last took `overrun_s` more than its hold from the sending of the
/// size to its end (a rank that waits for a message may lose its core
/// for milliseconds when the cores are shared): twice the larger of the
/// last slack and that overrun.
pub fn next_slack(slack_s: f64, overrun_s: f64) -> f64 {
    2.0 * slack_s.max(overrun_s)
}

/// `y` at `x` on the broken line through `points` (sorted by `x`): linear
/// between points, constant below the first, proportional to `x` past the
/// last (a transfer time grows with the bytes). `None` without points.
pub fn interpolate(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let first = points.first()?;
    let last = points.last()?;
    if x <= first.0 {
        return Some(first.1);
    }
    if x >= last.0 {
        return Some(if last.0 > 0.0 {
            last.1 * x / last.0
        } else {
            last.1
        });
    }
    let k = points.partition_point(|p| p.0 <= x);
    let (a, b) = (points[k - 1], points[k]);
    Some(a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_that_fits_is_kept_and_one_that_does_not_is_cut_to_its_minimum() {
        // Shared memory: 2000 round trips of 0.5 us fit in 0.3 s.
        assert_eq!(budgeted_count(2000, 5, 0.3, 0.5e-6), 2000);
        // 200 Mbit/s: a 4 MiB round trip takes 0.34 s; 0.3 s holds none,
        // the minimum is kept.
        assert_eq!(budgeted_count(50, 5, 0.3, 0.34), 5);
        // In between, as many as fit.
        assert_eq!(budgeted_count(200, 5, 1.0, 0.01), 100);
        // An overspent budget, or no estimate.
        assert_eq!(budgeted_count(50, 3, -2.0, 0.1), 3);
        assert_eq!(budgeted_count(50, 3, 1.0, 0.0), 50);
        assert_eq!(budgeted_count(50, 3, 1.0, f64::NAN), 50);
        // A minimum above the nominal count is the nominal count.
        assert_eq!(budgeted_count(2, 5, 0.0, 1.0), 2);
    }

    #[test]
    fn the_sweep_budget_goes_to_the_sizes_still_to_measure() {
        let sizes = [1usize, 8, 1 << 20, 4 << 20];
        assert!((share(8.0, &sizes) - 2.0).abs() < 1e-12);
        // Time a small size did not use passes to the next ones.
        assert!((share(7.5, &sizes[1..]) - 2.5).abs() < 1e-12);
        // Sizes past 4 MiB weigh in proportion.
        let big = [4usize << 20, 32 << 20];
        assert!((share(9.0, &big) - 1.0).abs() < 1e-12);
        assert_eq!(share(-1.0, &sizes), 0.0);
        assert_eq!(share(1.0, &[]), 0.0);
    }

    #[test]
    fn streams_shrink_windows_then_streams_to_fit() {
        let nominal = StreamCounts {
            window: 64,
            iters: 20,
            skip: 1,
            repeats: 5,
        };
        // Shared memory at 4 MiB: 22 ms a window, 105 windows fit in 3 s.
        assert_eq!(stream_counts(nominal, 0.022, 3.0), nominal);
        // 1 Gbit/s at 64 KiB: 34 ms a window, 1 s holds 29 windows: five
        // streams of five timed windows, none skipped.
        let c = stream_counts(nominal, 0.034, 1.0);
        assert_eq!((c.window, c.iters, c.skip, c.repeats), (64, 5, 0, 5));
        // A budget for fewer windows than streams: fewer streams.
        let c = stream_counts(nominal, 0.1, 0.35);
        assert_eq!((c.iters, c.skip, c.repeats), (1, 0, 3));
        assert!(c.windows() as f64 * 0.034 <= 1.0);
        // A window as long as the budget: one stream of one window.
        let c = stream_counts(nominal, 0.5, 0.5);
        assert_eq!((c.iters, c.skip, c.repeats), (1, 0, 1));
        // Nothing fits: still one timed window.
        let c = stream_counts(nominal, 2.0, 0.1);
        assert_eq!((c.iters, c.repeats), (1, 1));
        // Small messages: fewer timed windows in each of the streams.
        let small = StreamCounts {
            window: 64,
            iters: 100,
            skip: 11,
            repeats: 5,
        };
        let c = stream_counts(small, 0.01, 2.775);
        assert_eq!((c.iters, c.skip, c.repeats), (55, 0, 5));
        // 1 MiB at 200 Mbit/s: 42 ms a message, 75 ms a window: one.
        assert_eq!(stream_window(64, 0.042, 0.075, 50e-6), 1);
        assert_eq!(stream_window(64, 0.42e-6, 0.075, 50e-6), 64);
        // A far pair (2.2 ms round trip): the window spans 64 of them.
        assert_eq!(stream_window(64, 0.044, 0.075, 2.2e-3), 4);
        assert_eq!(stream_window(64, 0.175, 0.075, 2.2e-3), 1);
        // Never above the nominal window.
        assert_eq!(stream_window(4, 1e-6, 1e-9, 1e-3), 4);
    }

    #[test]
    fn small_figures_scale_down_alike_to_their_minimum() {
        // Shared memory: 0.5 us round trips, 20 us delays.
        assert_eq!(
            small_counts((200, 100, 10), 15, 0.5e-6, 20e-6, 4.0, 20),
            (200, 100)
        );
        // 1 ms round trips, 4 ms delays, 1 s for 5 rounds.
        let (pp, over) = small_counts((100, 40, 10), 5, 1e-3, 4e-3, 1.0, 20);
        assert_eq!((pp, over), (57, 22));
        assert!(5.0 * ((pp + 10) as f64 * 1e-3 + over as f64 * 6e-3) <= 1.0);
        assert_eq!(small_counts((100, 40, 10), 5, 1.0, 4.0, 1.0, 20), (20, 20));
    }

    #[test]
    fn the_eager_probe_waits_longer_on_a_slow_link() {
        // Shared memory: the fixed 250 us hold and 1 ms quiet.
        let (h, q) = eager_times(2e-6, 1e-6, 250e-6, 1e-3);
        assert_eq!(h, 250e-6);
        assert!((h + q - 1e-3).abs() < 1e-15);
        // 64 KiB at 200 Mbit/s (2.7 ms) on a 0.2 ms round trip.
        let (h, q) = eager_times(2.7e-3, 0.2e-3, 250e-6, 1e-3);
        assert!((h - 10.8e-3).abs() < 1e-12 && (q - 1.6e-3).abs() < 1e-12);
        // Round trips longer than the quiet lengthen it.
        let (h, q) = eager_times(1e-6, 5e-3, 250e-6, 1e-3);
        assert!(h + q > 40e-3);
        // A take that ran 6 ms past its hold: the next slack covers twice
        // that; one that ran short of its slack doubles the slack.
        assert_eq!(next_slack(0.1e-3, 6e-3), 12e-3);
        assert_eq!(next_slack(1e-3, 0.5e-3), 2e-3);
    }

    #[test]
    fn interpolation_between_and_past_the_sizes() {
        let pts = [(8.0, 1.0), (1024.0, 3.0), (4096.0, 9.0)];
        assert_eq!(interpolate(&pts, 1.0), Some(1.0));
        assert_eq!(interpolate(&pts, 1024.0), Some(3.0));
        assert_eq!(interpolate(&pts, 2560.0), Some(6.0));
        assert_eq!(interpolate(&pts, 8192.0), Some(18.0));
        assert_eq!(interpolate(&[], 1.0), None);
    }
}
