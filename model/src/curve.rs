//! A rank's compute per row as a function of its rows: the row-cost curve.
//!
//! Beyond MHETA: section 4.2.1 scales a rank's recorded computation by
//! its share of the work, `T_Φ' = T_Φ · W'/W`, one cost a row whatever
//! the row count. On a real CPU a row costs more once a rank's arrays
//! outgrow a cache, and less when they fit (docs/design/fidelity.md
//! measures 0.92 to 1.09 of the cost at 1024 rows across 128 to 1792
//! rows of jacobi). A [`RowCurve`] holds, per rank, its cost a row
//! measured at several row counts, relative to one of them; the model
//! then scales by `W'/W · c(W')/c(W)` ([`RowCurve::factor`]), W the rows
//! recorded. `mheta experiment --row-curve ROUNDS` measures the curves in
//! real runs, interleaved (`cli/src/experiment/curve.rs`); this file holds
//! the curve and its file, `mheta-row-curve` (docs/FORMATS.md).

use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file's `format` field.
pub const FORMAT: &str = "mheta-row-curve";
/// The file's version.
pub const VERSION: u32 = 1;

/// A row-cost curve file that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CurveError {
    #[error("{path}: {why}")]
    File { path: String, why: String },
    #[error("rank {rank}: {why}")]
    Knots { rank: usize, why: String },
    #[error(
        "the row-cost curve was measured for {what_curve} but the model is of {what_model}; measure it again for this run"
    )]
    Mismatch {
        what_curve: String,
        what_model: String,
    },
}

/// One measured point of a rank's curve.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Knot {
    /// The rank's rows in the runs that measured it.
    pub rows: u64,
    /// Its compute a row over its compute a row at the reference rows,
    /// the median over the rounds of the ratio within each round.
    pub per_row_rel: f64,
    /// The percentile bootstrap 95% interval of `per_row_rel` (equal to
    /// it at the reference).
    pub ci95: [f64; 2],
    /// Rounds that gave a ratio.
    pub rounds: usize,
    /// The median iteration, seconds, of the runs that measured it (the
    /// period at which its rows were last touched, for the reuse term:
    /// [`RowCurve::knot_periods`]). Absent in files written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_s: Option<f64>,
}

impl Knot {
    /// `per_row_rel` where its 95% interval excludes 1, else 1: a cost a
    /// row that the rounds did not tell apart from the reference's is
    /// taken to be the reference's.
    pub fn resolved(&self) -> f64 {
        let [lo, hi] = self.ci95;
        if lo <= 1.0 && 1.0 <= hi {
            1.0
        } else {
            self.per_row_rel
        }
    }
}

/// One rank's measured knots.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct RankKnots {
    pub rank: usize,
    pub knots: Vec<Knot>,
}

/// The `mheta-row-curve` file: per rank, its cost a row at several row
/// counts, for one app, size and rank count.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct CurveFile {
    pub format: String,
    pub version: u32,
    /// The app's name and rows, as its declaration gives them.
    pub app: String,
    pub rows: u64,
    pub np: usize,
    /// Interleaved rounds of calibration runs.
    pub rounds: usize,
    /// The kernel's arguments in the runs that measured it (its sizes
    /// and CPU emulation).
    pub app_args: String,
    /// When the runs ended, seconds since the Unix epoch.
    pub ended_unix_s: u64,
    pub ranks: Vec<RankKnots>,
}

