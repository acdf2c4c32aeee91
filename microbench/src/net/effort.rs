//! How much a pair's measurement takes ([`Effort`]): the message sizes,
//! the nominal counts of each loop and the time budgets that bound them.

/// Window of non-blocking sends in a bandwidth measurement (as osu_bw).
pub const WINDOW: usize = 64;
/// OSU's switch between small- and large-message loop counts.
pub const LARGE: usize = 8192;

/// How much to measure: nominal counts (what a pair on shared memory
/// takes), and the time budgets that bound them on a slow pair.
pub struct Effort {
    pub sizes: Vec<usize>,
    pub reps_small: usize,
    pub reps_medium: usize,
    pub reps_large: usize,
    /// o_s and o_r samples per round.
    pub overhead_reps: usize,
    pub bw_iters_small: usize,
    pub bw_iters_large: usize,
    /// Streams per size; the bandwidth is their median.
    pub bw_repeats: usize,
    /// Interleaved rounds of the small figures (o_s, o_r, 8-byte ping-pong).
    pub rounds: usize,
    /// 8-byte ping-pongs per round.
    pub pp_per_round: usize,
    /// Seconds of the sweep (ping-pongs and streams) per size of weight 1
    /// ([`crate::budget::size_weight`]); each size gets its share of what is
    /// left ([`crate::budget::share`]), so time that fast sizes do not use goes
    /// to the slow ones.
    pub sweep_s_per_size: f64,
    /// Timed round trips a size keeps however long they take.
    pub min_reps: usize,
    /// Seconds of the cold-buffer round trips ([`super::cold_one_way_within`]).
    pub cold_s: f64,
    /// Seconds of the interleaved small figures (o_s, o_r, 8 B one-way).
    pub small_s: f64,
    /// Seconds after which the eager-limit probe gives up ([`super::eager_limit`]).
    pub eager_s: f64,
    /// Exchanges per gap and size ([`super::exchange_after_gap`]).
    pub exchange_reps: usize,
}

impl Effort {
    pub fn new(quick: bool) -> Effort {
        if quick {
            Effort {
                sizes: vec![
                    1,
                    8,
                    64,
                    512,
                    4096,
                    8192,
                    16384,
                    32768,
                    65536,
                    1 << 20,
                    4 << 20,
                ],
                reps_small: 200,
                reps_medium: 50,
                reps_large: 10,
                overhead_reps: 40,
                bw_iters_small: 20,
                bw_iters_large: 3,
                bw_repeats: 3,
                rounds: 5,
                pp_per_round: 100,
                sweep_s_per_size: 0.5,
                min_reps: 2,
                cold_s: 0.5,
                small_s: 1.0,
                eager_s: 3.0,
                exchange_reps: 7,
            }
        } else {
            Effort {
                sizes: (0..=22).map(|k| 1usize << k).collect(),
                reps_small: 2000,
                reps_medium: 200,
                reps_large: 50,
                overhead_reps: 100,
                bw_iters_small: 100,
                bw_iters_large: 20,
                bw_repeats: 5,
                rounds: 15,
                pp_per_round: 200,
                sweep_s_per_size: 1.0,
                min_reps: 5,
                cold_s: 3.0,
                small_s: 4.0,
                eager_s: 6.0,
                exchange_reps: 15,
            }
        }
    }

    /// The sweep's sizes up to `max` bytes, as OSU's `-m`: the default
    /// sizes not above it, then powers of two past the default's largest
    /// (4 MiB) and `max` itself. Sizes past 4 MiB take fewer ping-pongs
    /// and streams ([`Effort::reps`], [`Effort::bw_iters`]) so that each moves
    /// about what one at 4 MiB does.
    pub fn up_to(mut self, max: usize) -> Effort {
        let top = self.largest();
        self.sizes.retain(|&s| s <= max);
        let mut s = top * 2;
        while s < max {
            self.sizes.push(s);
            s *= 2;
        }
        if self.sizes.last() != Some(&max) {
            self.sizes.push(max);
        }
        self
    }

    pub(super) fn reps(&self, size: usize) -> usize {
        if size <= LARGE {
            self.reps_small
        } else if size <= 65536 {
            self.reps_medium
        } else if size <= 4 << 20 {
            self.reps_large
        } else {
            (self.reps_large * (4 << 20) / size).max(3)
        }
    }

    /// Timed and skipped windows of one stream at `size`.
    pub(super) fn bw_iters(&self, size: usize) -> (usize, usize) {
        if size <= LARGE {
            (self.bw_iters_small, self.bw_iters_small / 10 + 1)
        } else if size <= 4 << 20 {
            (self.bw_iters_large, 1)
        } else {
            ((self.bw_iters_large * (4 << 20) / size).max(2), 1)
        }
    }

    pub fn largest(&self) -> usize {
        self.sizes.iter().copied().max().unwrap_or(8)
    }
}
