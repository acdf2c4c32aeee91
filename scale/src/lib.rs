//! mheta-scale owns Romanazzi and Jimack's multilevel scaling model: a run's time is
//! T = T_comp(work) + T_comm (eq. 1) with T_comm = α(np) + γ(np)·work
//! (eq. 2), α(np) ≈ c + d·log2(np) (eq. 3) and γ(np) constant (eq. 4),
//! where work is the memory per process in MB. It fits T_comp from
//! single-process runs at two sizes, and c, d and γ together by least
//! squares over the runs at small process counts np0 with the work per
//! process held fixed (α(np0) and γ(np0) of each np0 are kept to inspect); it predicts a run on one host group
//! or split over several (the slowest part plus the cost of the link
//! between groups, eq. 5 plus a fitted link term), answers the paper's
//! two scenarios (the fastest resources for a grid; the largest grid a
//! time budget allows), and reads and writes the versioned fit file. It
//! runs nothing: the measurements come from `mheta scale fit`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The fit file's format version.
pub const FIT_VERSION: u32 = 1;

/// What can go wrong; every message names its culprit.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    #[error("{what}: a line needs at least two distinct x values, got {got:?}")]
    TooFewPoints { what: String, got: Vec<f64> },
    #[error("{what}: {value} is not a finite number")]
    NotFinite { what: String, value: f64 },
    #[error("{what}: np must be at least 1")]
    ZeroNp { what: String },
    #[error("group {0:?} is not in the fit (groups: {1})")]
    NoGroup(String, String),
    #[error(
        "a run split over groups needs the link term, which this fit lacks (fit it with split runs)"
    )]
    NoLink,
    #[error("{path}: {detail}")]
    File { path: String, detail: String },
    #[error("{0}")]
    Input(String),
}

type Result<T> = std::result::Result<T, ScaleError>;

/// One measured run: `np` processes, `work_mb` per process, time `time_s`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub np: u32,
    pub work_mb: f64,
    pub time_s: f64,
}

/// y = intercept + slope·x.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Line {
    pub intercept: f64,
    pub slope: f64,
}

impl Line {
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }
}

fn finite(what: &str, v: f64) -> Result<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(ScaleError::NotFinite {
            what: what.into(),
            value: v,
        })
    }
}

/// The least-squares line through (xs, ys); `what` names the data in
/// errors. Needs two distinct x values.
pub fn least_squares(what: &str, xs: &[f64], ys: &[f64]) -> Result<Line> {
    if xs.len() != ys.len() {
        return Err(ScaleError::Input(format!(
            "{what}: {} x values but {} y values",
            xs.len(),
            ys.len()
        )));
    }
    for (&x, &y) in xs.iter().zip(ys) {
        finite(what, x)?;
        finite(what, y)?;
    }
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if xs.len() < 2 || sxx <= 1e-12 * mx.abs().max(1.0).powi(2) {
        return Err(ScaleError::TooFewPoints {
            what: what.into(),
            got: xs.to_vec(),
        });
    }
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = sxy / sxx;
    Ok(Line {
        intercept: my - slope * mx,
        slope,
    })
}

/// Romanazzi and Jimack eq. 1: T = T_comp + T_comm.
pub fn eq1_total(t_comp: f64, t_comm: f64) -> f64 {
    t_comp + t_comm
}

/// Romanazzi and Jimack eq. 2: T_comm = α(np) + γ(np)·work (work in MB per process).
pub fn eq2_comm(alpha: f64, gamma: f64, work_mb: f64) -> f64 {
    alpha + gamma * work_mb
}

/// Romanazzi and Jimack eq. 3: α(np) ≈ c + d·log2(np).
pub fn eq3_alpha(c: f64, d: f64, np: u32) -> f64 {
    c + d * f64::from(np).log2()
}

/// Memory per process in MB of `rows` rows of `cols` points at
/// `bytes_per_point` bytes (all of a process's arrays per grid point).
pub fn work_mb(rows: f64, cols: u64, bytes_per_point: f64) -> f64 {
    rows * cols as f64 * bytes_per_point / 1e6
}

