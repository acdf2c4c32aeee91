//! mg: multigrid V-cycles for the 2-D Poisson equation −Δu = f on the unit
//! square, u = 0 on the boundary, N×N interior points with N = 2^k − 1.
//!
//! Levels: level 0 is the N×N grid, level l+1 has (N_l − 1)/2 points per
//! side, down to one point. Grid index K (boundary 0) of a coarse level is
//! index 2K of the finer one. Every level is GEN_BLOCK
//! ([`Dist::coarse_level`]): the fine level's boundaries halved (rank r's
//! first coarse row is ⌊o_r / 2⌋ for its first fine row o_r, so a coarse
//! row lies with the fine row at its centre: the level's `natural`
//! layout), then, once its ranks would hold fewer than
//! [`mheta_model::dist::COARSE_MIN_ROWS`] rows each, gathered onto fewer
//! ranks. The restriction computes each coarse row where its centre lies
//! and sends it to its owner; the prolongation brings the coarse rows
//! back to the natural layout first. A rank with no rows on a level sits
//! that level's smoothing and exchanges out; it still takes the two
//! coarse rows around its fine rows for the prolongation (fetched by
//! global row from their owners).
//!
//! A V(2,2) cycle: two red-black Gauss–Seidel sweeps (each half-sweep
//! after a halo exchange), the residual, full-weighting restriction to the
//! coarser level's right-hand side, the cycle there from zero, bilinear
//! prolongation of the correction, two more sweeps; one exact sweep pair on
//! the one-point level. An iteration is one cycle plus the residual norm
//! (a reduction). Level 0's arrays (u, f, r) may go out of core under the
//! storage rule; coarser levels stay in memory.
//!
//! Verification, with f = 2π² sin(πx) sin(πy) (exact u = sin(πx) sin(πy)):
//! - convergence: the mean factor ‖r_k‖/‖r_{k−1}‖ per cycle (geometric
//!   mean over the cycles before the residual reaches rounding) ≤ 0.15;
//! - the discrete solution is (2π²/μ_h)·sin(πx) sin(πy) exactly, μ_h =
//!   (8/h²) sin²(πh/2): `alg_error` = max |u − u_h| ≤ 1e-8 after enough
//!   cycles;
//! - `disc_error` = max |u − u_exact| = O(h²): it falls about 4× when N
//!   goes from 2^k − 1 to 2^(k+1) − 1 (the tests run two sizes).
//!
//! Red-black updates read only the other colour, and restriction and
//! prolongation are pointwise formulas, so the result is bit for bit
//! independent of the distribution; the residual norm's reduction is not.

// Stencil formulas read best with explicit indices and (j ± 1)/2.
#![allow(clippy::needless_range_loop, clippy::manual_div_ceil)]

use anyhow::{Result, bail};
use clap::Parser;
use mheta_apps::checkpoint::State;
use mheta_apps::storage::{Access, MemPlan, Need, Rows, sweep};
use mheta_apps::{
    Common, Ctx, Fixed, Kernel, StorageReport, comm, grid, main_with_mpi, parse_args, run,
};
use mheta_model::Dist;
use mheta_trace::{AppDecl, ArrayDecl, ExchangeDecl, ExchangeKind, MsgScaling};
use mpi::collective::SystemOperation;
use mpi::point_to_point::Destination;
use mpi::topology::{Communicator, SimpleCommunicator};
use serde_json::{Value, json};
use std::f64::consts::PI;

/// Multigrid V-cycles on GEN_BLOCK rows at every level.
#[derive(Parser, Debug)]
#[command(name = "mg", version)]
struct Args {
    /// Interior grid is N×N, N = 2^k − 1; its N rows are distributed.
    #[arg(long, default_value_t = 511)]
    n: u64,
    /// Rows of the interior grid instead of N (M = 2^j − 1): an M×N grid
    /// on a rectangle of the same spacing, so that the messages (rows of
    /// N) stay the same while the work changes (Romanazzi and Jimack's runs). Levels
    /// coarsen both sides until one side has one point.
    #[arg(long, value_name = "M")]
    rows: Option<u64>,
    #[command(flatten)]
    common: Common,
}

