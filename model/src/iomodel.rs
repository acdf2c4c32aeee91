//! The I/O half of MHETA section 4.2.1: for a rank and any row count, which
//! arrays are out of core (the shared rule in [`crate::ooc`]), their ICLAs
//! `M_i(m)` and passes `N_L(m)`, and the time `T_ψ(m)` of one sweep by
//! eq. 1 (synchronous) or eq. 2 (prefetching).
//!
//! Where the costs come from:
//! - **The trace**, for a rank that read or wrote the variable while
//!   recorded: per-call overhead and per-byte cost by least squares over its
//!   calls, each size entering as its median
//!   ([`mheta_profile::line_fit`]; pieces and the small halo reads give
//!   two sizes); with one size
//!   only, the profile's per-call overhead for that node and the rest per
//!   byte. A rank that read or wrote only its other arrays: the same fit
//!   over those calls (one disk per node). A rank that only read (or only
//!   wrote): the profile's line for the other direction, scaled by how
//!   much slower than the profile its recorded calls ran.
//! - **The cluster profile's disk figures** (`mheta bench` measures each
//!   node's disk), for a rank that did no I/O while recorded. The profile
//!   measures the real disk: an *emulated* disk factor on such a rank is
//!   not seen, so instrument where every rank that may go out of core is
//!   (Block on our memory-limited clusters is); the paper forced every node
//!   to do I/O in its instrumented iteration for the same reason.
//! - **Other ranks' fits**, averaged, when the profile has no disk figures.
//!
//! Which stage sweeps which array, and whether it reads, writes or both,
//! comes from the ranks that did I/O (every rank runs the same code); for
//! an array no rank had on disk, from the stages the declaration says
//! sweep it (`AppDecl::stage_access`, noted by the apps' harness in core
//! too); without that, it is assumed read (and written back unless
//! read-only) once per iteration, in the first stage.

use crate::ooc::{self, ALIGN, Need, RowBytes, round_up};
use mheta_profile::ClusterProfile;
use mheta_trace::{AppDecl, ArrayDecl, MemoryDecl};
use rustc_hash::FxHashMap;
use std::sync::{Arc, Mutex};

/// Per-call overhead and per-byte cost of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Line {
    pub overhead_s: f64,
    pub per_byte_s: f64,
}

impl Line {
    pub fn time(&self, bytes: f64) -> f64 {
        self.overhead_s + self.per_byte_s * bytes
    }
}

/// One recorded file call, for fitting.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IoObs {
    /// Stage ordinal within the iteration (None: outside stages).
    pub stage: Option<u32>,
    /// Index into the rank trace's file table.
    pub file: u32,
    pub write: bool,
    pub bytes: u64,
    pub secs: f64,
}

/// What a stage does to an on-disk array.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Touch {
    pub read: bool,
    pub write: bool,
}

/// A rank's plan for a row count, reduced to what the equations need.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanSummary {
    /// Per on-disk array: out of core?
    pub out_of_core: Vec<bool>,
    /// Per on-disk array: bytes of each piece (its ICLAs `M_i(m)`; their
    /// count is `N_L(m)`).
    pub pieces: Vec<Vec<u64>>,
}

/// Plans by (rank, first row for sparse rows, rows); None: infeasible.
/// Keyed by a fast non-cryptographic hash: a search looks plans up for
/// every rank at every evaluation and bisection step.
/// Plans by what they follow: the rank's memory budget, the first row
/// (sparse rows only, else 0) and the rows. Ranks of one budget share
/// their plans, so a search over many ranks plans each row count once.
type PlanCache = FxHashMap<(Option<u64>, u64, u64), Option<Arc<PlanSummary>>>;

/// The I/O side of the model, built once per model.
#[derive(Debug)]
pub struct IoModel {
    /// Indices (into `AppDecl::arrays`) of the on-disk arrays, in the order
    /// the kernels plan them.
    pub arrays: Vec<usize>,
    decls: Vec<ArrayDecl>,
    mem: MemoryDecl,
    /// Per stage ordinal: per on-disk array, what the stage does.
    pub touches: Vec<Vec<Touch>>,
    /// Per rank, per on-disk array: read and write cost lines.
    pub read: Vec<Vec<Line>>,
    pub write: Vec<Vec<Line>>,
    /// Work prefix sums, for sparse rows.
    work_prefix: Option<Vec<u64>>,
    cache: Mutex<PlanCache>,
}