/// Rows of the busiest process when `rows` are split in equal blocks over
/// `np` processes.
pub fn busiest_rows(rows: u64, np: u32) -> f64 {
    rows.div_ceil(u64::from(np.max(1))) as f64
}

/// α(np0) and γ(np0) of eq. 2 fitted at one process count.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct NpFit {
    pub np: u32,
    pub alpha: f64,
    pub gamma: f64,
}

/// Romanazzi and Jimack eqs. 2–4 fitted together: the least-squares
/// (c, d, γ) of T_comm = c + d·log2(np) + γ·work over every parallel
/// sample, given as ([1, log2(np), work], T − T_comp(work)) rows.
///
/// The paper takes γ from the largest np0 alone (its γ(8)) and c, d
/// through the per-np0 intercepts. On this machine that γ is the
/// difference of two noisy times at one np0 (jacobi on grid2, clock,
/// 2026-11-28: γ(np0) ran from −0.03 to +0.49 ms/MB over np0 2..8, where
/// jacobi's messages do not grow with its rows at all); one γ from all the
/// samples beat or matched it in 7 of 8 held-out comparisons there
/// (docs/design/scale.md, "Which term was wrong"). With exactly two np0
/// at two sizes each it is still a least-squares fit (4 samples, 3
/// unknowns), not an interpolation.
pub fn eqs2to4_joint(rows: &[([f64; 3], f64)]) -> Result<[f64; 3]> {
    let what = "eqs. 2-4 over the parallel samples";
    let mut a = [[0.0f64; 3]; 3];
    let mut b = [0.0f64; 3];
    for (x, y) in rows {
        for v in x.iter().chain(std::iter::once(y)) {
            finite(what, *v)?;
        }
        for i in 0..3 {
            b[i] += x[i] * y;
            for j in 0..3 {
                a[i][j] += x[i] * x[j];
            }
        }
    }
    // Gaussian elimination with partial pivoting on the normal equations.
    let scale = a
        .iter()
        .flatten()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(1.0);
    for col in 0..3 {
        let piv = (col..3)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        if a[piv][col].abs() <= 1e-12 * scale {
            return Err(ScaleError::TooFewPoints {
                what: format!("{what} (need two np0 and two work sizes)"),
                got: rows.iter().map(|r| r.0[1]).collect(),
            });
        }
        a.swap(col, piv);
        b.swap(col, piv);
        let (prow, pb) = (a[col], b[col]);
        for (r, (row, br)) in a.iter_mut().zip(b.iter_mut()).enumerate() {
            if r != col {
                let f = row[col] / prow[col];
                for (x, p) in row.iter_mut().zip(prow) {
                    *x -= f * p;
                }
                *br -= f * pb;
            }
        }
    }
    Ok([b[0] / a[0][0], b[1] / a[1][1], b[2] / a[2][2]])
}

/// Eqs. 3–4 fitted as the paper does: c and d through the (np0, α(np0))
/// points, γ of the largest np0 alone. Kept beside the joint fit so that
/// `mheta scale check` can show both on the same runs.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct AsPublished {
    pub gamma: f64,
    pub c: f64,
    pub d: f64,
}

/// One host group's fitted model.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GroupFit {
    /// T_comp(work) from the single-process runs (step 1).
    pub comp: Line,
    /// α and γ at each small process count (step 3).
    pub per_np: Vec<NpFit>,
    /// Eq. 4: one γ for every np, fitted with c and d over all the
    /// parallel samples ([`eqs2to4_joint`]).
    pub gamma: f64,
    /// Eq. 3's c and d (step 4, with γ).
    pub c: f64,
    pub d: f64,
    /// The paper's own fit of c, d and γ on the same samples (absent
    /// from fit files written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_published: Option<AsPublished>,
}

/// A prediction's parts, seconds.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    pub comp_s: f64,
    pub comm_s: f64,
    pub total_s: f64,
}