const PRE: usize = 2;
const POST: usize = 2;

struct Level {
    n: usize,
    /// Where the level's rows live.
    dist: Dist,
    /// The finer level's boundaries halved: where the restriction computes
    /// each coarse row and the prolongation reads it, by the fine rows at
    /// its centre. `dist` gathers it onto fewer ranks on coarse levels.
    natural: Dist,
    first: usize,
    u: Rows,
    f: Rows,
    r: Rows,
}

fn h_of(n: usize) -> f64 {
    1.0 / (n as f64 + 1.0)
}

/// Red-black Gauss–Seidel half-sweep of colour `c` on rows of `u` (width
/// n + 2) with right-hand side rows `f` (width n + 2), in place.
#[allow(clippy::too_many_arguments)]
fn rbgs(
    u: &mut [f64],
    above: &[f64],
    below: &[f64],
    f: &[f64],
    n: usize,
    first_gi: usize,
    c: usize,
) {
    let w = n + 2;
    let h2 = h_of(n) * h_of(n);
    let rows = u.len() / w;
    for i in 0..rows {
        let (head, rest) = u.split_at_mut(i * w);
        let (mid, tail) = rest.split_at_mut(w);
        let up: &[f64] = if i == 0 { above } else { &head[(i - 1) * w..] };
        let down: &[f64] = if i + 1 < rows { &tail[..w] } else { below };
        let fr = &f[i * w..(i + 1) * w];
        let gi = first_gi + i;
        let mut j = 1 + (gi + 1 + c) % 2;
        while j <= n {
            mid[j] = 0.25 * (h2 * fr[j] + up[j] + down[j] + mid[j - 1] + mid[j + 1]);
            j += 2;
        }
    }
}

/// r = f − A u on rows; returns Σ r².
fn residual(u: &[f64], above: &[f64], below: &[f64], f: &[f64], r: &mut [f64], n: usize) -> f64 {
    let w = n + 2;
    let inv_h2 = 1.0 / (h_of(n) * h_of(n));
    let rows = u.len() / w;
    let mut s = 0.0;
    for i in 0..rows {
        let up: &[f64] = if i == 0 {
            above
        } else {
            &u[(i - 1) * w..i * w]
        };
        let down: &[f64] = if i + 1 < rows {
            &u[(i + 1) * w..(i + 2) * w]
        } else {
            below
        };
        let mid = &u[i * w..(i + 1) * w];
        for j in 1..=n {
            let au = (4.0 * mid[j] - up[j] - down[j] - mid[j - 1] - mid[j + 1]) * inv_h2;
            let v = f[i * w + j] - au;
            r[i * w + j] = v;
            s += v * v;
        }
    }
    s
}

impl Level {
    #[allow(clippy::too_many_arguments)]
    fn new(
        ctx: &Ctx,
        n: usize,
        dist: Dist,
        natural: Dist,
        disk: [bool; 3],
        pieces: &[std::ops::Range<usize>],
        rhs: bool,
    ) -> Result<Level> {
        let me = ctx.rank;
        let first = dist.offsets()[me] as usize;
        let rows = dist.0[me] as usize;
        let w = n + 2;
        let st = |i: usize| disk[i].then_some(&ctx.storage);
        let h = h_of(n);
        let m = dist.total() as usize;
        let lam = PI * PI * (1.0 + ((n as f64 + 1.0) / (m as f64 + 1.0)).powi(2));
        // The finest level's arrays by their file stems (also in core:
        // the declaration's stage accesses name them so); coarse levels
        // by their size.
        let name = |a: &str| {
            if rhs {
                a.to_string()
            } else {
                format!("{a}{n}")
            }
        };
        let u = Rows::new(&name("u"), w, rows, true, pieces, st(0), |_, _| {})?;
        let f = Rows::new(&name("f"), w, rows, true, pieces, st(1), |r, row| {
            if rhs {
                let y = (first + r + 1) as f64 * h_of(m);
                for (j, v) in row.iter_mut().enumerate().take(n + 1).skip(1) {
                    let x = j as f64 * h;
                    *v = lam * (PI * x).sin() * (PI * y).sin();
                }
            }
        })?;
        let r = Rows::new(&name("r"), w, rows, true, pieces, st(2), |_, _| {})?;
        Ok(Level {
            n,
            dist,
            natural,
            first,
            u,
            f,
            r,
        })
    }