impl Clone for IoModel {
    fn clone(&self) -> IoModel {
        IoModel {
            arrays: self.arrays.clone(),
            decls: self.decls.clone(),
            mem: self.mem.clone(),
            touches: self.touches.clone(),
            read: self.read.clone(),
            write: self.write.clone(),
            work_prefix: self.work_prefix.clone(),
            cache: Mutex::new(FxHashMap::default()),
        }
    }
}

/// The stem an out-of-core file of an array carries: `<dir>/<stem>.<rank>`.
fn stem(path: &str) -> &str {
    let base = path.rsplit('/').next().unwrap_or(path);
    match base.rsplit_once('.') {
        Some((s, r)) if !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()) => s,
        _ => base,
    }
}

/// Per rank, per array: (read, write) samples of (bytes, seconds).
type Samples = (Vec<(f64, f64)>, Vec<(f64, f64)>);

/// Stage `k`'s row of the stage table, grown to it (`n` arrays).
fn stage_row(touches: &mut Vec<Vec<Touch>>, k: usize, n: usize) -> &mut [Touch] {
    if touches.len() <= k {
        touches.resize(k + 1, vec![Touch::default(); n]);
    }
    &mut touches[k]
}

/// From the recorded file calls of every rank: which stage read or wrote
/// which array, and per rank and array the calls' (bytes, seconds).
fn observed(
    app: &AppDecl,
    arrays: &[usize],
    files: &[Vec<String>],
    obs: &[Vec<IoObs>],
) -> (Vec<Vec<Touch>>, Vec<Vec<Samples>>) {
    let p = app.dist.len();
    let n = arrays.len();
    let which = |rank: usize, file: u32| -> Option<usize> {
        let name = files.get(rank)?.get(file as usize)?;
        let s = stem(name);
        arrays
            .iter()
            .position(|&a| app.arrays[a].file.as_deref() == Some(s))
    };
    let mut touches: Vec<Vec<Touch>> = Vec::new();
    let mut samples: Vec<Vec<Samples>> = vec![vec![(Vec::new(), Vec::new()); n]; p];
    for (rank, list) in obs.iter().enumerate().take(p) {
        for o in list {
            let Some(a) = which(rank, o.file) else {
                continue;
            };
            if let Some(k) = o.stage {
                let t = &mut stage_row(&mut touches, k as usize, n)[a];
                if o.write {
                    t.write = true;
                } else {
                    t.read = true;
                }
            }
            let s = &mut samples[rank][a];
            let v = if o.write { &mut s.1 } else { &mut s.0 };
            v.push((o.bytes as f64, o.secs));
        }
    }
    (touches, samples)
}

/// An array no rank had on disk: the stages that the declaration says
/// sweep it (`AppDecl::stage_access`), else once per iteration in the
/// first stage.
fn declared_touches(app: &AppDecl, arrays: &[usize], touches: &mut Vec<Vec<Touch>>) {
    let n = arrays.len();
    for (a, &ai) in arrays.iter().enumerate() {
        if touches.iter().any(|t| t[a].read || t[a].write) {
            continue;
        }
        let decl = &app.arrays[ai];
        let declared: Vec<(usize, Touch)> = app
            .stage_access
            .iter()
            .flatten()
            .enumerate()
            .filter_map(|(k, stage)| {
                let x = stage
                    .iter()
                    .find(|x| Some(x.file.as_str()) == decl.file.as_deref())?;
                let t = Touch {
                    read: x.read,
                    write: x.write && !decl.read_only,
                };
                (t.read || t.write).then_some((k, t))
            })
            .collect();
        if declared.is_empty() {
            stage_row(touches, 0, n)[a] = Touch {
                read: true,
                write: !decl.read_only,
            };
        }
        for (k, t) in declared {
            stage_row(touches, k, n)[a] = t;
        }
    }
}