impl GroupFit {
    /// Steps 1–4 of Romanazzi and Jimack's methodology from single-process samples
    /// (np 1, two or more work sizes) and parallel samples (two or more
    /// process counts np0 > 1, each at two or more work sizes).
    pub fn fit(single: &[Sample], parallel: &[Sample]) -> Result<GroupFit> {
        if let Some(s) = single.iter().find(|s| s.np != 1) {
            return Err(ScaleError::Input(format!(
                "single-process samples: a sample has np {}",
                s.np
            )));
        }
        let (xs, ys): (Vec<f64>, Vec<f64>) = single.iter().map(|s| (s.work_mb, s.time_s)).unzip();
        let comp = least_squares("T_comp(work) from the single-process runs", &xs, &ys)?;
        let mut nps: Vec<u32> = parallel.iter().map(|s| s.np).collect();
        nps.sort_unstable();
        nps.dedup();
        if let Some(&np) = nps.first().filter(|&&np| np < 2) {
            return Err(ScaleError::Input(format!(
                "parallel samples: np {np} is not a parallel run"
            )));
        }
        let mut per_np = Vec::new();
        for &np in &nps {
            let (xs, ys): (Vec<f64>, Vec<f64>) = parallel
                .iter()
                .filter(|s| s.np == np)
                .map(|s| (s.work_mb, s.time_s - comp.at(s.work_mb)))
                .unzip();
            let l = least_squares(&format!("eq. 2 at np {np}"), &xs, &ys)?;
            per_np.push(NpFit {
                np,
                alpha: l.intercept,
                gamma: l.slope,
            });
        }
        if per_np.len() < 2 {
            return Err(ScaleError::TooFewPoints {
                what: "eq. 3 through (np0, α(np0))".into(),
                got: per_np.iter().map(|f| f64::from(f.np).log2()).collect(),
            });
        }
        let rows: Vec<([f64; 3], f64)> = parallel
            .iter()
            .map(|s| {
                (
                    [1.0, f64::from(s.np).log2(), s.work_mb],
                    s.time_s - comp.at(s.work_mb),
                )
            })
            .collect();
        let [c, d, gamma] = eqs2to4_joint(&rows)?;
        let (xs, ys): (Vec<f64>, Vec<f64>) = per_np
            .iter()
            .map(|f| (f64::from(f.np).log2(), f.alpha))
            .unzip();
        let cd = least_squares("eq. 3 through (np0, α(np0))", &xs, &ys)?;
        let as_published = Some(AsPublished {
            gamma: per_np.last().map_or(0.0, |f| f.gamma),
            c: cd.intercept,
            d: cd.slope,
        });
        Ok(GroupFit {
            comp,
            per_np,
            gamma,
            c,
            d,
            as_published,
        })
    }

    /// This group's model with the paper's own c, d and γ, if kept.
    pub fn as_published(&self) -> Option<GroupFit> {
        self.as_published.map(|p| GroupFit {
            gamma: p.gamma,
            c: p.c,
            d: p.d,
            as_published: None,
            ..self.clone()
        })
    }

    /// Steps 5–6: T at `np` processes with `work_mb` each (eqs. 1–4); a
    /// single process has no communication.
    pub fn predict(&self, np: u32, work_mb: f64) -> Result<Prediction> {
        if np == 0 {
            return Err(ScaleError::ZeroNp {
                what: "predict".into(),
            });
        }
        finite("work_mb", work_mb)?;
        let comp_s = self.comp.at(work_mb);
        let comm_s = if np == 1 {
            0.0
        } else {
            eq2_comm(eq3_alpha(self.c, self.d, np), self.gamma, work_mb)
        };
        Ok(Prediction {
            comp_s,
            comm_s,
            total_s: eq1_total(comp_s, comm_s),
        })
    }
}

/// A run's processes per host group (group name, np), in rank order.
pub type Parts = Vec<(String, u32)>;

/// Parse `a=4,b=4` (or `a4+b4`-free plain `a=8`) into parts; an error
/// names the bad item.
pub fn parse_parts(s: &str) -> Result<Parts> {
    let mut out = Vec::new();
    for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (g, n) = item.split_once('=').ok_or_else(|| {
            ScaleError::Input(format!("{s:?}: {item:?} is not GROUP=NP (e.g. a=4,b=4)"))
        })?;
        let np: u32 = n
            .trim()
            .parse()
            .ok()
            .filter(|&n: &u32| n > 0)
            .ok_or_else(|| {
                ScaleError::Input(format!("{s:?}: {n:?} is not a process count >= 1"))
            })?;
        out.push((g.trim().to_string(), np));
    }
    if out.is_empty() {
        return Err(ScaleError::Input(format!("{s:?}: no GROUP=NP")));
    }
    Ok(out)
}

