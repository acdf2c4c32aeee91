//! The cluster profile: what one microbenchmark session (`mheta bench`,
//! crate `mheta-microbench`) measured of a cluster, stored as versioned
//! JSON. This crate owns the format and is the one typed API through which
//! the runtime reads it; it is MPI-free.
//!
//! Every measured figure is a [`Dist`]: mean, standard deviation, median,
//! 99th percentile and the HdrHistogram of the samples (V2 + DEFLATE,
//! base64), so that predictions can carry ranges. Costs are in seconds.
//! For an ordered pair (src, dst) a message of `b` bytes costs the sender
//! `o_send_s`, the receiver `o_recv_s`, and takes `one_way_s(b)` from the
//! start of the send to the end of the receive (LogP: o_s + L + G·b + o_r),
//! where `one_way_s` is piecewise linear with breakpoints where the MPI
//! library changes protocol ([`fit_segments`]).

use base64::Engine as _;
use hdrhistogram::serialization::Serializer as _;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The `format` field of every profile.
pub const FORMAT: &str = "mheta-cluster-profile";
/// Version of the profile layout; bump on incompatible change.
pub const VERSION: u32 = 2;

/// A measured quantity: summary statistics of its samples (seconds) and
/// their HdrHistogram (values in ns, 3 significant digits), serialised
/// with the V2 + DEFLATE format and base64.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Dist {
    pub count: u64,
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p99: f64,
    /// Empty when the figure is derived rather than sampled.
    #[serde(default)]
    pub hist: String,
}

impl Dist {
    /// The distribution of `samples` (seconds).
    pub fn from_samples(samples: &[f64]) -> Dist {
        if samples.is_empty() {
            return Dist::default();
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
        let q = |p: f64| sorted[(((sorted.len() - 1) as f64) * p).round() as usize];
        let mut buf = Vec::new();
        let hist =
            match hdrhistogram::serialization::V2DeflateSerializer::new().serialize(&h, &mut buf) {
                Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
                Err(_) => String::new(),
            };
        Dist {
            count: samples.len() as u64,
            mean,
            stdev: var.sqrt(),
            p50: q(0.5),
            p99: q(0.99),
            hist,
        }
    }

    /// A single derived value.
    pub fn point(v: f64) -> Dist {
        Dist {
            count: 1,
            mean: v,
            stdev: 0.0,
            p50: v,
            p99: v,
            hist: String::new(),
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
    pub one_way: Dist,
    /// Streaming bandwidth (window of 64 non-blocking sends), decimal MB/s.
    pub bandwidth_mbps: f64,
}

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
    #[serde(default)]
    pub o_send: Dist,
    #[serde(default)]
    pub o_recv: Dist,
    /// One-way time of an 8-byte message.
    #[serde(default)]
    pub one_way_small: Dist,
    #[serde(default)]
    pub sweep: Vec<SizePoint>,
    #[serde(default)]
    pub segments: Vec<Segment>,
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
            o_send: Dist::point(o_send_s),
            o_recv: Dist::point(o_recv_s),
            one_way_small: Dist::point(small),
            sweep: Vec::new(),
            segments: vec![Segment {
                from_bytes: 0,
                to_bytes: u64::MAX,
                base_s: small,
                per_byte_s,
            }],
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
    pub read: Vec<(u64, Dist)>,
    pub write: Vec<(u64, Dist)>,
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
    pub cpu_kernel: Dist,
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

    /// Check that every ordered pair is present once with sane costs.
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
            for (name, x) in [
                ("latency_s", c.latency_s),
                ("per_byte_s", c.per_byte_s),
                ("o_send_s", c.o_send_s),
                ("o_recv_s", c.o_recv_s),
            ] {
                if !x.is_finite() || x < 0.0 {
                    return Err(format!(
                        "pair {s}->{d}: {name} = {x} is not a finite non-negative time"
                    ));
                }
            }
            for w in c.segments.windows(2) {
                if w[1].from_bytes < w[0].to_bytes.min(w[0].from_bytes.max(1)) {
                    return Err(format!("pair {s}->{d}: segments out of order"));
                }
            }
            if c.segments
                .iter()
                .any(|g| !(g.per_byte_s.is_finite() && g.per_byte_s >= 0.0 && g.base_s >= 0.0))
            {
                return Err(format!(
                    "pair {s}->{d}: a segment has a negative or non-finite cost"
                ));
            }
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
pub fn line_fit(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if n < 2.0 {
        return None;
    }
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = (sxy / sxx).max(0.0);
    Some(((my - b * mx).max(0.0), b))
}

/// Fit the one-way time over message sizes as a continuous piecewise-linear
/// function through measured medians `(bytes, seconds)` (sorted by size):
/// knots at the first and last size and at up to two breakpoints chosen
/// where the MPI library changes protocol (eager to rendezvous, single
/// copy), i.e. where a knot most reduces the worst relative error. A
/// breakpoint must earn its place (cut the worst error by a third) and
/// every segment must rise, so every per-byte cost is positive (a jump at
/// a protocol switch becomes a short steep segment between the two sizes
/// around it). Falls back to one segment.
pub fn fit_segments(points: &[(f64, f64)]) -> Vec<Segment> {
    let n = points.len();
    if n < 2 {
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
    let segs = |knots: &[usize]| -> Option<Vec<Segment>> {
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
    };
    let err = |s: &[Segment]| -> f64 {
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
    };
    let mut best: Option<(f64, Vec<Segment>)> = segs(&[0, n - 1]).map(|s| (err(&s), s));
    let improve =
        |best: &Option<(f64, Vec<Segment>)>, e: f64| best.as_ref().is_none_or(|b| e < b.0 * 0.67);
    for i in 1..n - 1 {
        if let Some(s) = segs(&[0, i, n - 1]) {
            let e = err(&s);
            if improve(&best, e) {
                best = Some((e, s));
            }
        }
    }
    let one_break = best.clone();
    for i in 1..n - 1 {
        for j in i + 1..n - 1 {
            if let Some(s) = segs(&[0, i, j, n - 1]) {
                let e = err(&s);
                if improve(&one_break, e) && best.as_ref().is_none_or(|b| e < b.0) {
                    best = Some((e, s));
                }
            }
        }
    }
    let mut out = best.map(|b| b.1).unwrap_or_default();
    if let Some(last) = out.last_mut() {
        last.to_bytes = u64::MAX;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> ClusterProfile {
        let mut p = ClusterProfile::new(2, vec!["a".into(), "b".into()], "test");
        p.pairs.push(PairCost::logp(0, 1, 1e-6, 1e-10, 2e-7, 3e-7));
        p.pairs.push(PairCost::logp(1, 0, 1e-6, 1e-10, 2e-7, 3e-7));
        p
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
        let d = Dist::from_samples(&samples);
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
        let s = fit_segments(&pts);
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
}
