//! The cluster profile: what one microbenchmark session (`mheta bench`,
//! crate `mheta-microbench`) measured of a cluster, stored as versioned
//! JSON. This crate owns the format and is the one typed API through which
//! the runtime reads it; it is MPI-free. It also owns the session's
//! options ([`cli::Measure`]), which the microbench and `mheta bench` share.
//!
//! Every measured figure is a [`SampleStats`]: mean, standard deviation, median,
//! 99th percentile and the HdrHistogram of the samples (V2 + DEFLATE,
//! base64), so that predictions can carry ranges. Costs are in seconds.
//! For an ordered pair (src, dst) a message of `b` bytes costs the sender
//! `o_send_s`, the receiver `o_recv_s`, and takes `one_way_s(b)` from the
//! start of the send to the end of the receive (LogP: o_s + L + G·b + o_r),
//! where `one_way_s` is piecewise linear with breakpoints where the MPI
//! library changes protocol ([`fit_segments`]).

#[cfg(feature = "cli")]
pub mod cli;
mod text;

use base64::Engine as _;
use hdrhistogram::serialization::Serializer as _;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` field of every profile.
pub const FORMAT: &str = "mheta-cluster-profile";
/// Version of the profile layout; bump on incompatible change.
pub const VERSION: u32 = 2;

/// A measured quantity: summary statistics of its samples (seconds), their
/// modes, their spread between rounds, and their HdrHistogram (values in
/// ns, 3 significant digits), serialised with the V2 + DEFLATE format and
/// base64.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct SampleStats {
    pub count: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p99: f64,
    /// Empty when the figure is derived rather than sampled.
    #[serde(default)]
    pub hist: String,
    /// The modes of the samples ([`modes`]), by increasing value; one
    /// entry for a unimodal figure, none for a derived one.
    #[serde(default)]
    pub modes: Vec<Mode>,
    /// The median of each round of samples, in the order measured (rounds
    /// are interleaved with the other figures of the pair).
    #[serde(default)]
    pub rounds: Vec<f64>,
    /// Spread between rounds: 100 × (p75 − p25) / p50 of the round
    /// medians (of the samples when fewer than 3 rounds), in percent.
    #[serde(default)]
    pub spread_pct: f64,
}

/// One mode of a figure's samples.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Mode {
    /// The mode's figure (seconds): the interquartile mean of its samples
    /// (the mean of those between its quartiles). As robust as the median
    /// to a tail, but it resolves below the clock's tick: a median of
    /// samples taken with a 10 ns clock jumps by 10 ns.
    pub value: f64,
    /// Fraction of all samples in the mode.
    pub share: f64,
    pub count: u64,
    /// Quartiles of the samples in the mode.
    pub p25: f64,
    pub p75: f64,
}

/// Share of the samples a mode needs to count in [`ModeChoice::Mean`].
pub const MEAN_MIN_SHARE: f64 = 0.2;

/// What [`ModeChoice::Mean`] stores, in the words the tools print.
pub const MEAN_TEXT: &str = "the share-weighted mean of the modes with >= 20% of the samples";

/// Which mode of a multi-modal figure the model uses
/// ([`ClusterProfile::with_mode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ModeChoice {
    /// The modes holding at least [`MEAN_MIN_SHARE`] of the samples, their
    /// values weighted by their shares: the expected cost of one call
    /// while the machine moves between those states (the default). On
    /// this VM o_r has two modes near 200 and 320 ns with shares near
    /// 50% each, so the dominant mode flips between sessions (a 60% jump
    /// of the stored figure), while this mean stays within a few percent.
    /// A tail of preempted samples that the 5% rule keeps as a mode of
    /// its own is left out; a unimodal figure gives its one mode.
    #[default]
    Mean,
    /// The mode with the largest share of samples: the state the machine
    /// was in most of the session.
    Dominant,
    /// The mode of the smallest value.
    Fast,
    /// The mode of the largest value.
    Slow,
}

impl std::str::FromStr for ModeChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mean" => Ok(ModeChoice::Mean),
            "dominant" => Ok(ModeChoice::Dominant),
            "fast" => Ok(ModeChoice::Fast),
            "slow" => Ok(ModeChoice::Slow),
            _ => Err(format!("mode {s:?}: expected mean, dominant, fast or slow")),
        }
    }
}

impl std::fmt::Display for ModeChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ModeChoice::Mean => "mean",
            ModeChoice::Dominant => "dominant",
            ModeChoice::Fast => "fast",
            ModeChoice::Slow => "slow",
        })
    }
}

/// The mean of the sorted values between their quartiles (inclusive).
fn interquartile_mean(sorted: &[f64]) -> f64 {
    let (lo, hi) = (quantile(sorted, 0.25), quantile(sorted, 0.75));
    let mid: Vec<f64> = sorted
        .iter()
        .copied()
        .filter(|&x| x >= lo && x <= hi)
        .collect();
    mid.iter().sum::<f64>() / mid.len().max(1) as f64
}

/// Quantile `q` of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[(((sorted.len() - 1) as f64) * q).round() as usize]
}

/// The modes of `samples` (seconds, any order), by increasing value, for
/// a clock whose readings are only good to `floor_s` (the timer's own
/// cost; 0 for exact data).
///
/// Method: a histogram of ln(sample) in 6% bins (wider where the smallest
/// samples are within a few `floor_s` of each other, so that a clock's
/// ticks do not look like modes), smoothed with a triangular kernel
/// reaching about ±12% (two bins each side, or one where the bins are
/// wider than 8%). Its local maxima are candidate modes. Two neighbouring
/// candidates are separate modes when they are at least 20% and
/// 3 × `floor_s` apart and the density between them falls below 60% of
/// the lower peak; otherwise the lower peak is merged into the higher. The samples
/// are split at the lowest bin between modes. A mode with under 5% of the
/// samples (a tail of preempted samples, say) is merged into its nearer
/// neighbour. Fewer than 20 samples make one mode.
pub fn modes(samples: &[f64], floor_s: f64) -> Vec<Mode> {
    let mut xs: Vec<f64> = samples
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    if xs.is_empty() {
        return Vec::new();
    }
    xs.sort_by(f64::total_cmp);
    if xs.len() < 20 {
        return vec![mode_of(&xs, xs.len())];
    }
    let lo = xs[0].ln();
    let span = xs[xs.len() - 1].ln() - lo;
    let p5 = quantile(&xs, 0.05);
    let w = (1.06f64.ln())
        .max(span / 4000.0)
        .max((1.0 + floor_s / p5).ln());
    let h = LogBins {
        lo,
        w,
        nb: (span / w) as usize + 1,
    };
    let mut c = vec![0.0f64; h.nb];
    for &x in &xs {
        c[h.bin(x)] += 1.0;
    }
    let d = smoothed(&c, w);
    // Local maxima (the first bin of a plateau).
    let nb = h.nb;
    let mut peaks: Vec<usize> = (0..nb)
        .filter(|&i| d[i] > 0.0 && (i == 0 || d[i] > d[i - 1]) && (i + 1 == nb || d[i] >= d[i + 1]))
        .collect();
    merge_peaks(&mut peaks, &d, &h, floor_s);
    let cuts: Vec<usize> = peaks.windows(2).map(|p| valley(&d, p[0], p[1])).collect();
    split(&xs, cuts, &h)
}

/// A mode of the `total` samples: the samples `seg`.
fn mode_of(seg: &[f64], total: usize) -> Mode {
    Mode {
        value: interquartile_mean(seg),
        share: seg.len() as f64 / total as f64,
        count: seg.len() as u64,
        p25: quantile(seg, 0.25),
        p75: quantile(seg, 0.75),
    }
}

/// [`modes`]' histogram: `nb` bins of ln(x) of width `w` from `lo`.
struct LogBins {
    lo: f64,
    w: f64,
    nb: usize,
}

impl LogBins {
    fn bin(&self, x: f64) -> usize {
        (((x.ln() - self.lo) / self.w) as usize).min(self.nb - 1)
    }

    /// The value at the start of bin `i`.
    fn at(&self, i: usize) -> f64 {
        (self.lo + i as f64 * self.w).exp()
    }
}

/// The counts `c` smoothed with a triangular kernel reaching about ±12%
/// whatever the bin width `w`: two 6% bins each side, one where the clock
/// widened the bins. A kernel of a fixed number of wider bins smeared
/// modes 60% apart into one (o_r at 195 and 320 ns, 10% bins, ±20%: the
/// valley between them filled to over 60% of the peaks).
fn smoothed(c: &[f64], w: f64) -> Vec<f64> {
    let nb = c.len();
    let r = ((1.12f64.ln() / w).round() as i64).max(1);
    (0..nb)
        .map(|i| {
            (-r..=r)
                .map(|k| {
                    let j = i as i64 + k;
                    if j < 0 || j >= nb as i64 {
                        0.0
                    } else {
                        (r + 1 - k.abs()) as f64 * c[j as usize]
                    }
                })
                .sum()
        })
        .collect()
}