/// The fit file: per host group the fitted model, and the link term.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FitFile {
    pub version: u32,
    /// The kernel (mg, jacobi) and its column count N (the message length).
    pub app: String,
    pub n: u64,
    /// Bytes of a process's arrays per grid point (work = rows·N·this).
    pub bytes_per_point: f64,
    /// Iterations per run; times are per iteration (the runs' medians).
    pub iters: u64,
    /// The cluster spec and the CPU emulation the runs used.
    pub spec: String,
    pub emulation: String,
    pub groups: BTreeMap<String, GroupFit>,
    /// Seconds a run split over groups adds beyond its slowest part (the
    /// link between groups), fitted from split runs; None when none ran.
    pub link_s: Option<f64>,
    /// The link term fitted against the paper's own group fits
    /// ([`GroupFit::as_published`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_s_as_published: Option<f64>,
    /// Every measured run: group label ("a", "b", or "a+b" for a split),
    /// then the sample.
    pub samples: Vec<(String, Sample)>,
}

impl FitFile {
    /// Read a fit file; errors name the file.
    pub fn load(path: &Path) -> Result<FitFile> {
        let err = |detail: String| ScaleError::File {
            path: path.display().to_string(),
            detail,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| err(format!("not JSON: {e}")))?;
        match v.get("version").and_then(serde_json::Value::as_u64) {
            Some(x) if x == u64::from(FIT_VERSION) => {}
            Some(x) => {
                return Err(err(format!(
                    "fit file version {x}, this mheta reads version {FIT_VERSION}: fit again with `mheta scale fit`"
                )));
            }
            None => {
                return Err(err(
                    "no \"version\" field: not a fit file of `mheta scale fit`".into(),
                ));
            }
        }
        serde_json::from_value(v).map_err(|e| err(format!("not a fit file: {e}")))
    }

    /// Write the fit file (pretty JSON).
    pub fn save(&self, path: &Path) -> Result<()> {
        let text =
            serde_json::to_string_pretty(self).map_err(|e| ScaleError::Input(e.to_string()))?;
        std::fs::write(path, text + "\n").map_err(|e| ScaleError::File {
            path: path.display().to_string(),
            detail: e.to_string(),
        })
    }

    /// The same fit with every group's c, d and γ as the paper fits them
    /// (and the link fitted against those); None when the file lacks them.
    pub fn as_published(&self) -> Option<FitFile> {
        let mut groups = BTreeMap::new();
        for (g, f) in &self.groups {
            groups.insert(g.clone(), f.as_published()?);
        }
        if self.link_s.is_some() && self.link_s_as_published.is_none() {
            return None;
        }
        Some(FitFile {
            groups,
            link_s: self.link_s_as_published,
            link_s_as_published: None,
            ..self.clone()
        })
    }

    pub fn group(&self, g: &str) -> Result<&GroupFit> {
        self.groups.get(g).ok_or_else(|| {
            ScaleError::NoGroup(
                g.into(),
                self.groups.keys().cloned().collect::<Vec<_>>().join(", "),
            )
        })
    }

    /// Work per process (MB) of the busiest process when `rows` rows are
    /// split in equal blocks over `np` processes.
    pub fn work_of(&self, rows: u64, np: u32) -> f64 {
        work_mb(busiest_rows(rows, np), self.n, self.bytes_per_point)
    }