    fn smooth(&mut self, ctx: &Ctx, sweeps: usize) -> Result<()> {
        let (n, first) = (self.n, self.first);
        for _ in 0..sweeps {
            for c in 0..2 {
                grid::exchange(ctx.world, &mut self.u, &self.dist, ctx.rank);
                ctx.stage(|| {
                    sweep(
                        &mut [
                            (&mut self.u, Access::ReadWrite),
                            (&mut self.f, Access::Read),
                        ],
                        |rows, v| {
                            let (uv, fv) = v.split_at_mut(1);
                            let s = rows.start;
                            let points = (rows.len() * n / 2) as u64;
                            ctx.work(points, || {
                                rbgs(
                                    uv[0].data,
                                    uv[0].above,
                                    uv[0].below,
                                    fv[0].data,
                                    n,
                                    first + s,
                                    c,
                                )
                            });
                        },
                    )
                })?;
            }
        }
        Ok(())
    }

    /// r = f − A u; returns the global ‖r‖² when `norm` (a reduction).
    fn residual(&mut self, ctx: &Ctx) -> Result<f64> {
        let n = self.n;
        grid::exchange(ctx.world, &mut self.u, &self.dist, ctx.rank);
        ctx.stage(|| {
            let mut s = 0.0;
            sweep(
                &mut [
                    (&mut self.u, Access::Read),
                    (&mut self.f, Access::Read),
                    (&mut self.r, Access::Write),
                ],
                |_, v| {
                    let (uv, rest) = v.split_at_mut(1);
                    let (fv, rv) = rest.split_at_mut(1);
                    let points = (uv[0].data.len() / (n + 2) * n) as u64;
                    s += ctx.work(points, || {
                        residual(
                            uv[0].data,
                            uv[0].above,
                            uv[0].below,
                            fv[0].data,
                            rv[0].data,
                            n,
                        )
                    });
                },
            )?;
            Ok(s)
        })
    }
}

/// Levels 1.. (in core) below a fine level of n points per row on
/// `fine`, until a side has one point, each on [`Dist::coarse_level`].
fn coarse_levels(ctx: &Ctx, n: usize, fine: &Dist) -> Result<Vec<Level>> {
    let (mut nl, mut d) = (n, fine.clone());
    let mut out = Vec::new();
    while nl > 1 && d.total() > 1 {
        nl = (nl - 1) / 2;
        let natural = d.coarser();
        d = d.coarse_level();
        let rows = d.0[ctx.rank] as usize;
        let whole = 0..rows;
        out.push(Level::new(
            ctx,
            nl,
            d.clone(),
            natural,
            [false; 3],
            std::slice::from_ref(&whole),
            false,
        )?);
    }
    Ok(out)
}

struct Mg {
    n: usize,
    levels: Vec<Level>,
    norms: Vec<f64>,
    plan: MemPlan,
}

impl Mg {
    fn new(ctx: &Ctx, n: usize) -> Result<Mg> {
        let rows = ctx.dist.0[ctx.rank] as usize;
        let w = n + 2;
        let needs = [
            Need::fixed("u", rows, 8 * w, false, true),
            Need::fixed("f", rows, 8 * w, true, true),
            Need::fixed("r", rows, 8 * w, false, true),
        ];
        // Coarser levels (about a third of the fine arrays) stay in memory.
        let coarse = Fixed {
            bytes: (16 * 8 * w) as u64,
            per_row: (8 * w) as u64,
        };
        let plan = ctx.plan(coarse, &needs)?;
        let disk = [
            plan.out_of_core[0],
            plan.out_of_core[1],
            plan.out_of_core[2],
        ];
        let mut levels = vec![Level::new(
            ctx,
            n,
            ctx.dist.clone(),
            ctx.dist.clone(),
            disk,
            &plan.pieces,
            true,
        )?];
        levels.extend(coarse_levels(ctx, n, &ctx.dist)?);
        Ok(Mg {
            n,
            levels,
            norms: Vec::new(),
            plan,
        })
    }