/// The lowest bin of `d` in `[a, b]`.
fn valley(d: &[f64], a: usize, b: usize) -> usize {
    (a..=b).min_by(|&x, &y| d[x].total_cmp(&d[y])).unwrap_or(a)
}

/// Merge peaks that are too close (under 20% or 3 × `floor_s` apart) or
/// not separated by a valley below 60% of the lower one: the lower peak
/// goes.
fn merge_peaks(peaks: &mut Vec<usize>, d: &[f64], h: &LogBins, floor_s: f64) {
    loop {
        let mut merged = false;
        for k in 0..peaks.len().saturating_sub(1) {
            let (a, b) = (peaks[k], peaks[k + 1]);
            let v = valley(d, a, b);
            let (va, vb) = (h.at(a), h.at(b));
            let apart = vb / va >= 1.2 && vb - va >= 3.0 * floor_s;
            if !(apart && d[v] <= 0.6 * d[a].min(d[b])) {
                peaks.remove(if d[a] >= d[b] { k + 1 } else { k });
                merged = true;
                break;
            }
        }
        if !merged {
            return;
        }
    }
}

/// Split the sorted samples at the valleys `cuts`; a mode under 5% of
/// the samples merges into its nearer (by median) neighbour.
fn split(xs: &[f64], mut cuts: Vec<usize>, h: &LogBins) -> Vec<Mode> {
    loop {
        let mut bounds = vec![0usize];
        for &v in &cuts {
            bounds.push(xs.partition_point(|&x| h.bin(x) < v));
        }
        bounds.push(xs.len());
        let small = (0..bounds.len() - 1)
            .find(|&k| ((bounds[k + 1] - bounds[k]) as f64) < 0.05 * xs.len() as f64);
        match small {
            Some(k) if !cuts.is_empty() => {
                // Drop the cut on the side of the nearer (by median) neighbour.
                let m = quantile(&xs[bounds[k]..bounds[k + 1].max(bounds[k] + 1)], 0.5);
                let left = (k > 0).then(|| quantile(&xs[bounds[k - 1]..bounds[k]], 0.5));
                let right = (k + 2 < bounds.len())
                    .then(|| quantile(&xs[bounds[k + 1]..bounds[k + 2]], 0.5));
                let use_left = match (left, right) {
                    (Some(l), Some(r)) => (m / l).ln().abs() <= (r / m).ln().abs(),
                    (Some(_), None) => true,
                    _ => false,
                };
                cuts.remove(if use_left { k - 1 } else { k });
            }
            _ => {
                return bounds
                    .windows(2)
                    .filter(|b| b[1] > b[0])
                    .map(|b| mode_of(&xs[b[0]..b[1]], xs.len()))
                    .collect();
            }
        }
    }
}

impl SampleStats {
    /// The distribution of `samples` (seconds).
    pub fn from_samples(samples: &[f64]) -> SampleStats {
        if samples.is_empty() {
            return SampleStats::default();
        }
        let n = samples.len() as f64;
        let mean = samples.iter().sum::<f64>() / n;
        let var = samples.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
            .expect("histogram bounds");
        for &s in samples {
            let _ = h.record(((s * 1e9).round() as u64).clamp(1, 3_600_000_000_000));
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| quantile(&sorted, p);
        let mut buf = Vec::new();
        let hist =
            match hdrhistogram::serialization::V2DeflateSerializer::new().serialize(&h, &mut buf) {
                Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
                Err(_) => String::new(),
            };
        SampleStats {
            count: samples.len() as u64,
            mean,
            stdev: var.sqrt(),
            p50: q(0.5),
            p99: q(0.99),
            hist,
            modes: modes(samples, 0.0),
            rounds: Vec::new(),
            spread_pct: if q(0.5) > 0.0 {
                100.0 * (q(0.75) - q(0.25)) / q(0.5)
            } else {
                0.0
            },
        }
    }

    /// The distribution of samples taken in rounds: all samples pooled,
    /// each round's median kept, and the spread taken between rounds;
    /// modes as [`modes`] finds them for a timer good to `floor_s`.
    pub fn from_rounds(rounds: &[Vec<f64>], floor_s: f64) -> SampleStats {
        let all: Vec<f64> = rounds.iter().flatten().copied().collect();
        let mut d = SampleStats::from_samples(&all);
        d.modes = modes(&all, floor_s);
        d.rounds = rounds
            .iter()
            .filter(|r| !r.is_empty())
            .map(|r| {
                let mut r = r.clone();
                r.sort_by(f64::total_cmp);
                quantile(&r, 0.5)
            })
            .collect();
        if d.rounds.len() >= 3 {
            let mut m = d.rounds.clone();
            m.sort_by(f64::total_cmp);
            let mid = quantile(&m, 0.5);
            d.spread_pct = if mid > 0.0 {
                100.0 * (quantile(&m, 0.75) - quantile(&m, 0.25)) / mid
            } else {
                0.0
            };
        }
        d
    }

    /// The figure the model uses: the chosen mode's value (the
    /// interquartile mean of its samples; for [`ModeChoice::Mean`] the
    /// share-weighted mean of the modes that count), or the median of all
    /// samples when no modes were recorded.
    pub fn value(&self, choice: ModeChoice) -> f64 {
        if choice == ModeChoice::Mean {
            // The largest mode always counts, so the sum is never empty.
            let big = self.mode(ModeChoice::Dominant);
            let counted = self
                .modes
                .iter()
                .filter(|m| m.share >= MEAN_MIN_SHARE || Some(*m) == big);
            let (w, s) = counted.fold((0.0, 0.0), |(w, s), m| (w + m.share, s + m.share * m.value));
            return if w > 0.0 { s / w } else { self.p50 };
        }
        self.mode(choice).map_or(self.p50, |m| m.value)
    }

    /// The chosen mode, if modes were recorded (for [`ModeChoice::Mean`],
    /// which blends modes, the dominant one).
    pub fn mode(&self, choice: ModeChoice) -> Option<&Mode> {
        match choice {
            ModeChoice::Mean | ModeChoice::Dominant => self.modes.iter().max_by(|a, b| {
                a.share
                    .total_cmp(&b.share)
                    .then(b.value.total_cmp(&a.value))
            }),
            ModeChoice::Fast => self.modes.first(),
            ModeChoice::Slow => self.modes.last(),
        }
    }

    /// "0.33 µs (72%) | 0.66 µs (28%)" for a multi-modal figure, `None`
    /// for a unimodal one.
    pub fn modes_text(&self) -> Option<String> {
        (self.modes.len() > 1).then(|| {
            self.modes
                .iter()
                .map(|m| format!("{:.3} us ({:.0}%)", m.value * 1e6, m.share * 100.0))
                .collect::<Vec<_>>()
                .join(" | ")
        })
    }

    /// A single derived value.
    pub fn point(v: f64) -> SampleStats {
        SampleStats {
            count: 1,
            mean: v,
            stdev: 0.0,
            p50: v,
            p99: v,
            ..SampleStats::default()
        }
    }

    /// Decode the histogram (values in ns).
    pub fn histogram(&self) -> Result<hdrhistogram::Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.hist)
            .map_err(|e| format!("histogram is not base64: {e}"))?;
        hdrhistogram::serialization::Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("histogram does not decode: {e:?}"))
    }
}

/// One piece of the one-way time: for `from_bytes <= b <= to_bytes`,
/// `one_way(b) = base_s + per_byte_s * (b - from_bytes)`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Segment {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub base_s: f64,
    pub per_byte_s: f64,
}

/// One message size of the sweep.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SizePoint {
    pub bytes: u64,
    /// Half a ping-pong round trip.
    pub one_way: SampleStats,
    /// Streaming bandwidth (window of 64 non-blocking sends), decimal MB/s.
    pub bandwidth_mbps: f64,
}

/// A message size as OSU's `-m` and `mheta bench --max-size` take it:
/// bytes, or a number with `K`, `M` or `G` (binary: `128M` is 128 MiB;
/// `KiB`, `MiB`, `GiB` too).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a size (bytes, or a number with K, M or G)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use K, M or G)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

/// `mheta bench --max-size` (the microbench's too): a size by
/// [`parse_bytes`] from 64 KiB to 1 GiB.
pub fn parse_max_size(s: &str) -> Result<u64, String> {
    let b = parse_bytes(s)?;
    if !(64 << 10..=1 << 30).contains(&b) {
        return Err(format!("{s}: must be from 64K to 1G"));
    }
    Ok(b)
}

/// Message size of [`PairCost::bandwidth_cold_bps`]: 8 MiB, the smallest
/// move the redistribution target speaks of.
pub const COLD_BYTES: usize = 8 << 20;