impl CurveFile {
    /// Read and check a curve file: its format, version, and one
    /// usable curve per rank.
    pub fn load(path: &Path) -> Result<CurveFile, CurveError> {
        let err = |why: String| CurveError::File {
            path: path.display().to_string(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let f: CurveFile =
            serde_json::from_str(&text).map_err(|e| err(format!("not a {FORMAT} file: {e}")))?;
        if f.format != FORMAT || f.version != VERSION {
            return Err(err(format!(
                "format {:?} version {}; expected {FORMAT:?} version {VERSION}",
                f.format, f.version
            )));
        }
        if f.ranks.len() != f.np {
            return Err(err(format!(
                "np is {} but {} ranks have curves",
                f.np,
                f.ranks.len()
            )));
        }
        f.curves().map_err(|e| err(e.to_string()))?;
        Ok(f)
    }

    /// Each rank's curve, in rank order. A knot whose 95% interval holds
    /// 1 is read as 1: the curve prices only the changes its rounds told
    /// apart from the host's noise ([`Knot::resolved`]).
    pub fn curves(&self) -> Result<Vec<RowCurve>, CurveError> {
        let mut ranks: Vec<&RankKnots> = self.ranks.iter().collect();
        ranks.sort_by_key(|r| r.rank);
        ranks
            .iter()
            .enumerate()
            .map(|(i, r)| {
                if r.rank != i {
                    return Err(CurveError::Knots {
                        rank: r.rank,
                        why: format!("ranks must be 0..{} once each", self.np),
                    });
                }
                let c = RowCurve::new(i, r.knots.iter().map(|k| (k.rows, k.resolved())).collect())?;
                let periods: Option<Vec<(u64, f64, f64)>> = (r.knots.iter())
                    .map(|k| k.period_s.map(|t| (k.rows, t, k.per_row_rel)))
                    .collect();
                Ok(match periods {
                    Some(t) => c.with_periods(t),
                    None => c,
                })
            })
            .collect()
    }

    /// The curves, checked against the model's app, rows and ranks.
    pub fn curves_for(&self, app: &str, rows: u64, np: usize) -> Result<Vec<RowCurve>, CurveError> {
        if (self.app.as_str(), self.rows, self.np) != (app, rows, np) {
            return Err(CurveError::Mismatch {
                what_curve: format!("{} with {} rows on {} ranks", self.app, self.rows, self.np),
                what_model: format!("{app} with {rows} rows on {np} ranks"),
            });
        }
        self.curves()
    }
}

/// A rank's cost a row over its rows, relative. Its time `rows · cost`
/// is piecewise linear between the knots (so it never falls as rows
/// grow), and the cost a row flat beyond the first and the last knot (the
/// curve is not extrapolated past what was measured).
#[derive(Clone, Debug, PartialEq)]
pub struct RowCurve {
    /// (rows, cost a row relative to the reference), rows increasing,
    /// `rows · cost` non-decreasing.
    knots: Vec<(f64, f64)>,
    /// (rows, the iteration of the runs that measured the knot, its
    /// measured cost a row whether resolved or not), rows increasing,
    /// where every knot has a period.
    periods: Option<Vec<(f64, f64, f64)>>,
}

impl RowCurve {
    /// A curve from (rows, relative cost a row) knots of `rank`. Every
    /// cost must be finite and positive, and rows positive and distinct.
    /// A rank's time `rows · cost` must not fall as rows grow (more rows
    /// cannot take less time; GBS bisects on that order): a knot below
    /// the previous knot's time is raised to it.
    pub fn new(rank: usize, mut knots: Vec<(u64, f64)>) -> Result<RowCurve, CurveError> {
        let bad = |why: String| Err(CurveError::Knots { rank, why });
        if knots.is_empty() {
            return bad("no knots".into());
        }
        if let Some(&(r, c)) = knots
            .iter()
            .find(|(r, c)| *r == 0 || !(c.is_finite() && *c > 0.0))
        {
            return bad(format!(
                "knot ({r} rows, {c}): rows must be positive and the cost finite and positive"
            ));
        }
        knots.sort_by_key(|k| k.0);
        if let Some(w) = knots.windows(2).find(|w| w[0].0 == w[1].0) {
            return bad(format!("two knots at {} rows", w[0].0));
        }
        let mut out: Vec<(f64, f64)> = Vec::with_capacity(knots.len());
        for (r, c) in knots {
            let r = r as f64;
            let c = match out.last() {
                Some(&(pr, pc)) => c.max(pr * pc / r),
                None => c,
            };
            out.push((r, c));
        }
        Ok(RowCurve {
            knots: out,
            periods: None,
        })
    }

    /// The same curve with, for each knot, the iteration, seconds, of
    /// the runs behind it and its measured cost a row (rows, period,
    /// cost: the rounds' median, resolved or not). Periods or costs that
    /// are not finite and positive leave the curve without any.
    pub fn with_periods(mut self, mut periods: Vec<(u64, f64, f64)>) -> RowCurve {
        periods.sort_by_key(|p| p.0);
        periods.dedup_by_key(|p| p.0);
        let ok = |x: f64| x.is_finite() && x > 0.0;
        self.periods =
            (!periods.is_empty() && periods.iter().all(|p| ok(p.1) && ok(p.2))).then(|| {
                periods
                    .into_iter()
                    .map(|(r, t, c)| (r as f64, t, c))
                    .collect()
            });
        self
    }

    /// Each knot as (rows, its measured cost a row, the iteration of its
    /// runs), where the curve has periods. The cost is the rounds' median
    /// even where its interval holds 1: eq. R4 fits over the knots
    /// together, one knot's noise one point among several
    /// ([`crate::reuse::Reuse::fit_sensitivity`]).
    pub fn knots_with_periods(&self) -> Option<Vec<(f64, f64, f64)>> {
        let p = self.aligned_periods()?;
        Some(p.iter().map(|&(r, t, c)| (r, c, t)).collect())
    }

    /// The periods, where there is one for each knot at the knot's rows.
    fn aligned_periods(&self) -> Option<&[(f64, f64, f64)]> {
        let p = self.periods.as_deref()?;
        (p.len() == self.knots.len() && p.iter().zip(&self.knots).all(|(a, b)| a.0 == b.0))
            .then_some(p)
    }

    /// The iteration at which the curve's cost a row at `rows` was
    /// measured: linear in rows between knots, the nearest knot's beyond
    /// them; None for a curve without periods. At the recorded rows (a
    /// knot: the curve's reference) it is the period eq. R4 fits from
    /// ([`crate::Model::with_row_curves`]); elsewhere the term reads each
    /// knot's own ([`RowCurve::knot_periods`]).
    pub fn period(&self, rows: f64) -> Option<f64> {
        let k = self.periods.as_deref()?;
        let i = k.partition_point(|&(r, _, _)| r < rows);
        if i == 0 {
            return Some(k[0].1);
        }
        if i == k.len() {
            return Some(k[i - 1].1);
        }
        let ((r0, t0, _), (r1, t1, _)) = (k[i - 1], k[i]);
        Some(t0 + (t1 - t0) * (rows - r0) / (r1 - r0))
    }

    /// The knots the cost a row at `rows` reads, each as (its share of
    /// the rank's time there, the iteration of its runs): the nearest
    /// knot alone beyond the ends, else the two around `rows`, shared as
    /// [`RowCurve::per_row`] interpolates the time; None for a curve
    /// without periods. Each knot's cost was measured at its own period,
    /// and two neighbours can differ by several times (one side of a
    /// rank's out-of-core crossing and the other), so the reuse term
    /// takes each from its own period rather than from one between them
    /// (eq. R5, [`crate::reuse::Reuse::factors`]).
    pub fn knot_periods(&self, rows: f64) -> Option<[(f64, f64); 2]> {
        let p = self.aligned_periods()?;
        let k = &self.knots;
        let i = k.partition_point(|&(r, _)| r < rows);
        if i == 0 || i == k.len() {
            let t = p[if i == 0 { 0 } else { k.len() - 1 }].1;
            return Some([(1.0, t), (0.0, t)]);
        }
        let a = (rows - k[i - 1].0) / (k[i].0 - k[i - 1].0);
        let x0 = (1.0 - a) * k[i - 1].0 * k[i - 1].1;
        let x1 = a * k[i].0 * k[i].1;
        let w1 = x1 / (x0 + x1);
        Some([(1.0 - w1, p[i - 1].1), (w1, p[i].1)])
    }

    /// The relative cost a row at `rows` (> 0).
    pub fn per_row(&self, rows: f64) -> f64 {
        let k = &self.knots;
        let i = k.partition_point(|&(r, _)| r < rows);
        if i == 0 {
            return k[0].1;
        }
        if i == k.len() {
            return k[i - 1].1;
        }
        let ((r0, c0), (r1, c1)) = (k[i - 1], k[i]);
        let (t0, t1) = (r0 * c0, r1 * c1);
        (t0 + (t1 - t0) * (rows - r0) / (r1 - r0)) / rows
    }

    /// `c(W') / c(W)`: what a row costs at `rows` over what it cost at
    /// `recorded` rows. 1 for a flat curve.
    pub fn factor(&self, rows: f64, recorded: f64) -> f64 {
        self.per_row(rows) / self.per_row(recorded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_interpolates_between_knots_and_is_flat_beyond_them() {
        let c = RowCurve::new(0, vec![(1024, 1.0), (256, 0.9), (1792, 1.1)]).unwrap();
        assert_eq!(c.per_row(100.0), 0.9);
        assert_eq!(c.per_row(5000.0), 1.1);
        // The time is linear between knots: at 640 rows, halfway from
        // 256 x 0.9 to 1024 x 1.0 is 627.2, so 0.98 a row.
        assert!((c.per_row(640.0) - 0.98).abs() < 1e-12);
        assert!((c.per_row(1408.0) - (1024.0 + 0.5 * (1971.2 - 1024.0)) / 1408.0).abs() < 1e-12);
        assert_eq!(c.per_row(1024.0), 1.0);
        assert!((c.factor(1792.0, 1024.0) - 1.1).abs() < 1e-12);
        assert!((c.factor(256.0, 1792.0) - 0.9 / 1.1).abs() < 1e-12);
        // One knot: the paper's constant cost a row.
        let flat = RowCurve::new(1, vec![(1024, 1.0)]).unwrap();
        assert_eq!(flat.factor(10.0, 1024.0), 1.0);
    }

    #[test]
    fn a_knot_that_would_make_more_rows_take_less_time_is_raised() {
        // 512 rows at 0.4 would take 204.8 < 256 rows at 0.9 (230.4).
        let c = RowCurve::new(0, vec![(256, 0.9), (512, 0.4), (1024, 1.0)]).unwrap();
        assert!((c.per_row(512.0) - 0.45).abs() < 1e-12);
        assert!((c.per_row(256.0) - 0.9).abs() < 1e-12);
        let t = |r: f64| r * c.per_row(r);
        let mut last = 0.0;
        for r in (1..=4096).map(f64::from) {
            assert!(t(r) >= last - 1e-9, "time falls at {r} rows");
            last = t(r);
        }
    }

    #[test]
    fn bad_knots_are_refused_with_the_rank() {
        let e = RowCurve::new(3, vec![(0, 1.0)]).unwrap_err();
        assert!(e.to_string().starts_with("rank 3: knot (0 rows"), "{e}");
        let e = RowCurve::new(1, vec![(10, f64::NAN)]).unwrap_err();
        assert!(e.to_string().contains("finite and positive"), "{e}");
        let e = RowCurve::new(0, vec![(10, 1.0), (10, 1.1)]).unwrap_err();
        assert_eq!(e.to_string(), "rank 0: two knots at 10 rows");
        assert!(RowCurve::new(0, vec![]).is_err());
    }

    fn file(np: usize) -> CurveFile {
        CurveFile {
            format: FORMAT.into(),
            version: VERSION,
            app: "jacobi".into(),
            rows: 2048,
            np,
            rounds: 5,
            app_args: "--n 2048".into(),
            ended_unix_s: 1_796_000_000,
            ranks: (0..np)
                .map(|rank| RankKnots {
                    rank,
                    knots: vec![
                        Knot {
                            rows: 1024,
                            per_row_rel: 1.0,
                            ci95: [1.0, 1.0],
                            rounds: 5,
                            period_s: Some(0.2),
                        },
                        Knot {
                            rows: 1536,
                            per_row_rel: 1.05,
                            ci95: [1.0, 1.1],
                            rounds: 5,
                            period_s: Some(0.1),
                        },
                    ],
                })
                .collect(),
        }
    }

    #[test]
    fn a_curve_file_round_trips_and_names_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("mheta-curve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("curve.json");
        std::fs::write(&p, serde_json::to_string(&file(2)).unwrap()).unwrap();
        let f = CurveFile::load(&p).unwrap();
        let c = f.curves_for("jacobi", 2048, 2).unwrap();
        assert_eq!(c.len(), 2);
        // 1.05 at 1536 rows, but its interval [1.0, 1.1] holds 1: read as 1.
        assert_eq!(c[0].factor(1536.0, 1024.0), 1.0);
        let mut g = file(2);
        g.ranks[1].knots[1].ci95 = [1.02, 1.1];
        assert!((g.curves().unwrap()[1].factor(1536.0, 1024.0) - 1.05).abs() < 1e-12);
        // Each knot's period, linear between them and flat beyond.
        assert_eq!(c[0].period(1024.0), Some(0.2));
        assert!((c[0].period(1280.0).unwrap() - 0.15).abs() < 1e-12);
        assert_eq!(c[0].period(4000.0), Some(0.1));
        // Eq. R5 reads the knots around the rows, each with its share of
        // the time (1024 · 1 and 1536 · 1 halved at 1280 rows: 2 to 3).
        assert_eq!(c[0].knot_periods(1024.0), Some([(1.0, 0.2), (0.0, 0.2)]));
        assert_eq!(c[0].knot_periods(4000.0), Some([(1.0, 0.1), (0.0, 0.1)]));
        let [(w0, t0), (w1, t1)] = c[0].knot_periods(1280.0).unwrap();
        assert!(
            (w0 - 0.4).abs() < 1e-12 && (w1 - 0.6).abs() < 1e-12,
            "{w0} {w1}"
        );
        assert_eq!((t0, t1), (0.2, 0.1));
        // Eq. R4 reads each knot's median, resolved or not.
        assert_eq!(
            c[0].knots_with_periods().unwrap(),
            vec![(1024.0, 1.0, 0.2), (1536.0, 1.05, 0.1)]
        );
        // A file without periods (or one knot without) gives none.
        let mut g = file(2);
        g.ranks[0].knots[1].period_s = None;
        let text = serde_json::to_string(&g).unwrap();
        assert_eq!(text.matches("period_s").count(), 3);
        assert_eq!(g.curves().unwrap()[0].period(1024.0), None);
        assert_eq!(g.curves().unwrap()[0].knot_periods(1024.0), None);
        assert_eq!(g.curves().unwrap()[1].period(1024.0), Some(0.2));
        let e = f.curves_for("jacobi", 2048, 4).unwrap_err().to_string();
        assert!(e.contains("jacobi with 2048 rows on 2 ranks"), "{e}");
        // A rank missing.
        let mut g = file(2);
        g.ranks.pop();
        std::fs::write(&p, serde_json::to_string(&g).unwrap()).unwrap();
        let e = CurveFile::load(&p).unwrap_err().to_string();
        assert!(e.contains("np is 2 but 1 ranks have curves"), "{e}");
        // Not JSON, and a missing file: both name the path.
        std::fs::write(&p, "{").unwrap();
        let e = CurveFile::load(&p).unwrap_err().to_string();
        assert!(e.starts_with(&p.display().to_string()), "{e}");
        let e = CurveFile::load(&dir.join("none.json"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("none.json"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