    fn vcycle(&mut self, ctx: &Ctx, l: usize) -> Result<()> {
        ctx.level(l);
        if l + 1 == self.levels.len() {
            return self.levels[l].smooth(ctx, 1);
        }
        self.levels[l].smooth(ctx, PRE)?;
        self.levels[l].residual(ctx)?;
        self.restrict(ctx, l)?;
        if let Some(v) = self.levels[l + 1].u.core_mut() {
            v.fill(0.0);
        }
        self.vcycle(ctx, l + 1)?;
        ctx.level(l);
        self.prolong(ctx, l)?;
        self.levels[l].smooth(ctx, POST)
    }

    /// Full weighting of level l's residual into level l+1's right-hand side.
    fn restrict(&mut self, ctx: &Ctx, l: usize) -> Result<()> {
        let (fine, rest) = self.levels.split_at_mut(l + 1);
        let (fl, cl) = (&mut fine[l], &mut rest[0]);
        grid::exchange(ctx.world, &mut fl.r, &fl.dist, ctx.rank);
        let (nf, nc, ffirst) = (fl.n, cl.n, fl.first);
        let (wf, wc) = (nf + 2, nc + 2);
        // Coarse rows by the fine rows at their centre (`natural`), then
        // to where the level keeps them.
        let gathered = cl.natural != cl.dist;
        let cfirst = cl.natural.offsets()[ctx.rank] as usize;
        let mut staged = Vec::new();
        let cf: &mut [f64] = if gathered {
            staged.resize(cl.natural.0[ctx.rank] as usize * wc, 0.0);
            &mut staged
        } else {
            cl.f.core_mut().expect("coarse levels are in core")
        };
        ctx.stage(|| {
            sweep(&mut [(&mut fl.r, Access::Read)], |rows, v| {
                let (data, above, below) = (&*v[0].data, v[0].above, v[0].below);
                let nrows = rows.len();
                let row = |i: isize| -> &[f64] {
                    if i < 0 {
                        above
                    } else if i as usize >= nrows {
                        below
                    } else {
                        &data[i as usize * wf..(i as usize + 1) * wf]
                    }
                };
                // One coarse point per odd fine row and coarse column.
                ctx.work((nrows / 2 * nc) as u64, || {
                    // Coarse 0-based row J has its centre at fine 0-based row 2J + 1.
                    for i in 0..nrows {
                        let gi = ffirst + rows.start + i;
                        if gi % 2 == 0 {
                            continue;
                        }
                        let jc = (gi - 1) / 2 - cfirst;
                        let (a, m, b) = (row(i as isize - 1), row(i as isize), row(i as isize + 1));
                        let out = &mut cf[jc * wc..(jc + 1) * wc];
                        for k in 1..=nc {
                            let j = 2 * k;
                            out[k] = (4.0 * m[j]
                                + 2.0 * (a[j] + b[j] + m[j - 1] + m[j + 1])
                                + a[j - 1]
                                + a[j + 1]
                                + b[j - 1]
                                + b[j + 1])
                                / 16.0;
                        }
                    }
                })
            })
        })?;
        if gathered {
            mheta_runtime::redistribute_in_place(ctx.world, &cl.natural, &cl.dist, wc, &mut staged);
            cl.f.core_mut()
                .expect("coarse levels are in core")
                .copy_from_slice(&staged);
        }
        Ok(())
    }