/// Costs of messages from `src` to `dst` (MPI_COMM_WORLD ranks).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct PairCost {
    pub src: u32,
    pub dst: u32,
    /// Wire latency L: one-way time of a small message minus o_s and o_r.
    pub latency_s: f64,
    /// Per-byte cost G of the largest messages (the last segment).
    pub per_byte_s: f64,
    /// Sender overhead o_s (median).
    pub o_send_s: f64,
    /// Receiver overhead o_r (median).
    pub o_recv_s: f64,
    /// Median round trip of an 8-byte ping-pong.
    pub rtt_small_s: f64,
    /// Streaming bandwidth at 1 MiB (or the largest size), bytes/s.
    pub bandwidth_bps: f64,
    /// Bandwidth of one [`COLD_BYTES`] message between buffers out of the
    /// cache, bytes/s (`mheta_microbench::net::cold_one_way`): what moving
    /// megabytes of rows last touched long ago (a redistribution) can
    /// reach, where `bandwidth_bps` streams the same cached megabyte. 0:
    /// not measured (profiles from before it was).
    #[serde(default)]
    pub bandwidth_cold_bps: f64,
    #[serde(default)]
    pub o_send: SampleStats,
    #[serde(default)]
    pub o_recv: SampleStats,
    /// One-way time of an 8-byte message.
    #[serde(default)]
    pub one_way_small: SampleStats,
    #[serde(default)]
    pub sweep: Vec<SizePoint>,
    #[serde(default)]
    pub segments: Vec<Segment>,
    /// The largest message, in bytes, whose send completes before the
    /// receiver has posted its receive (Open MPI's shared-memory BTL: about
    /// 4 KiB with its header; TCP: 64 KiB). A larger one goes by rendezvous:
    /// the sender's request completes only once the receiver has matched
    /// it and taken the data (`mheta_microbench::net::eager_limit`). None:
    /// not measured (profiles from before it was); the model then takes
    /// every send as eager.
    #[serde(default)]
    pub eager_limit_bytes: Option<u64>,
}

impl PairCost {
    /// A pair described by LogP figures alone (tests, synthetic clusters).
    pub fn logp(
        src: u32,
        dst: u32,
        latency_s: f64,
        per_byte_s: f64,
        o_send_s: f64,
        o_recv_s: f64,
    ) -> PairCost {
        let small = o_send_s + latency_s + o_recv_s;
        PairCost {
            src,
            dst,
            latency_s,
            per_byte_s,
            o_send_s,
            o_recv_s,
            rtt_small_s: 2.0 * small,
            bandwidth_bps: if per_byte_s > 0.0 {
                1.0 / per_byte_s
            } else {
                f64::INFINITY
            },
            bandwidth_cold_bps: 0.0,
            o_send: SampleStats::point(o_send_s),
            o_recv: SampleStats::point(o_recv_s),
            one_way_small: SampleStats::point(small),
            sweep: Vec::new(),
            segments: vec![Segment {
                from_bytes: 0,
                to_bytes: u64::MAX,
                base_s: small,
                per_byte_s,
            }],
            eager_limit_bytes: None,
        }
    }

    /// [`PairCost::eager_limit_bytes`] as a table prints it: `-` when not
    /// measured, `inf` when every size measured was eager.
    pub fn eager_text(&self) -> String {
        match self.eager_limit_bytes {
            None => "-".into(),
            Some(u64::MAX) => "inf".into(),
            Some(b) => b.to_string(),
        }
    }

    /// One-way time of a `bytes`-byte message, send start to receive end.
    pub fn one_way_s(&self, bytes: f64) -> f64 {
        let segs = &self.segments;
        if segs.is_empty() {
            return self.o_send_s + self.latency_s + self.o_recv_s + self.per_byte_s * bytes;
        }
        let s = segs
            .iter()
            .find(|s| bytes <= s.to_bytes as f64)
            .unwrap_or(&segs[segs.len() - 1]);
        let from = s.from_bytes as f64;
        s.base_s + s.per_byte_s * (bytes - from).max(0.0)
    }

    /// The streaming bandwidth (window of 64, as osu_bw) the sweep
    /// measured at the largest size not above `bytes`, as (size, bytes/s);
    /// the smallest size when every size is above; `None` without a sweep.
    /// A profile measured with `--max-size` reaches the sizes a
    /// redistribution moves, where the 1 MiB figure
    /// ([`PairCost::bandwidth_bps`]) streams one cached buffer.
    pub fn streaming_bps_at(&self, bytes: u64) -> Option<(u64, f64)> {
        let at = self
            .sweep
            .iter()
            .filter(|p| p.bytes <= bytes)
            .max_by_key(|p| p.bytes)
            .or_else(|| self.sweep.iter().min_by_key(|p| p.bytes))?;
        Some((at.bytes, at.bandwidth_mbps * 1e6))
    }

    /// Time on the wire: the one-way time without the two overheads
    /// (MHETA eq. 3's T_{i->j}(q)).
    pub fn transfer_s(&self, bytes: f64) -> f64 {
        (self.one_way_s(bytes) - self.o_send_s - self.o_recv_s).max(0.0)
    }
}

/// Per-node disk costs (MHETA's O_r, O_w and per-byte read/write costs).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DiskCost {
    /// Directory measured.
    pub dir: String,
    /// How the page cache was kept out (`O_DIRECT`, or buffered I/O with
    /// `fdatasync` and `posix_fadvise(DONTNEED)`).
    pub method: String,
    pub read_overhead_s: f64,
    pub read_per_byte_s: f64,
    pub write_overhead_s: f64,
    pub write_per_byte_s: f64,
    /// Per block size: time of one call.
    pub read: Vec<(u64, SampleStats)>,
    pub write: Vec<(u64, SampleStats)>,
}

/// What was measured of the node a rank runs on.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct NodeCost {
    pub rank: u32,
    pub host: String,
    /// Relative CPU power: w_a = t_s / t_a (slowdown seed, section 6), the
    /// slowest rank has 1.
    pub cpu_weight: f64,
    /// Time of one run of the reference kernel.
    pub cpu_kernel: SampleStats,
    /// Memory this rank may use: the node's available memory (and cgroup
    /// limit) shared among its ranks.
    pub mem_available_bytes: u64,
    /// `None` when disks were not measured (`--no-disk`).
    pub disk: Option<DiskCost>,
}

/// OSU-compatible results (`--osu-compat`): osu_latency and osu_bw loops.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct OsuCompat {
    pub src: u32,
    pub dst: u32,
    pub latency_us: Vec<(u64, f64)>,
    pub bandwidth_mbps: Vec<(u64, f64)>,
    /// Timed round trips of each latency size: OSU's counts where they
    /// fit the time budget of a size, fewer on a slow link. Empty: not
    /// recorded (profiles from before it was).
    #[serde(default)]
    pub latency_iters: Vec<(u64, u64)>,
    /// Timed windows of each bandwidth size, likewise.
    #[serde(default)]
    pub bandwidth_iters: Vec<(u64, u64)>,
}

/// A measured cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ClusterProfile {
    pub format: String,
    pub version: u32,
    /// Ranks measured.
    pub np: u32,
    /// Host of each rank.
    pub hosts: Vec<String>,
    /// How overheads were separated from latency.
    pub method: String,
    /// How the pairs were scheduled.
    #[serde(default)]
    pub schedule: String,
    #[serde(default)]
    pub quick: bool,
    /// Every ordered pair (src != dst), in any order.
    pub pairs: Vec<PairCost>,
    /// One per rank (may be empty in synthetic profiles).
    #[serde(default)]
    pub nodes: Vec<NodeCost>,
    #[serde(default)]
    pub osu: Option<OsuCompat>,
    /// Cost of one timer reading (median of back-to-back readings) on rank
    /// 0: every timed sample includes it, and modes closer than three of
    /// it are not told apart.
    #[serde(default)]
    pub timer_s: f64,
    /// The links the cluster spec gave, when the profile was measured
    /// across emulated hosts (`mheta bench --cluster`): what the measured
    /// link matrix is held against. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<SpecLink>,
}

/// One ordered pair of hosts as the cluster spec shaped it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SpecLink {
    pub src: String,
    pub dst: String,
    /// The pair's rate, bits per second (None: not shaped).
    pub rate_bps: Option<f64>,
    /// One-way latency added on the pair, seconds.
    pub added_latency_s: f64,
}

/// The largest time any single profile figure may take: an overhead,
/// latency or one-way time above 10 s (or a negative or non-finite one)
/// is a corrupt or hand-edited profile, not a measurement.
pub const MAX_TIME_S: f64 = 10.0;
/// The largest bandwidth a pair or disk may show: 1 TB/s is above the
/// memory bandwidth that any one pair of processes can use.
pub const MAX_BANDWIDTH_BPS: f64 = 1e12;

/// `Ok` for a finite time in [0, [`MAX_TIME_S`]]; else why not.
fn plausible_time(x: f64) -> Result<(), String> {
    if !x.is_finite() || x < 0.0 {
        Err("is not a finite non-negative time".into())
    } else if x > MAX_TIME_S {
        Err(format!("is implausible (above {MAX_TIME_S} s)"))
    } else {
        Ok(())
    }
}