/// MHETA eq. 1's O_r + T_r(m) (or O_w + T_w(m)) as a line in the bytes
/// of a call, fitted to `pts` (bytes, seconds); with one size only, the
/// profile's overhead `profile_o` (at most the mean call) and the rest
/// per byte. None without samples.
fn fit(pts: &[(f64, f64)], profile_o: Option<f64>) -> Option<Line> {
    if pts.is_empty() {
        return None;
    }
    let distinct = pts.iter().any(|q| q.0 != pts[0].0);
    if distinct
        && let Some((o, b)) = mheta_profile::line_fit(pts)
        && b > 0.0
    {
        return Some(Line {
            overhead_s: o,
            per_byte_s: b,
        });
    }
    let o = profile_o.unwrap_or(0.0);
    let (bytes, secs) = pts.iter().fold((0.0, 0.0), |a, q| (a.0 + q.0, a.1 + q.1));
    let n = pts.len() as f64;
    Some(Line {
        overhead_s: o.min(secs / n),
        per_byte_s: ((secs - n * o.min(secs / n)) / bytes.max(1.0)).max(0.0),
    })
}

/// The profile's (overhead, per byte) times how much slower than its
/// `other_per_byte` the node's fit of the other direction ran.
fn scaled_line(o: f64, b: f64, other: Option<Line>, other_per_byte: f64) -> Line {
    let x = match other {
        Some(l) if other_per_byte > 0.0 && l.per_byte_s > other_per_byte => {
            l.per_byte_s / other_per_byte
        }
        _ => 1.0,
    };
    Line {
        overhead_s: o * x,
        per_byte_s: b * x,
    }
}

/// One rank's read and write lines per array: its own calls to the array,
/// else its calls to its other arrays (one disk per node), else the
/// profile's line for the node `d`, scaled by how much slower than the
/// profile the node's recorded calls of the other direction ran (the disk
/// of a node slowed by another job, or an emulated one, is slow both
/// ways). None where nothing is known.
type Lines = Vec<Option<Line>>;
fn rank_lines(samples: &[Samples], d: Option<&mheta_profile::DiskCost>) -> (Lines, Lines) {
    let pooled = |write: bool| -> Vec<(f64, f64)> {
        samples
            .iter()
            .flat_map(|s| if write { &s.1 } else { &s.0 })
            .copied()
            .collect()
    };
    let node_r = fit(&pooled(false), d.map(|d| d.read_overhead_s));
    let node_w = fit(&pooled(true), d.map(|d| d.write_overhead_s));
    let prof_r = d.map(|d| {
        scaled_line(
            d.read_overhead_s,
            d.read_per_byte_s,
            node_w,
            d.write_per_byte_s,
        )
    });
    let prof_w = d.map(|d| {
        scaled_line(
            d.write_overhead_s,
            d.write_per_byte_s,
            node_r,
            d.read_per_byte_s,
        )
    });
    samples
        .iter()
        .map(|(r, w)| {
            (
                fit(r, d.map(|d| d.read_overhead_s)).or(node_r).or(prof_r),
                fit(w, d.map(|d| d.write_overhead_s)).or(node_w).or(prof_w),
            )
        })
        .unzip()
}

/// Every rank's line for every array: where a rank's is unknown, the mean
/// of the other ranks' for that array (each array's mean taken once).
fn fill(m: Vec<Lines>) -> Vec<Vec<Line>> {
    let arrays = m.iter().map(Vec::len).max().unwrap_or(0);
    let mean: Vec<Line> = (0..arrays)
        .map(|a| {
            let known: Vec<Line> = m
                .iter()
                .filter_map(|r| r.get(a).copied().flatten())
                .collect();
            let n = known.len().max(1) as f64;
            Line {
                overhead_s: known.iter().map(|l| l.overhead_s).sum::<f64>() / n,
                per_byte_s: known.iter().map(|l| l.per_byte_s).sum::<f64>() / n,
            }
        })
        .collect();
    m.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(a, l)| l.unwrap_or(mean[a]))
                .collect()
        })
        .collect()
}

