//! The fits of the profile: a line through (size, time) points
//! ([`line_fit`], per-call overhead and per-byte cost) and the pair's
//! piecewise-linear one-way time over message sizes, with its protocol
//! breakpoints and the eager limit ([`fit_segments`]).

use crate::format::Segment;

/// Least-squares line `y = a + b·x` through `points`, with `b` floored at 0
/// and `a` at 0 (costs are not negative); `None` with fewer than two
/// distinct `x`. Used for per-call overhead + per-byte cost fits.
///
/// Points of the same `x` enter as their median `y`, weighted by how many
/// there are, so one disturbed call among several of its size does not
/// tilt the line and charge its delay to every call as a per-call
/// overhead (the recorded case is in docs/design/microbench.md).
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
/// the handshake's jump stays between them: one line across the switch
/// carries the rendezvous round trip into every eager message between
/// (docs/design/microbench.md).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::PairCost;

    #[test]
    fn a_line_fit_takes_each_sizes_median() {
        // Distinct sizes: ordinary least squares, exact on a line.
        let (a, b) = line_fit(&[(1.0, 3.0), (2.0, 5.0), (4.0, 9.0)]).unwrap();
        assert!(
            (a - 1.0).abs() < 1e-12 && (b - 2.0).abs() < 1e-12,
            "{a} {b}"
        );
        // The recorded reads of docs/design/microbench.md: 40 ns/byte and no per-call
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
}