/// Errors loading a profile; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a valid cluster profile: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "{path}: profile version {found}, this mheta reads version {expected}; re-run `mheta bench`"
    )]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    #[error("{path}: {detail}")]
    Invalid { path: PathBuf, detail: String },
}

/// One pair's costs are plausible times ([`MAX_TIME_S`]) and bandwidths
/// ([`MAX_BANDWIDTH_BPS`]), its segments in order.
fn validate_pair(c: &PairCost) -> Result<(), String> {
    for (name, x) in [
        ("latency_s", c.latency_s),
        ("per_byte_s", c.per_byte_s),
        ("o_send_s", c.o_send_s),
        ("o_recv_s", c.o_recv_s),
        ("rtt_small_s", c.rtt_small_s),
    ] {
        plausible_time(x).map_err(|e| format!("{name} = {x} s {e}"))?;
    }
    if c.per_byte_s < 1.0 / MAX_BANDWIDTH_BPS {
        return Err(format!(
            "per_byte_s = {} s/B is {:.3e} B/s, above any memory bandwidth ({MAX_BANDWIDTH_BPS:.0e} B/s)",
            c.per_byte_s,
            1.0 / c.per_byte_s
        ));
    }
    if !(c.bandwidth_bps.is_finite() && c.bandwidth_bps <= MAX_BANDWIDTH_BPS)
        || c.bandwidth_bps < 0.0
    {
        return Err(format!(
            "bandwidth_bps = {} is not a bandwidth between 0 and {MAX_BANDWIDTH_BPS:.0e} B/s",
            c.bandwidth_bps
        ));
    }
    if !(c.bandwidth_cold_bps.is_finite()
        && (0.0..=MAX_BANDWIDTH_BPS).contains(&c.bandwidth_cold_bps))
    {
        return Err(format!(
            "bandwidth_cold_bps = {} is not a bandwidth between 0 and {MAX_BANDWIDTH_BPS:.0e} B/s",
            c.bandwidth_cold_bps
        ));
    }
    for w in c.segments.windows(2) {
        if w[1].from_bytes < w[0].to_bytes.min(w[0].from_bytes.max(1)) {
            return Err("segments out of order".into());
        }
    }
    for g in &c.segments {
        for (name, x) in [("base_s", g.base_s), ("per_byte_s", g.per_byte_s)] {
            plausible_time(x)
                .map_err(|e| format!("segment from {} B: {name} = {x} s {e}", g.from_bytes))?;
        }
    }
    Ok(())
}

/// A node's CPU weight and disk figures are plausible.
fn validate_node(nd: &NodeCost) -> Result<(), String> {
    if !(nd.cpu_weight.is_finite() && nd.cpu_weight > 0.0 && nd.cpu_weight <= 1e6) {
        return Err(format!(
            "cpu_weight = {} is not a relative CPU power in (0, 1e6]",
            nd.cpu_weight
        ));
    }
    let Some(dk) = &nd.disk else {
        return Ok(());
    };
    for (name, x) in [
        ("read_overhead_s", dk.read_overhead_s),
        ("write_overhead_s", dk.write_overhead_s),
        ("read_per_byte_s", dk.read_per_byte_s),
        ("write_per_byte_s", dk.write_per_byte_s),
    ] {
        plausible_time(x).map_err(|e| format!("disk {name} = {x} s {e}"))?;
    }
    for (name, x) in [
        ("read_per_byte_s", dk.read_per_byte_s),
        ("write_per_byte_s", dk.write_per_byte_s),
    ] {
        // 0 is what the fit gives when per-byte cost was not resolved; a
        // positive figure must be a real bandwidth.
        if x > 0.0 && x < 1.0 / MAX_BANDWIDTH_BPS {
            return Err(format!(
                "disk {name} = {x} s/B is {:.3e} B/s, above any memory bandwidth ({MAX_BANDWIDTH_BPS:.0e} B/s)",
                1.0 / x
            ));
        }
    }
    Ok(())
}

impl ClusterProfile {
    /// A profile with no pairs yet.
    pub fn new(np: u32, hosts: Vec<String>, method: &str) -> Self {
        ClusterProfile {
            format: FORMAT.into(),
            version: VERSION,
            np,
            hosts,
            method: method.into(),
            schedule: String::new(),
            quick: false,
            pairs: Vec::new(),
            nodes: Vec::new(),
            osu: None,
            timer_s: 0.0,
            links: Vec::new(),
        }
    }