impl IoModel {
    /// Build from the declaration, each rank's file table and recorded
    /// calls (all recorded iterations), the number of recorded iterations
    /// per rank, and the profile. None when no array can go out of core.
    pub fn new(
        app: &AppDecl,
        files: &[Vec<String>],
        obs: &[Vec<IoObs>],
        prof: &ClusterProfile,
    ) -> Option<IoModel> {
        let mem = app.memory.clone()?;
        let arrays: Vec<usize> = app
            .arrays
            .iter()
            .enumerate()
            .filter(|(_, a)| a.file.is_some() && a.level.unwrap_or(0) == 0)
            .map(|(i, _)| i)
            .collect();
        if arrays.is_empty() || mem.budget.iter().all(Option::is_none) {
            return None;
        }
        let p = app.dist.len();
        let (mut touches, samples) = observed(app, &arrays, files, obs);
        declared_touches(app, &arrays, &mut touches);
        let (mut read, mut write) = (Vec::with_capacity(p), Vec::with_capacity(p));
        for (rank, s) in samples.iter().enumerate() {
            let disk = prof
                .nodes
                .iter()
                .find(|n| n.rank as usize == rank)
                .and_then(|n| n.disk.as_ref());
            let (r, w) = rank_lines(s, disk);
            read.push(r);
            write.push(w);
        }
        Some(IoModel {
            decls: arrays.iter().map(|&i| app.arrays[i].clone()).collect(),
            work_prefix: app.work_per_row.as_deref().map(crate::dist::prefix_sums),
            read: fill(read),
            write: fill(write),
            arrays,
            mem,
            touches,
            cache: Mutex::new(FxHashMap::default()),
        })
    }