    /// u_l += P e, e = level l+1's u (bilinear).
    fn prolong(&mut self, ctx: &Ctx, l: usize) -> Result<()> {
        let (fine, rest) = self.levels.split_at_mut(l + 1);
        let (fl, cl) = (&mut fine[l], &mut rest[0]);
        let (nf, nc, ffirst) = (fl.n, cl.n, fl.first);
        let (wf, wc) = (nf + 2, nc + 2);
        // The coarse rows by the fine rows at their centre (`natural`).
        let spread: Vec<f64>;
        let cu: &[f64] = if cl.natural != cl.dist {
            let mut v = cl.u.core().expect("coarse levels are in core").to_vec();
            mheta_runtime::redistribute_in_place(ctx.world, &cl.dist, &cl.natural, wc, &mut v);
            spread = v;
            &spread
        } else {
            cl.u.core().expect("coarse levels are in core")
        };
        let (top, bottom) = coarse_ghosts(ctx.world, &fl.dist, &cl.natural, cu, wc, ctx.rank);
        let cfirst = cl.natural.offsets()[ctx.rank] as usize;
        let crows = cl.natural.0[ctx.rank] as usize;
        let mc = cl.natural.total() as usize;
        // Coarse row with grid index K (0 and mc+1 are the zero boundary).
        let crow = |k: usize| -> Option<&[f64]> {
            if k == 0 || k == mc + 1 {
                return None;
            }
            let q = k - 1; // 0-based
            if q + 1 == cfirst {
                Some(&top)
            } else if q == cfirst + crows {
                Some(&bottom)
            } else {
                Some(&cu[(q - cfirst) * wc..(q - cfirst + 1) * wc])
            }
        };
        let interp = |c: Option<&[f64]>, j: usize| -> f64 {
            let Some(c) = c else { return 0.0 };
            if j.is_multiple_of(2) {
                c[j / 2]
            } else {
                0.5 * (c[(j - 1) / 2] + c[(j + 1) / 2])
            }
        };
        ctx.stage(|| {
            sweep(&mut [(&mut fl.u, Access::ReadWrite)], |rows, v| {
                let data = &mut *v[0].data;
                ctx.work((data.len() / wf * nf) as u64, || {
                    for (i, row) in data.chunks_exact_mut(wf).enumerate() {
                        let y = ffirst + rows.start + i + 1; // grid index
                        for (j, x) in row.iter_mut().enumerate().take(nf + 1).skip(1) {
                            let e = if y % 2 == 0 {
                                interp(crow(y / 2), j)
                            } else {
                                0.5 * (interp(crow((y - 1) / 2), j) + interp(crow((y + 1) / 2), j))
                            };
                            *x += e;
                        }
                    }
                })
            })
        })?;
        Ok(())
    }
}

/// Coarse rows `c_r − 1` and `c_{r+1}` (0-based) around rank r's block
/// of `coarse` (rows of `w` values, this rank's in `local`), for every
/// rank that owns fine rows (even one with no coarse rows), fetched from
/// whoever owns them; zero at the boundary.
fn coarse_ghosts(
    world: &SimpleCommunicator,
    fine: &Dist,
    coarse: &Dist,
    local: &[f64],
    w: usize,
    me: usize,
) -> (Vec<f64>, Vec<f64>) {
    let p = fine.ranks();
    let mc = coarse.total();
    let coffs = coarse.offsets();
    let cend = |r: usize| coffs[r] + coarse.0[r];
    let owner = |q: u64| (0..p).find(|&j| coffs[j] <= q && q < cend(j));
    let needs = |r: usize| -> [Option<u64>; 2] {
        if fine.0[r] == 0 {
            return [None, None];
        }
        [coffs[r].checked_sub(1), Some(cend(r)).filter(|&q| q < mc)]
    };
    let mut top = vec![0.0; w];
    let mut bottom = vec![0.0; w];
    mpi::request::scope(|scope| {
        let mut sends = Vec::new();
        for r in (0..p).filter(|&r| r != me) {
            for (tag, q) in needs(r).into_iter().enumerate() {
                if let Some(q) = q
                    && owner(q) == Some(me)
                {
                    let i = (q - coffs[me]) as usize;
                    sends.push(world.process_at_rank(r as i32).immediate_send_with_tag(
                        scope,
                        &local[i * w..(i + 1) * w],
                        100 + tag as i32,
                    ));
                }
            }
        }
        for (tag, q) in needs(me).into_iter().enumerate() {
            let buf = if tag == 0 { &mut top } else { &mut bottom };
            if let Some(q) = q
                && let Some(o) = owner(q)
            {
                comm::recv_tagged(world, &mut buf[..], o, 100 + tag as i32);
            }
        }
        for s in sends {
            comm::complete(s);
        }
    });
    (top, bottom)
}