    /// A run of `rows` rows (of N) split in equal blocks over `parts`:
    /// each group's part is predicted by its own fit at the group's np
    /// and the busiest process's work; the run takes the slowest part
    /// (Romanazzi and Jimack eq. 5, T = max(T_A, T_B)) plus, when split, the link.
    pub fn predict(&self, parts: &[(String, u32)], rows: u64) -> Result<f64> {
        let np: u32 = parts.iter().map(|p| p.1).sum();
        if np == 0 {
            return Err(ScaleError::ZeroNp {
                what: "a run".into(),
            });
        }
        let w = self.work_of(rows, np);
        let mut t = Vec::with_capacity(parts.len());
        for (g, n) in parts {
            t.push(self.group(g)?.predict(*n, w)?.total_s);
        }
        let link = if parts.len() > 1 {
            self.link_s.ok_or(ScaleError::NoLink)?
        } else {
            0.0
        };
        Ok(eq5_multi(&t, link))
    }
}

/// Romanazzi and Jimack eq. 5 with the link: T = max(T_A, T_B, …) + link.
pub fn eq5_multi(parts_s: &[f64], link_s: f64) -> f64 {
    parts_s.iter().copied().fold(0.0, f64::max) + link_s
}

/// The link term: the median over split runs of the measured time minus
/// the slowest part predicted by the groups' own fits (eq. 5 solved for
/// the link). Each split run is (parts, work per process, time).
pub fn fit_link(groups: &BTreeMap<String, GroupFit>, runs: &[(Parts, Sample)]) -> Result<f64> {
    let mut v = Vec::new();
    for (parts, s) in runs {
        let mut worst: f64 = 0.0;
        for (g, n) in parts {
            let gf = groups.get(g).ok_or_else(|| {
                ScaleError::NoGroup(
                    g.clone(),
                    groups.keys().cloned().collect::<Vec<_>>().join(", "),
                )
            })?;
            worst = worst.max(gf.predict(*n, s.work_mb)?.total_s);
        }
        v.push(finite("split run", s.time_s)? - worst);
    }
    mheta_base::median(&mut v)
        .ok_or_else(|| ScaleError::Input("the link term needs at least one split run".into()))
}

/// A candidate configuration and its predicted time per iteration.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct Candidate {
    pub parts: Parts,
    pub rows: u64,
    pub predicted_s: f64,
}

/// Every way to take 0..=avail processes from each group (at least one in
/// all), in group order.
pub fn choices(avail: &[(String, u32)]) -> Vec<Parts> {
    let mut out: Vec<Parts> = vec![Vec::new()];
    for (g, max) in avail {
        let mut next = Vec::new();
        for p in &out {
            for n in 0..=*max {
                let mut q = p.clone();
                if n > 0 {
                    q.push((g.clone(), n));
                }
                next.push(q);
            }
        }
        out = next;
    }
    out.retain(|p| !p.is_empty());
    out
}

/// Scenario 1: the fastest way to run `rows` rows with up to `avail`
/// processes per group; all candidates, fastest first. Splits are only
/// candidates when the fit has a link term.
pub fn fastest(fit: &FitFile, rows: u64, avail: &[(String, u32)]) -> Result<Vec<Candidate>> {
    for (g, _) in avail {
        fit.group(g)?;
    }
    let mut out = Vec::new();
    for parts in choices(avail) {
        if parts.len() > 1 && fit.link_s.is_none() {
            continue;
        }
        let predicted_s = fit.predict(&parts, rows)?;
        out.push(Candidate {
            parts,
            rows,
            predicted_s,
        });
    }
    out.sort_by(|a, b| a.predicted_s.total_cmp(&b.predicted_s));
    Ok(out)
}

/// Scenario 2: the largest square grid (N×N, one fit per N: the message
/// length is part of each fit) whose fastest configuration within
/// `avail` takes at most `budget_s` for `iters` iterations. None when
/// no grid fits.
pub fn budget(
    fits: &[FitFile],
    avail: &[(String, u32)],
    iters: u64,
    budget_s: f64,
) -> Result<Option<Candidate>> {
    finite("budget", budget_s)?;
    let mut best: Option<Candidate> = None;
    for f in fits {
        let Some(c) = fastest(f, f.n, avail)?.into_iter().next() else {
            continue;
        };
        let fits_budget = c.predicted_s * iters as f64 <= budget_s;
        if fits_budget && best.as_ref().is_none_or(|b| c.rows > b.rows) {
            best = Some(c);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests;