    /// The out-of-core rule for `rank` holding rows `[first, first + rows)`
    /// (memoised). None: the budget cannot hold even one row.
    pub fn plan(&self, rank: usize, first: u64, rows: u64) -> Option<Arc<PlanSummary>> {
        let key = self.plan_key(rank, first, rows);
        if let Some(p) = self.cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return p;
        }
        let out = self.plan_uncached(rank, first, rows);
        if let Ok(mut c) = self.cache.lock() {
            c.insert(key, out.clone());
        }
        out
    }

    /// [`IoModel::plan`] of every rank, rank `i` holding `rows[i]` rows
    /// from `first[i]`, with the memo locked once.
    pub fn plans(&self, first: &[u64], rows: &[u64]) -> Vec<Option<Arc<PlanSummary>>> {
        let mut out = Vec::with_capacity(rows.len());
        self.plans_into(first, rows, &mut out, false);
        out
    }

    /// [`IoModel::plans`] appended to `out`; with `budgeted_only`, None for
    /// the ranks without a memory budget ([`IoModel::unbudgeted`]).
    pub fn plans_into(
        &self,
        first: &[u64],
        rows: &[u64],
        out: &mut Vec<Option<Arc<PlanSummary>>>,
        budgeted_only: bool,
    ) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        out.extend((0..rows.len()).map(|i| {
            if budgeted_only && self.unbudgeted(i) {
                return None;
            }
            let key = self.plan_key(i, first[i], rows[i]);
            cache
                .entry(key)
                .or_insert_with(|| self.plan_uncached(i, first[i], rows[i]))
                .clone()
        }));
    }

    /// The out-of-core rule itself, not memoised.
    /// [`PlanCache`]'s key of rank `rank`'s plan of `rows` rows from
    /// `first`: everything [`IoModel::plan_uncached`] reads of the rank.
    fn plan_key(&self, rank: usize, first: u64, rows: u64) -> (Option<u64>, u64, u64) {
        let sparse = self.work_prefix.is_some();
        (self.budget(rank), if sparse { first } else { 0 }, rows)
    }

    /// Rank `rank`'s memory budget in bytes (None: none).
    fn budget(&self, rank: usize) -> Option<u64> {
        self.mem.budget.get(rank).copied().flatten()
    }

    fn plan_uncached(&self, rank: usize, first: u64, rows: u64) -> Option<Arc<PlanSummary>> {
        let r = rows as usize;
        let needs: Vec<Need> = self
            .decls
            .iter()
            .map(|a| Need {
                name: a.name.clone(),
                row_bytes: match (&self.work_prefix, a.per_work) {
                    (Some(w), true) => RowBytes::Each(
                        (first..first + rows)
                            .map(|g| {
                                ((w[g as usize + 1] - w[g as usize]) * a.bytes_per_row) as usize
                            })
                            .collect(),
                    ),
                    _ => RowBytes::Uniform {
                        rows: r,
                        bytes: a.bytes_per_row as usize,
                    },
                },
                read_only: a.read_only,
                halo: a.halo,
            })
            .collect();
        let fixed = self.mem.fixed_bytes + self.mem.fixed_per_row * rows;
        ooc::plan(self.budget(rank), fixed, &needs, self.mem.prefetch)
            .ok()
            .map(|p| {
                Arc::new(PlanSummary {
                    pieces: needs
                        .iter()
                        .map(|n| {
                            p.pieces
                                .iter()
                                .map(|q| n.row_bytes.sum(q.clone()))
                                .collect()
                        })
                        .collect(),
                    out_of_core: p.out_of_core,
                })
            })
    }

    /// Whether `rank` has no memory budget: every plan of it keeps all
    /// arrays in core, and a stage's I/O under it is 0.
    pub fn unbudgeted(&self, rank: usize) -> bool {
        self.budget(rank).is_none()
    }

    /// Does the app prefetch its reads (eq. 2), so that a stage's recorded
    /// file calls are not its I/O time?
    pub fn prefetching(&self) -> bool {
        self.mem.prefetch
    }

    /// I/O seconds of `rank` in stage `k` under a plan, with `compute_s` the
    /// stage's predicted computation (for the prefetch overlap `T_A`): its
    /// sweeps that are not prefetched ([`IoModel::stage_io_swept`]) plus
    /// those that are ([`IoModel::stage_io_prefetched`]).
    pub fn stage_io(&self, rank: usize, k: usize, plan: &PlanSummary, compute_s: f64) -> f64 {
        self.stage_io_swept(rank, k, plan) + self.stage_io_prefetched(rank, k, plan, compute_s)
    }

    /// How many stages the app's arrays are touched in (a stage `k` at or
    /// beyond it does no I/O).
    pub fn stages(&self) -> usize {
        self.touches.len()
    }

    /// The part of [`IoModel::stage_io`] that the stage's computation does
    /// not change: each array on disk it touches without a prefetch,
    /// MHETA eq. 1 (`t_psi`) summed in array order. A replay of many
    /// distributions keeps it while the rank's plan stays.
    pub fn stage_io_swept(&self, rank: usize, k: usize, plan: &PlanSummary) -> f64 {
        self.stage_io_parts(rank, k, plan, None)
    }

    /// The part of [`IoModel::stage_io`] that follows the stage's
    /// computation `compute_s`: the prefetched arrays in lockstep, MHETA
    /// eq. 2 (`t_psi_prefetch_lockstep`; 0 when none).
    pub fn stage_io_prefetched(
        &self,
        rank: usize,
        k: usize,
        plan: &PlanSummary,
        compute_s: f64,
    ) -> f64 {
        self.stage_io_parts(rank, k, plan, Some(compute_s))
    }

    /// [`IoModel::stage_io_swept`] (`compute_s` None) or
    /// [`IoModel::stage_io_prefetched`].
    fn stage_io_parts(
        &self,
        rank: usize,
        k: usize,
        plan: &PlanSummary,
        compute_s: Option<f64>,
    ) -> f64 {
        let Some(t) = self.touches.get(k) else {
            return 0.0;
        };
        let swept = |a: usize, touch: &Touch| {
            let r = if touch.read {
                self.read[rank][a]
            } else {
                Line::default()
            };
            let w = if touch.write {
                self.write[rank][a]
            } else {
                Line::default()
            };
            Swept {
                pieces: &plan.pieces[a],
                r,
                w,
                halo: touch.read && self.decls[a].halo,
            }
        };
        let on_disk = |a: usize, touch: &Touch| plan.out_of_core[a] && (touch.read || touch.write);
        let prefetched = |touch: &Touch| self.mem.prefetch && touch.read;
        let Some(compute_s) = compute_s else {
            let mut total = 0.0;
            for (a, touch) in t.iter().enumerate() {
                if on_disk(a, touch) && !prefetched(touch) {
                    let s = swept(a, touch);
                    total += t_psi(s.pieces, s.r, s.w, s.halo);
                }
            }
            return total;
        };
        let lockstep = t
            .iter()
            .enumerate()
            .filter(|&(a, touch)| on_disk(a, touch) && prefetched(touch))
            .map(|(a, touch)| swept(a, touch));
        t_psi_prefetch_lockstep(lockstep, compute_s)
    }
}