    /// Read, version-check and validate a profile file.
    pub fn load(path: &Path) -> Result<Self, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: path.into(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parse profile JSON; `path` only names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ProfileError> {
        let corrupt = |detail: String| ProfileError::Corrupt {
            path: path.into(),
            detail,
        };
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| corrupt(e.to_string()))?;
        if v.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
            return Err(corrupt(format!("missing \"format\": \"{FORMAT}\"")));
        }
        let found = v
            .get("version")
            .and_then(|x| x.as_u64())
            .ok_or_else(|| corrupt("missing \"version\"".into()))?;
        if found != VERSION as u64 {
            return Err(ProfileError::Version {
                path: path.into(),
                found: found as u32,
                expected: VERSION,
            });
        }
        let p: ClusterProfile = serde_json::from_value(v).map_err(|e| corrupt(e.to_string()))?;
        p.validate().map_err(|detail| ProfileError::Invalid {
            path: path.into(),
            detail,
        })?;
        Ok(p)
    }

    /// Check that every ordered pair is present once with physically
    /// plausible costs ([`MAX_TIME_S`], [`MAX_BANDWIDTH_BPS`]) and that
    /// every node's figures are plausible.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.np as usize;
        if n == 0 {
            return Err("np is 0".into());
        }
        let mut seen = vec![false; n * n];
        for c in &self.pairs {
            let (s, d) = (c.src as usize, c.dst as usize);
            if s >= n || d >= n || s == d {
                return Err(format!(
                    "pair {s}->{d} is not an ordered pair of distinct ranks below np={n}"
                ));
            }
            if std::mem::replace(&mut seen[s * n + d], true) {
                return Err(format!("pair {s}->{d} appears twice"));
            }
            validate_pair(c).map_err(|e| format!("pair {s}->{d}: {e}"))?;
        }
        for s in 0..n {
            for d in 0..n {
                if s != d && !seen[s * n + d] {
                    return Err(format!("pair {s}->{d} is missing"));
                }
            }
        }
        if !self.nodes.is_empty() && self.nodes.len() != n {
            return Err(format!("{} nodes for np={n}", self.nodes.len()));
        }
        for nd in &self.nodes {
            validate_node(nd).map_err(|e| format!("node {}: {e}", nd.rank))?;
        }
        Ok(())
    }

    /// Costs from `src` to `dst`. Panics if the pair is absent, which a
    /// validated profile rules out for `src != dst < np`.
    pub fn pair(&self, src: u32, dst: u32) -> &PairCost {
        self.pairs
            .iter()
            .find(|c| c.src == src && c.dst == dst)
            .unwrap_or_else(|| panic!("profile has no pair {src}->{dst}"))
    }

    /// The profile with every pair's o_s, o_r and 8-byte one-way time taken
    /// from the chosen mode of its samples ([`SampleStats::value`]); L follows as
    /// one-way − o_s − o_r, and the fitted one-way curve is shifted by the
    /// change of the 8-byte time (a latency mode moves every size alike).
    /// Pairs measured without modes keep their figures. `mheta bench`
    /// stores [`ModeChoice::Mean`], so `with_mode(Mean)` changes nothing.
    pub fn with_mode(&self, choice: ModeChoice) -> ClusterProfile {
        let mut p = self.clone();
        for c in &mut p.pairs {
            if c.one_way_small.modes.is_empty() {
                continue;
            }
            let pick = |d: &SampleStats, old: f64| {
                if d.modes.is_empty() {
                    old
                } else {
                    d.value(choice)
                }
            };
            let os = pick(&c.o_send, c.o_send_s);
            let or = pick(&c.o_recv, c.o_recv_s);
            let small = c.one_way_small.value(choice);
            let delta = small - c.rtt_small_s / 2.0;
            for g in &mut c.segments {
                g.base_s = (g.base_s + delta).max(0.0);
            }
            c.o_send_s = os;
            c.o_recv_s = or;
            c.rtt_small_s = 2.0 * small;
            c.latency_s = (small - os - or).max(0.0);
        }
        p
    }

    /// The hosts the ranks sit on, each once, in the order of their first
    /// rank ([`ClusterProfile::hosts`]), with their ranks.
    pub fn host_ranks(&self) -> Vec<(String, Vec<u32>)> {
        let mut out: Vec<(String, Vec<u32>)> = Vec::new();
        for (r, h) in self.hosts.iter().enumerate() {
            match out.iter_mut().find(|(name, _)| name == h) {
                Some((_, ranks)) => ranks.push(r as u32),
                None => out.push((h.clone(), vec![r as u32])),
            }
        }
        out
    }

    /// A pair figure host by host: cell `[i][j]` is the median of `f`
    /// over the measured pairs from a rank on host `i` to a rank on host
    /// `j` ([`ClusterProfile::host_ranks`] order; the mean of the middle
    /// two for an even count), `None` where there is no such pair (the
    /// diagonal of a host with one rank).
    pub fn link_matrix(&self, f: impl Fn(&PairCost) -> f64) -> Vec<Vec<Option<f64>>> {
        let hosts = self.host_ranks();
        let index = |r: u32| {
            self.hosts
                .get(r as usize)
                .and_then(|h| hosts.iter().position(|(name, _)| name == h))
        };
        let n = hosts.len();
        let mut cells: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n]; n];
        for c in &self.pairs {
            if let (Some(i), Some(j)) = (index(c.src), index(c.dst)) {
                let v = f(c);
                if v.is_finite() {
                    cells[i][j].push(v);
                }
            }
        }
        cells
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|mut v| {
                        if v.is_empty() {
                            return None;
                        }
                        v.sort_by(f64::total_cmp);
                        let m = v.len();
                        Some(if m % 2 == 1 {
                            v[m / 2]
                        } else {
                            0.5 * (v[m / 2 - 1] + v[m / 2])
                        })
                    })
                    .collect()
            })
            .collect()
    }

    /// A figure of the spec's links, host by host (None where the spec
    /// has no such link or `f` no figure).
    fn spec_matrix(
        &self,
        hosts: &[(String, Vec<u32>)],
        f: &dyn Fn(&SpecLink) -> Option<f64>,
    ) -> Vec<Vec<Option<f64>>> {
        hosts
            .iter()
            .map(|(a, _)| {
                hosts
                    .iter()
                    .map(|(b, _)| {
                        self.links
                            .iter()
                            .find(|l| &l.src == a && &l.dst == b)
                            .and_then(f)
                    })
                    .collect()
            })
            .collect()
    }

    /// The link matrices as the tools print them, when the ranks sit on
    /// more than one host (empty otherwise): the streaming bandwidth at
    /// 1 MiB (MB/s) and the 8-byte one-way time (median, µs), rows the
    /// source host and columns the destination, each cell the median over
    /// the rank pairs between the two hosts ([`ClusterProfile::link_matrix`]).
    pub fn link_tables(&self) -> String {
        use std::fmt::Write as _;
        let hosts = self.host_ranks();
        if hosts.len() < 2 || self.hosts.len() != self.np as usize {
            return String::new();
        }
        let mut out = String::new();
        let ranks: Vec<String> = hosts
            .iter()
            .map(|(h, r)| {
                let r: Vec<String> = r.iter().map(u32::to_string).collect();
                format!("{h}: {}", r.join(","))
            })
            .collect();
        let _ = writeln!(out, "# Hosts (ranks): {}", ranks.join("; "));
        let table = |out: &mut String, title: &str, m: Vec<Vec<Option<f64>>>| {
            link_table(out, &hosts, title, &m)
        };
        table(
            &mut out,
            "bandwidth at 1 MiB (MB/s)",
            self.link_matrix(|c| c.bandwidth_bps / 1e6),
        );
        table(
            &mut out,
            "latency, 8 B one-way (us)",
            self.link_matrix(|c| c.one_way_small.p50 * 1e6),
        );
        if !self.links.is_empty() {
            let spec = |f: &dyn Fn(&SpecLink) -> Option<f64>| self.spec_matrix(&hosts, f);
            table(
                &mut out,
                "the spec's rate (MB/s = Mbit/s / 8; '-' unshaped)",
                spec(&|l| l.rate_bps.map(|r| r / 8e6)),
            );
            let measured = self.link_matrix(|c| c.bandwidth_bps);
            let nominal = spec(&|l| l.rate_bps);
            let ratio = measured
                .iter()
                .zip(&nominal)
                .map(|(m, n)| {
                    m.iter()
                        .zip(n)
                        .map(|(m, n)| Some((*m)? / (*n)? * 8.0))
                        .collect()
                })
                .collect();
            table(&mut out, "measured bandwidth over the spec's rate", ratio);
            table(
                &mut out,
                "the spec's added one-way latency (us)",
                spec(&|l| (l.src != l.dst).then_some(l.added_latency_s * 1e6)),
            );
        }
        out
    }

    /// Every multi-modal figure: (src, dst, figure, its modes as text).
    pub fn multi_modal(&self) -> Vec<(u32, u32, &'static str, String)> {
        let mut out = Vec::new();
        for c in &self.pairs {
            for (name, d) in [
                ("o_s", &c.o_send),
                ("o_r", &c.o_recv),
                ("one-way 8 B", &c.one_way_small),
            ] {
                if let Some(t) = d.modes_text() {
                    out.push((c.src, c.dst, name, t));
                }
            }
        }
        out
    }

    /// Serialise to pretty JSON.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("profile serialises");
        s.push('\n');
        s
    }

    /// Write to `path` through a temporary file and a rename.
    pub fn save(&self, path: &Path) -> Result<(), ProfileError> {
        let io = |source| ProfileError::Io {
            path: path.into(),
            source,
        };
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        std::fs::write(&tmp, self.to_json()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

/// Least-squares line `y = a + b·x` through `points`, with `b` floored at 0
/// and `a` at 0 (costs are not negative); `None` with fewer than two
/// distinct `x`. Used for per-call overhead + per-byte cost fits.
///
/// Points of the same `x` enter as their median `y`, weighted by how many
/// there are, so one disturbed call among several of its size does not
/// tilt the line: three recorded reads of 0.6 MB at 25.0, 25.2 and 38.0 ms
/// beside six of 3.9 MB at 155.4 ms (a paced disk, 40 ns/byte and no
/// per-call cost) gave a plain fit of 5.3 ms per call, and the model
/// charged it to each of the 14 reads of a smaller out-of-core share
/// (jacobi at 4 ranks on HY2, 19% over); the medians give 0.3 ms.
pub fn line_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    // (x, median y, count) per distinct x.
    let groups: Vec<(f64, f64, f64)> = sorted
        .chunk_by(|a, b| a.0 == b.0)
        .map(|g| {
            let m = g.len();
            let y = if m % 2 == 1 {
                g[m / 2].1
            } else {
                0.5 * (g[m / 2 - 1].1 + g[m / 2].1)
            };
            (g[0].0, y, m as f64)
        })
        .collect();
    let n: f64 = groups.iter().map(|g| g.2).sum();
    let (mx, my) = (
        groups.iter().map(|g| g.2 * g.0).sum::<f64>() / n,
        groups.iter().map(|g| g.2 * g.1).sum::<f64>() / n,
    );
    let sxy: f64 = groups.iter().map(|g| g.2 * (g.0 - mx) * (g.1 - my)).sum();
    let sxx: f64 = groups.iter().map(|g| g.2 * (g.0 - mx) * (g.0 - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = (sxy / sxx).max(0.0);
    Some(((my - b * mx).max(0.0), b))
}

/// Fit the one-way time over message sizes as a piecewise-linear function
/// through measured medians `(bytes, seconds)` (sorted by size).
///
/// Where the pair's eager limit is known (`eager`: the largest message
/// that leaves before its receive is posted) and points lie on both sides
/// of it, the two protocols are fitted apart: the eager side's last piece
/// reaches the limit and the rendezvous side starts at its first size, so
/// the handshake's jump stays between them. One line from 8 KiB to 64 KiB
/// across the switch, over a 1 ms link, carries the rendezvous round trip
/// into every eager message between: it prices a 16 KiB halo at 1.80 ms,
/// which takes 1.11 ms.
///
/// Each side is continuous: knots at its first and last size and at up to
/// two breakpoints more where the library changes protocol again (single
/// copy, a window), i.e. where a knot most reduces the worst relative
/// error. A breakpoint must earn its place (cut the worst error by a
/// third) and every segment must rise, so every per-byte cost is positive.
/// A side that never rises gets one segment ([`falling_fit`]); a side of
/// one size continues the other side's last per-byte cost.
pub fn fit_segments(points: &[(f64, f64)], eager: Option<u64>) -> Vec<Segment> {
    let split = eager.map_or(0, |e| points.partition_point(|p| p.0 <= e as f64));
    if let Some(e) = eager
        && split >= 2
        && split < points.len()
    {
        let mut low = fit_side(&points[..split]);
        if let Some(last) = low.last_mut() {
            last.to_bytes = e;
        }
        let high = if points.len() - split >= 2 {
            fit_side(&points[split..])
        } else {
            let (b, t) = points[split];
            vec![Segment {
                from_bytes: b as u64,
                to_bytes: u64::MAX,
                base_s: t,
                per_byte_s: low.last().map_or(0.0, |s| s.per_byte_s),
            }]
        };
        low.extend(high);
        if let Some(last) = low.last_mut() {
            last.to_bytes = u64::MAX;
        }
        return low;
    }
    let mut out = fit_side(points);
    if let Some(last) = out.last_mut() {
        last.to_bytes = u64::MAX;
    }
    out
}

/// One protocol's continuous fit (see [`fit_segments`]); its last piece
/// ends at its largest size.
fn fit_side(points: &[(f64, f64)]) -> Vec<Segment> {
    if points.len() < 2 {
        return points
            .iter()
            .map(|&(b, t)| Segment {
                from_bytes: b as u64,
                to_bytes: u64::MAX,
                base_s: t,
                per_byte_s: 0.0,
            })
            .collect();
    }
    // Nothing rises (time-shared ranks can make a 1-byte round trip as
    // slow as a 4 MiB one): one segment whose per-byte cost is the
    // least-squares slope, or at least the largest size's time per byte,
    // so that the cost stays positive and no larger than measured.
    best_knots(points)
        .map(|b| b.1)
        .unwrap_or_else(|| vec![falling_fit(points)])
}

/// The best rising fit of `points` (at least two) with knots at the first
/// and last point and up to two between, with its worst relative error:
/// a breakpoint must cut the worst error by a third; None when no fit
/// rises.
fn best_knots(points: &[(f64, f64)]) -> Option<(f64, Vec<Segment>)> {
    let n = points.len();
    let fit = |knots: &[usize]| {
        knot_segments(points, knots).map(|s| (worst_relative_error(points, &s), s))
    };
    let mut best: Option<(f64, Vec<Segment>)> = fit(&[0, n - 1]);
    let improve =
        |best: &Option<(f64, Vec<Segment>)>, e: f64| best.as_ref().is_none_or(|b| e < b.0 * 0.67);
    for i in 1..n - 1 {
        if let Some((e, s)) = fit(&[0, i, n - 1])
            && improve(&best, e)
        {
            best = Some((e, s));
        }
    }
    let one_break = best.clone();
    for i in 1..n - 1 {
        for j in i + 1..n - 1 {
            if let Some((e, s)) = fit(&[0, i, j, n - 1])
                && improve(&one_break, e)
                && best.as_ref().is_none_or(|b| e < b.0)
            {
                best = Some((e, s));
            }
        }
    }
    best
}

/// The segments between consecutive `knots` (indices into `points`);
/// None unless every segment rises.
fn knot_segments(points: &[(f64, f64)], knots: &[usize]) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    for w in knots.windows(2) {
        let (a, b) = (points[w[0]], points[w[1]]);
        if b.0 <= a.0 || b.1 <= a.1 {
            return None;
        }
        out.push(Segment {
            from_bytes: a.0 as u64,
            to_bytes: b.0 as u64,
            base_s: a.1,
            per_byte_s: (b.1 - a.1) / (b.0 - a.0),
        });
    }
    Some(out)
}

/// The worst relative error of segments `s` over `points`.
fn worst_relative_error(points: &[(f64, f64)], s: &[Segment]) -> f64 {
    points
        .iter()
        .map(|&(b, t)| {
            let g = s
                .iter()
                .find(|g| b <= g.to_bytes as f64)
                .unwrap_or(&s[s.len() - 1]);
            let m = g.base_s + g.per_byte_s * (b - g.from_bytes as f64).max(0.0);
            ((m - t) / t).abs()
        })
        .fold(0.0, f64::max)
}

/// One segment over `points` (at least one) when nothing rises: its
/// per-byte cost the least-squares slope, or the largest size's time per
/// byte when that slope is not positive.
fn falling_fit(points: &[(f64, f64)]) -> Segment {
    let n = points.len();
    let (b, t) = points[n - 1];
    let slope = line_fit(points).map_or(0.0, |f| f.1);
    Segment {
        from_bytes: points[0].0 as u64,
        to_bytes: u64::MAX,
        base_s: points[0].1,
        per_byte_s: if slope > 0.0 { slope } else { t / b.max(1.0) },
    }
}

/// One link matrix `m` over `hosts` under `title`: rows the source
/// host, columns the destination, '-' where a cell has no figure.
fn link_table(out: &mut String, hosts: &[(String, Vec<u32>)], title: &str, m: &[Vec<Option<f64>>]) {
    use std::fmt::Write as _;
    let lw = hosts.iter().map(|h| h.0.len()).max().unwrap_or(0).max(6);
    let cw = (lw + 2).max(10);
    let _ = writeln!(
        out,
        "# Link matrix: {title} (rows: source host, columns: destination; median over the rank pairs between the hosts)"
    );
    let _ = write!(out, "{:<lw$}", "#");
    for (h, _) in hosts {
        let _ = write!(out, "{h:>cw$}");
    }
    let _ = writeln!(out);
    for (i, (h, _)) in hosts.iter().enumerate() {
        let _ = write!(out, "{h:<lw$}");
        for cell in &m[i] {
            match cell {
                Some(v) => {
                    let _ = write!(out, "{v:>cw$.2}");
                }
                None => {
                    let _ = write!(out, "{:>cw$}", "-");
                }
            }
        }
        let _ = writeln!(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_osu_m_takes_them() {
        assert_eq!(parse_bytes("4194304"), Ok(4 << 20));
        assert_eq!(parse_bytes("128M"), Ok(128 << 20));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        for bad in ["", "M", "12Q", "-4", "1.5M", "99999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(parse_max_size("64K"), Ok(64 << 10));
        assert!(parse_max_size("32K").is_err() && parse_max_size("2G").is_err());
    }

    #[test]
    fn streaming_bandwidth_is_read_at_the_largest_size_below() {
        let mut c = PairCost::logp(0, 1, 1e-6, 1e-10, 1e-7, 1e-7);
        assert_eq!(c.streaming_bps_at(8 << 20), None);
        c.sweep = [(1u64 << 20, 9000.0), (8 << 20, 5500.0), (32 << 20, 4400.0)]
            .into_iter()
            .map(|(bytes, mbps)| SizePoint {
                bytes,
                one_way: SampleStats::point(1e-3),
                bandwidth_mbps: mbps,
            })
            .collect();
        assert_eq!(c.streaming_bps_at(8 << 20), Some((8 << 20, 5.5e9)));
        assert_eq!(c.streaming_bps_at(20 << 20), Some((8 << 20, 5.5e9)));
        assert_eq!(c.streaming_bps_at(1 << 30), Some((32 << 20, 4.4e9)));
        assert_eq!(c.streaming_bps_at(4096), Some((1 << 20, 9.0e9)));
    }

    #[test]
    fn a_line_fit_takes_each_sizes_median() {
        // Distinct sizes: ordinary least squares, exact on a line.
        let (a, b) = line_fit(&[(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)]).unwrap();
        assert!(
            (a - 1.0).abs() < 1e-12 && (b - 2.0).abs() < 1e-12,
            "{a} {b}"
        );
        // The recorded reads of the doc comment: 40 ns/byte and no per-call
        // cost, one of the three small reads disturbed.
        let mut pts = vec![
            (622592.0, 25.0e-3),
            (622592.0, 25.15e-3),
            (622592.0, 38.0e-3),
        ];
        pts.extend([(3883008.0, 155.39e-3); 6]);
        let (o, r) = line_fit(&pts).unwrap();
        assert!(o < 0.5e-3, "per-call overhead {o}");
        assert!((r / 40e-9 - 1.0).abs() < 0.01, "per byte {r}");
        // Without the medians the disturbed read became 5.3 ms a call.
        let n = pts.len() as f64;
        let (mx, my) = pts
            .iter()
            .fold((0.0, 0.0), |s, p| (s.0 + p.0 / n, s.1 + p.1 / n));
        let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
        let plain_o = my - sxy / sxx * mx;
        assert!(plain_o > 5e-3, "plain least squares {plain_o}");
        // One size only: no line.
        assert!(line_fit(&[(8.0, 1.0), (8.0, 2.0)]).is_none());
    }

    fn two() -> ClusterProfile {
        let mut p = ClusterProfile::new(2, vec!["a".into(), "b".into()], "test");
        p.pairs.push(PairCost::logp(0, 1, 1e-6, 1e-10, 2e-7, 3e-7));
        p.pairs.push(PairCost::logp(1, 0, 1e-6, 1e-10, 2e-7, 3e-7));
        p
    }

    #[test]
    fn the_spec_links_print_beside_the_measured_ones() {
        let mut p = two();
        assert!(!p.link_tables().contains("spec"));
        p.links = vec![
            SpecLink {
                src: "a".into(),
                dst: "b".into(),
                rate_bps: Some(200e6),
                added_latency_s: 1e-3,
            },
            SpecLink {
                src: "b".into(),
                dst: "a".into(),
                rate_bps: Some(200e6),
                added_latency_s: 1e-3,
            },
        ];
        let t = p.link_tables();
        assert!(t.contains("the spec's rate"), "{t}");
        // 200 Mbit/s is 25 MB/s; the latency is 1000 us.
        assert!(t.contains("25.00") && t.contains("1000.00"), "{t}");
        let back: ClusterProfile = serde_json::from_str(&p.to_json()).unwrap();
        assert_eq!(back.links, p.links);
    }

    #[test]
    fn the_link_matrix_takes_the_median_over_the_rank_pairs_between_hosts() {
        // Ranks 0, 2 on host a; 1, 3 on host b; 4 alone on host c.
        let hosts: Vec<String> = ["a", "b", "a", "b", "c"].map(String::from).to_vec();
        let mut p = ClusterProfile::new(5, hosts, "test");
        let host = |r: u32| ["a", "b", "a", "b", "c"][r as usize];
        for s in 0..5u32 {
            for d in 0..5u32 {
                if s == d {
                    continue;
                }
                let mut c = PairCost::logp(s, d, 1e-6, 1e-10, 1e-7, 1e-7);
                // Bandwidth (MB/s) by host pair, the rank pair's numbers
                // spread around it; a-a 1000, a-b 100, with c 25.
                let base = match (host(s), host(d)) {
                    ("a", "a") | ("b", "b") => 1000.0,
                    ("c", _) | (_, "c") => 25.0,
                    _ => 100.0,
                };
                c.bandwidth_bps = (base + (s + d) as f64) * 1e6;
                c.one_way_small = SampleStats::point(if base == 25.0 { 80e-6 } else { 20e-6 });
                p.pairs.push(c);
            }
        }
        p.validate().unwrap();
        assert_eq!(
            p.host_ranks(),
            vec![
                ("a".to_string(), vec![0, 2]),
                ("b".to_string(), vec![1, 3]),
                ("c".to_string(), vec![4])
            ]
        );
        let m = p.link_matrix(|c| c.bandwidth_bps / 1e6);
        // a -> a: pairs 0->2 and 2->0, both 1002: 1002.
        assert_eq!(m[0][0], Some(1002.0));
        // a -> b: 0->1 101, 0->3 103, 2->1 103, 2->3 105: median 103.
        assert_eq!(m[0][1], Some(103.0));
        // c -> a: 4->0 29, 4->2 31: the mean of the middle two, 30.
        assert_eq!(m[2][0], Some(30.0));
        // c has one rank: no pair within it.
        assert_eq!(m[2][2], None);
        let text = p.link_tables();
        assert!(
            text.contains("# Hosts (ranks): a: 0,2; b: 1,3; c: 4"),
            "{text}"
        );
        assert!(text.contains("bandwidth at 1 MiB (MB/s)") && text.contains("8 B one-way"));
        let row_c = text
            .lines()
            .filter(|l| l.starts_with('c'))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .collect::<Vec<_>>();
        assert_eq!(row_c[0], vec!["c", "30.00", "31.00", "-"], "{text}");
        assert_eq!(row_c[1], vec!["c", "80.00", "80.00", "-"], "{text}");
        // One host: no link tables.
        let one = ClusterProfile::new(2, vec!["h".into(), "h".into()], "t");
        assert_eq!(one.link_tables(), "");
    }

    #[test]
    fn round_trip() {
        let p = two();
        assert_eq!(
            ClusterProfile::parse(&p.to_json(), Path::new("p")).unwrap(),
            p
        );
    }

    #[test]
    fn wrong_version_named() {
        let s = two().to_json().replace("\"version\": 2", "\"version\": 7");
        let e = ClusterProfile::parse(&s, Path::new("prof.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("prof.json") && e.contains("version 7"), "{e}");
    }

    #[test]
    fn missing_pair_named() {
        let mut p = two();
        p.pairs.pop();
        let e = ClusterProfile::parse(&p.to_json(), Path::new("p"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("pair 1->0 is missing"), "{e}");
    }

    #[test]
    fn garbage_is_corrupt() {
        let e = ClusterProfile::parse("{not json", Path::new("p")).unwrap_err();
        assert!(matches!(e, ProfileError::Corrupt { .. }));
    }

    #[test]
    fn dist_keeps_quantiles_and_histogram() {
        let samples: Vec<f64> = (1..=1000).map(|i| i as f64 * 1e-6).collect();
        let d = SampleStats::from_samples(&samples);
        assert_eq!(d.count, 1000);
        assert!((d.mean - 500.5e-6).abs() < 1e-12);
        assert!((d.p50 - 500e-6).abs() < 2e-6, "{}", d.p50);
        assert!((d.p99 - 990e-6).abs() < 2e-6, "{}", d.p99);
        let h = d.histogram().unwrap();
        assert_eq!(h.len(), 1000);
        let p99 = h.value_at_quantile(0.99) as f64 * 1e-9;
        assert!((p99 - 990e-6).abs() < 2e-6, "{p99}");
    }

    #[test]
    fn segments_of_a_sweep_that_never_rises_stay_positive() {
        // Time-shared ranks: every round trip costs about a scheduler tick.
        let pts: Vec<(f64, f64)> = (0..=22)
            .map(|k| (2f64.powi(k), 4e-3 - 1e-5 * k as f64))
            .collect();
        let s = fit_segments(&pts, None);
        assert_eq!(s.len(), 1, "{s:?}");
        assert!(s[0].per_byte_s > 0.0 && s[0].per_byte_s <= pts[22].1 / pts[22].0);
    }

    #[test]
    fn segments_find_the_protocol_switch() {
        // Eager up to 4 KiB (0.3 us + 0.1 ns/B), rendezvous above with a
        // 2 us handshake and 0.2 ns/B: the break lands at 4 KiB.
        let f = |b: f64| {
            if b <= 4096.0 {
                0.3e-6 + 0.1e-9 * b
            } else {
                2.0e-6 + 0.2e-9 * b
            }
        };
        let pts: Vec<(f64, f64)> = (0..=22).map(|k| (2f64.powi(k), f(2f64.powi(k)))).collect();
        let s = fit_segments(&pts, None);
        assert!(s.len() >= 2, "{s:?}");
        assert!(s.iter().all(|g| g.per_byte_s > 0.0), "{s:?}");
        let p = PairCost {
            segments: s,
            ..PairCost::logp(0, 1, 0.0, 0.0, 0.0, 0.0)
        };
        for &(b, t) in &pts {
            let m = p.one_way_s(b);
            assert!((m - t).abs() / t < 0.25, "{b}: {m} vs {t}");
        }
        assert!(pts.iter().any(|&(b, _)| {
            b == 4096.0
                && p.segments
                    .iter()
                    .any(|g| g.to_bytes == 4096 || g.from_bytes == 4096)
        }));
    }

    #[test]
    fn segments_fit_the_eager_and_rendezvous_sides_apart() {
        // TCP over 1 ms: eager messages take 1.07 ms + 8 ns/B up to the
        // 65480 B limit; above it the handshake adds two one-way trips.
        let eager = |b: f64| 1.07e-3 + 8e-9 * b;
        let rndv = |b: f64| 3.0 * 1.07e-3 + 12e-9 * b;
        let sizes = [1.0, 8.0, 64.0, 512.0, 4096.0, 8192.0, 65480.0];
        let mut pts: Vec<(f64, f64)> = sizes.iter().map(|&b| (b, eager(b))).collect();
        pts.extend([65536.0, 1048576.0, 4194304.0].map(|b| (b, rndv(b))));
        let s = fit_segments(&pts, Some(65480));
        let p = PairCost {
            segments: s.clone(),
            ..PairCost::logp(0, 1, 0.0, 0.0, 0.0, 0.0)
        };
        let want = |b: f64| if b <= 65480.0 { eager(b) } else { rndv(b) };
        for b in [16400.0, 32768.0, 65480.0, 65536.0, 262144.0, 4194304.0] {
            let (m, w) = (p.one_way_s(b), want(b));
            assert!((m - w).abs() / w < 0.02, "{b}: {m} vs {w} in {s:?}");
        }
        assert!(s.iter().any(|g| g.to_bytes == 65480), "{s:?}");
        // Without the limit (and its size) one line spans the switch and a
        // 16 KiB eager message pays part of the handshake.
        let without: Vec<(f64, f64)> = pts.iter().copied().filter(|p| p.0 != 65480.0).collect();
        let joined = PairCost {
            segments: fit_segments(&without, None),
            ..PairCost::logp(0, 1, 0.0, 0.0, 0.0, 0.0)
        };
        assert!(joined.one_way_s(16400.0) > 1.2 * eager(16400.0));
        // One size above the limit: it continues at the eager per-byte cost.
        let s = fit_segments(&pts[..8], Some(65480));
        let last = s.last().unwrap();
        assert_eq!((last.from_bytes, last.to_bytes), (65536, u64::MAX), "{s:?}");
        assert!((last.per_byte_s - 8e-9).abs() < 1e-10, "{s:?}");
    }

    /// Deterministic noise in [-1, 1) (an LCG; no dependency).
    fn noise(seed: &mut u64) -> f64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    #[test]
    fn two_latency_modes_are_found_with_their_shares() {
        // 60% of round trips near 0.30 us, 40% near 0.62 us (this VM's two
        // modes), each with ±5% noise, and 1% preempted outliers at 20 us.
        let mut seed = 7;
        let mut v = Vec::new();
        for i in 0..3000 {
            let base = if i % 5 < 3 { 0.30e-6 } else { 0.62e-6 };
            v.push(base * (1.0 + 0.05 * noise(&mut seed)));
        }
        v.extend((0..30).map(|_| 20e-6));
        let m = modes(&v, 0.0);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!((m[0].value - 0.30e-6).abs() < 0.02e-6, "{m:?}");
        assert!((m[1].value - 0.62e-6).abs() < 0.03e-6, "{m:?}");
        assert!((m[0].share - 1800.0 / 3030.0).abs() < 0.02, "{m:?}");
        // The outliers joined the slow mode rather than forming their own.
        assert_eq!(m[0].count + m[1].count, 3030);
        let d = SampleStats {
            modes: m,
            ..SampleStats::default()
        };
        assert_eq!(d.mode(ModeChoice::Dominant), d.modes.first());
        assert!((d.value(ModeChoice::Slow) - 0.62e-6).abs() < 0.03e-6);
        assert!(d.modes_text().unwrap().contains('|'));
    }

    #[test]
    fn a_tail_or_clock_ticks_make_one_mode() {
        // A unimodal figure with an exponential-ish tail.
        let mut seed = 3;
        let v: Vec<f64> = (0..2000)
            .map(|_| 1e-6 * (1.0 + 0.3 * noise(&mut seed).abs().powi(3)))
            .collect();
        assert_eq!(modes(&v, 0.0).len(), 1);
        // An 8-byte send timed with a 10 ns clock whose reading costs 25 ns:
        // 50, 60, 70, 80, 90 ns are ticks, not modes.
        let ticks: Vec<f64> = [
            (50, 20),
            (60, 320),
            (70, 570),
            (80, 490),
            (90, 220),
            (100, 60),
        ]
        .iter()
        .flat_map(|&(ns, k)| std::iter::repeat_n(ns as f64 * 1e-9, k))
        .collect();
        assert_eq!(modes(&ticks, 25e-9).len(), 1, "{:?}", modes(&ticks, 25e-9));
        // Too few samples: one mode.
        assert_eq!(modes(&[1e-6, 2e-6, 4e-6], 0.0).len(), 1);
        assert!(modes(&[], 0.0).is_empty());
    }

    #[test]
    fn the_mean_blends_the_big_modes_and_leaves_out_a_tail() {
        let m = |ns: f64, share: f64| Mode {
            value: ns * 1e-9,
            share,
            ..Mode::default()
        };
        // o_r as this VM gives it: two modes near half each, and a 5%
        // tail of preempted receives.
        let d = SampleStats {
            modes: vec![m(200.0, 0.46), m(320.0, 0.49), m(3000.0, 0.05)],
            p50: 300e-9,
            ..SampleStats::default()
        };
        let want = (0.46 * 200.0 + 0.49 * 320.0) / 0.95 * 1e-9;
        assert!((d.value(ModeChoice::Mean) - want).abs() < 1e-15);
        assert_eq!(d.value(ModeChoice::Dominant), d.modes[1].value);
        assert_eq!(d.value(ModeChoice::Fast), d.modes[0].value);
        assert_eq!(d.value(ModeChoice::Slow), d.modes[2].value);
        // A unimodal figure gives its mode; no modes, the median.
        let one = SampleStats {
            modes: vec![m(250.0, 1.0)],
            ..SampleStats::default()
        };
        assert_eq!(one.value(ModeChoice::Mean), one.modes[0].value);
        let none = SampleStats {
            p50: 7e-9,
            ..SampleStats::default()
        };
        assert_eq!(none.value(ModeChoice::Mean), 7e-9);
        // Every mode small (a spread-out figure): the largest still counts.
        let flat = SampleStats {
            modes: vec![m(100.0, 0.15), m(200.0, 0.18), m(300.0, 0.17)]
                .into_iter()
                .chain((0..5).map(|k| m(400.0 + 100.0 * k as f64, 0.1)))
                .collect(),
            ..SampleStats::default()
        };
        assert!((flat.value(ModeChoice::Mean) - 200e-9).abs() < 1e-18);
        assert_eq!("mean".parse::<ModeChoice>(), Ok(ModeChoice::Mean));
        assert_eq!(ModeChoice::default(), ModeChoice::Mean);
    }

    #[test]
    fn the_mean_text_names_the_share() {
        let pct = format!(">= {:.0}%", MEAN_MIN_SHARE * 100.0);
        assert!(MEAN_TEXT.contains(&pct), "{MEAN_TEXT}");
    }

    #[test]
    fn o_r_modes_60_percent_apart_on_10_percent_bins_are_two() {
        // The receive overhead of a 2-rank bench run on a VM (10 ns clock
        // reading in 20 ns): ~735 samples at 180-221 ns, ~720 at 300-351,
        // a few between. The bins are 10% wide there; a kernel of five
        // such bins filled the valley and gave one mode at 255 ns.
        let counts = [
            (180, 27),
            (190, 315),
            (200, 254),
            (210, 88),
            (220, 48),
            (230, 6),
            (240, 5),
            (250, 5),
            (260, 7),
            (280, 5),
            (290, 2),
            (300, 81),
            (310, 286),
            (320, 250),
            (330, 65),
            (340, 22),
            (350, 13),
            (400, 2),
            (800, 1),
            (10000, 1),
        ];
        let v: Vec<f64> = counts
            .iter()
            .flat_map(|&(ns, k)| std::iter::repeat_n(ns as f64 * 1e-9, k))
            .collect();
        let m = modes(&v, 20e-9);
        assert_eq!(m.len(), 2, "{m:?}");
        assert!((m[0].value - 198e-9).abs() < 8e-9, "{m:?}");
        assert!((m[1].value - 318e-9).abs() < 8e-9, "{m:?}");
    }

    #[test]
    fn rounds_give_the_spread_between_rounds() {
        let r = vec![vec![1.0, 1.0, 1.1], vec![2.0, 2.0], vec![1.5], vec![1.2]];
        let d = SampleStats::from_rounds(&r, 0.0);
        assert_eq!(d.rounds, vec![1.0, 2.0, 1.5, 1.2]);
        assert_eq!(d.count, 7);
        // Round medians 1.0 1.2 1.5 2.0: nearest-rank p25 = 1.2, p75 = 1.5,
        // p50 = 1.5 (index round(1.5) = 2).
        assert!(
            (d.spread_pct - 100.0 * 0.3 / 1.5).abs() < 1e-9,
            "{}",
            d.spread_pct
        );
    }

    #[test]
    fn with_mode_moves_overheads_latency_and_the_curve() {
        let mut p = two();
        let bimodal = |fast: f64, slow: f64| SampleStats {
            modes: vec![
                Mode {
                    value: fast,
                    share: 0.7,
                    ..Mode::default()
                },
                Mode {
                    value: slow,
                    share: 0.3,
                    ..Mode::default()
                },
            ],
            ..SampleStats::default()
        };
        let c = &mut p.pairs[0];
        c.one_way_small = bimodal(1.5e-6, 3.0e-6);
        c.o_recv = bimodal(3e-7, 6e-7);
        let before = c.one_way_s(1e6);
        let dom = p.with_mode(ModeChoice::Dominant);
        assert_eq!(dom.pairs[0].o_send_s, 2e-7, "no modes: kept");
        assert!((dom.pairs[0].one_way_s(1e6) - before).abs() < 1e-15);
        let mean = p.with_mode(ModeChoice::Mean);
        let c = &mean.pairs[0];
        assert!((c.o_recv_s - (0.7 * 3e-7 + 0.3 * 6e-7)).abs() < 1e-18);
        assert!((c.rtt_small_s - 2.0 * (0.7 * 1.5e-6 + 0.3 * 3.0e-6)).abs() < 1e-15);
        let slow = p.with_mode(ModeChoice::Slow);
        let c = &slow.pairs[0];
        assert_eq!(c.o_recv_s, 6e-7);
        assert!((c.rtt_small_s - 6e-6).abs() < 1e-15);
        assert!((c.latency_s - (3e-6 - 2e-7 - 6e-7)).abs() < 1e-15);
        assert!((c.one_way_s(1e6) - before - 1.5e-6).abs() < 1e-12);
        assert_eq!(slow.pairs[1], p.pairs[1], "a pair without modes is kept");
        assert_eq!(p.multi_modal().len(), 2);
    }
}