impl Kernel for Mg {
    fn declare(&self, ctx: &Ctx) -> AppDecl {
        let n = self.n as u64;
        let mut d = AppDecl::new("mg", n, ctx.dist.0.clone());
        d.levels = Some(self.levels.len() as u32);
        for (l, lv) in self.levels.iter().enumerate() {
            let w = 8 * (lv.n as u64 + 2);
            for (a, ro) in [("u", false), ("f", l == 0), ("r", false)] {
                d.arrays.push(ArrayDecl {
                    name: format!("{a}{l}"),
                    bytes_per_row: w,
                    read_only: ro,
                    file: (l == 0).then(|| a.to_string()),
                    per_work: false,
                    level: Some(l as u32),
                    halo: l == 0,
                });
            }
            let sweeps = if l + 1 == self.levels.len() {
                2
            } else {
                2 * (PRE + POST) + 2
            };
            d.exchanges.push(ExchangeDecl {
                kind: ExchangeKind::Halo,
                scaling: MsgScaling::Constant,
                bytes: w,
                per_iteration: 2 * sweeps as u32,
                level: Some(l as u32),
            });
        }
        d.exchanges.push(ExchangeDecl::new(
            ExchangeKind::Reduction,
            MsgScaling::Constant,
            8,
            1,
        ));
        d
    }

    fn iterate(&mut self, ctx: &Ctx) -> Result<()> {
        if self.norms.is_empty() {
            let s = self.levels[0].residual(ctx)?;
            let mut g = 0.0f64;
            comm::all_reduce(ctx.world, &s, &mut g, SystemOperation::sum());
            self.norms.push(g.sqrt());
        }
        self.vcycle(ctx, 0)?;
        let s = self.levels[0].residual(ctx)?;
        let mut g = 0.0f64;
        comm::all_reduce(ctx.world, &s, &mut g, SystemOperation::sum());
        self.norms.push(g.sqrt());
        Ok(())
    }

    fn redistribute(&mut self, ctx: &Ctx, new: &Dist) -> Result<()> {
        let me = ctx.rank;
        let rows = new.0[me] as usize;
        let n = self.n;
        let fine = &mut self.levels[0];
        // u and f carry the state; r and the coarser levels are rebuilt
        // every cycle, so they are reallocated, not moved.
        for a in [&mut fine.u, &mut fine.f] {
            a.redistribute(ctx.world, &ctx.dist, new, me)
                .map_err(anyhow::Error::msg)?;
        }
        fine.r
            .set_core(rows, mheta_runtime::RowBlock::zeroed(rows * (n + 2)));
        fine.r.top.fill(0.0);
        fine.r.bottom.fill(0.0);
        fine.dist = new.clone();
        fine.first = new.offsets()[me] as usize;
        let coarse = coarse_levels(ctx, n, new)?;
        self.levels.truncate(1);
        self.levels.extend(coarse);
        Ok(())
    }

    fn storage(&self) -> StorageReport {
        let fine = &self.levels[0];
        let direct = fine.u.direct().or(fine.f.direct()).or(fine.r.direct());
        StorageReport::new(&self.plan, &["u", "f", "r"], direct)
    }

    fn state(&mut self, s: &mut State) -> Result<()> {
        // r and the coarser levels are rebuilt every cycle.
        let fine = &mut self.levels[0];
        s.rows("u", &mut fine.u)?;
        s.rows("f", &mut fine.f)?;
        s.scalar("norms", &mut self.norms)
    }