/// Padded bytes of one ICLA, as direct I/O moves it.
fn padded(b: u64) -> f64 {
    round_up((b as usize).max(1), ALIGN) as f64
}

/// MHETA eq. 1: `T_ψ(m) = N_L(m) · [O_r + T_r(m) + O_w + T_w(m)]`, with
/// `T_r(m) = r(m) · M_i(m)` summed over the actual pieces (the last one may
/// be smaller), plus one aligned halo read per piece for a stencil array.
/// A read-only sweep has `O_w = T_w = 0` (pass a zero `w`).
pub fn t_psi(pieces: &[u64], r: Line, w: Line, halo: bool) -> f64 {
    let mut t = 0.0;
    for &b in pieces {
        let m = padded(b);
        t += r.time(m) * f64::from(u8::from(r != Line::default()));
        t += w.time(m) * f64::from(u8::from(w != Line::default()));
        if halo {
            t += r.time(ALIGN as f64);
        }
    }
    t
}

/// MHETA eq. 2: with prefetching, the first ICLA's read is paid in full
/// and each later one only by `T_s = max(0, T_r − T_A)`, where `T_A` is
/// the computation between the prefetch's issue and its wait: the piece's
/// share of the stage's computation. The piece's write-back lies in that
/// interval too but does not hide the read: both use the node's one disk,
/// whose bandwidth they share (what counting it as overlap cost:
/// docs/design/model.md). Issue overheads: `N_L · O_r`
/// (the extra asynchronous overhead `O_A` is not separable from `O_r` in a
/// trace recorded with the fig. 5 trick and is taken as 0). Halo reads are
/// synchronous.
pub fn t_psi_prefetch(pieces: &[u64], r: Line, w: Line, halo: bool, compute_s: f64) -> f64 {
    t_psi_prefetch_lockstep(std::iter::once(Swept { pieces, r, w, halo }), compute_s)
}

/// One out-of-core array of a stage's sweep, for
/// [`t_psi_prefetch_lockstep`]: its pieces, read and write lines, and
/// whether each piece also reads a halo row.
#[derive(Clone, Copy, Debug)]
pub struct Swept<'a> {
    pub pieces: &'a [u64],
    pub r: Line,
    pub w: Line,
    pub halo: bool,
}

/// MHETA eq. 2 for several prefetched arrays swept in lockstep (the apps'
/// `storage::sweep`: piece k of every array, in order, then the
/// computation on piece k, then the write-backs). The rank has one disk,
/// so the arrays' prefetches of piece k + 1 share one overlap window, the
/// computation on piece k (`T_A` = the stage's computation / `N_L`): the
/// window hides at most `T_A` of their reads together, not `T_A` each.
/// Before the first window, each array's piece 0 is read synchronously
/// and queues behind the prefetch of piece 1 that the array before it
/// has just issued, so only the last array's piece-1 read falls in window
/// 0. With one array this is eq. 2 as the paper has it. (What hiding
/// `T_A` per array cost: docs/design/model.md.)
pub fn t_psi_prefetch_lockstep<'a>(
    arrays: impl Iterator<Item = Swept<'a>> + Clone,
    compute_s: f64,
) -> f64 {
    let n = arrays.clone().map(|a| a.pieces.len()).max().unwrap_or(0);
    if n == 0 {
        return 0.0;
    }
    let t_a = compute_s / n as f64;
    let t_r =
        |a: &Swept<'_>, k: usize| a.pieces.get(k).map_or(0.0, |&b| a.r.per_byte_s * padded(b));
    let mut t = 0.0;
    let mut m = 0;
    for a in arrays.clone() {
        m += 1;
        for &b in a.pieces {
            t += a.r.overhead_s;
            if a.w != Line::default() {
                t += a.w.time(padded(b));
            }
            if a.halo {
                t += a.r.time(ALIGN as f64);
            }
        }
        t += t_r(&a, 0);
    }
    for (i, a) in arrays.clone().enumerate() {
        t += if i + 1 < m {
            t_r(&a, 1)
        } else {
            (t_r(&a, 1) - t_a).max(0.0)
        };
    }
    for k in 2..n {
        let window: f64 = arrays.clone().map(|a| t_r(&a, k)).sum();
        t += (window - t_a).max(0.0);
    }
    t
}

#[cfg(test)]
mod tests;