    fn finish(&mut self, ctx: &Ctx) -> Result<Value> {
        let n = self.n;
        let h = h_of(n);
        let fine = &mut self.levels[0];
        let m = fine.dist.total() as usize;
        let hy = h_of(m);
        // −Δ_h of sin(πx)·sin(πy/L_y) on the grid: μ_h = (4 − 2cos πh −
        // 2cos πh_y)/h² (8 sin²(πh/2)/h² on the square), f = λ·φ.
        let lam = PI * PI * (1.0 + (hy / h).powi(2));
        let mu = if m == n {
            8.0 / (h * h) * (PI * h / 2.0).sin().powi(2)
        } else {
            (4.0 - 2.0 * (PI * h).cos() - 2.0 * (PI * hy).cos()) / (h * h)
        };
        let scale = if m == n { 2.0 * PI * PI / mu } else { lam / mu };
        let (first, w) = (fine.first, n + 2);
        let (mut alg, mut disc, mut sum) = (0.0f64, 0.0f64, 0.0f64);
        sweep(&mut [(&mut fine.u, Access::Read)], |rows, v| {
            for (i, r) in rows.enumerate() {
                let y = (first + r + 1) as f64 * hy;
                for j in 1..=n {
                    let phi = (PI * j as f64 * h).sin() * (PI * y).sin();
                    let val = v[0].data[i * w + j];
                    alg = alg.max((val - scale * phi).abs());
                    disc = disc.max((val - phi).abs());
                    sum += val;
                }
            }
        })?;
        let mut g = [0.0f64; 2];
        comm::all_reduce(
            ctx.world,
            &[alg, disc][..],
            &mut g[..],
            SystemOperation::max(),
        );
        let mut checksum = 0.0f64;
        comm::all_reduce(ctx.world, &sum, &mut checksum, SystemOperation::sum());
        // Convergence factor: cycles before the residual reaches rounding.
        let r0 = self.norms[0];
        let useful: Vec<f64> = self
            .norms
            .windows(2)
            .take_while(|w| w[0] > 1e-9 * r0)
            .map(|w| w[1] / w[0])
            .collect();
        let factor = if useful.is_empty() {
            f64::NAN
        } else {
            useful
                .iter()
                .map(|x| x.ln())
                .sum::<f64>()
                .exp()
                .powf(1.0 / useful.len() as f64)
        };
        let worst = useful.iter().copied().fold(0.0f64, f64::max);
        Ok(json!({
            "n": n,
            "rows": m,
            "levels": self.levels.len(),
            "residual_norms": self.norms,
            "convergence_factor": factor,
            "worst_factor": worst,
            "alg_error": g[0],
            "checksum": checksum,
            "disc_error": g[1],
            "h": h,
            "verified": factor <= 0.15 && g[0] <= 1e-8,
            "verification": "mean residual reduction per V-cycle <= 0.15 and max |u - u_h| <= 1e-8 (u_h: the discrete solution in closed form)",
        }))
    }
}

fn body(world: &SimpleCommunicator) -> Result<()> {
    let Some(args) = parse_args::<Args>(world)? else {
        return Ok(());
    };
    if args.n < 3 || !(args.n + 1).is_power_of_two() {
        bail!(
            "--n {}: multigrid needs N = 2^k - 1 with k >= 2 (3, 7, 15, ..., 511, 1023)",
            args.n
        );
    }
    let rows = args.rows.unwrap_or(args.n);
    if rows < 1 || !(rows + 1).is_power_of_two() || rows > args.n {
        bail!(
            "--rows {rows}: multigrid needs M = 2^j - 1 with 1 <= M <= N (--n {})",
            args.n
        );
    }
    let n = args.n as usize;
    run(world, "mg", &args.common, rows, 10, json!({}), |ctx| {
        Mg::new(ctx, n)
    })
}

fn main() {
    main_with_mpi("mg", body)
}
