//! cg: the NAS Parallel Benchmarks CG problem on GEN_BLOCK rows.
//!
//! The inverse power method of NPB CG: each outer iteration runs 25
//! conjugate-gradient iterations on A z = x, then zeta = shift + 1/(x·z)
//! and x = z/‖z‖. A is NPB's `makea` matrix (random sparse outer products
//! from NPB's linear congruential generator, x_{k+1} = 5^13 x_k mod 2^46,
//! scaled by a geometric sequence down to rcond, plus (rcond − shift) on
//! the diagonal), built here for each rank's rows only, with NPB's order of
//! summation, so the rows are the same on every distribution.
//!
//! Rows are GEN_BLOCK (`--class` fixes N, `--dist` sums to it); every rank
//! holds all columns of its rows and all-gathers the direction vector
//! before each product (an all-gather per step, as in Lanczos). Rows have
//! uneven nonzeros, so the app declares the nonzeros of every row as its
//! work per row. Out of core, A streams from disk in ICLA pieces for every
//! product (26 per outer iteration); the vectors stay in memory.
//!
//! Verification: zeta after the class's outer iterations against NPB's
//! published value, relative error ≤ 1e-10 (NPB's own test). Mop/s by
//! NPB's formula: 2·niter·N·(3 + nz(nz+1) + 25(5 + nz(nz+1)) + 3)·1e-6 / t,
//! nz = NONZER, t the time of the timed outer iterations (NPB, like us,
//! runs one untimed iteration first and resets x).

use anyhow::{Result, bail};
use clap::Parser;
use mheta_apps::checkpoint::State;
use mheta_apps::storage::{Csr, MemPlan, NZ_BYTES, Need, RowBytes};
use mheta_apps::{
    Common, Ctx, Fixed, Kernel, StorageReport, comm, grid, main_with_mpi, parse_args, run,
};
use mheta_model::Dist;
use mheta_trace::{AppDecl, ArrayDecl, ExchangeDecl, ExchangeKind, MsgScaling, Topology};
use mpi::collective::SystemOperation;
use serde_json::{Value, json};

/// NPB CG on GEN_BLOCK rows, verified against NPB's zeta.
#[derive(Parser, Debug)]
#[command(name = "cg", version)]
struct Args {
    /// NPB problem class: S, W, A or B.
    #[arg(long, default_value = "S")]
    class: String,
    #[command(flatten)]
    common: Common,
}

/// One NPB CG class.
struct Class {
    name: char,
    na: usize,
    nonzer: usize,
    niter: u64,
    shift: f64,
    /// NPB's published zeta after `niter` iterations (the reference the
    /// computed value is checked against).
    zeta_verify: f64,
}

const CLASSES: [Class; 4] = [
    Class {
        name: 'S',
        na: 1400,
        nonzer: 7,
        niter: 15,
        shift: 10.0,
        zeta_verify: 8.5971775078648,
    },
    Class {
        name: 'W',
        na: 7000,
        nonzer: 8,
        niter: 15,
        shift: 12.0,
        zeta_verify: 10.362595087124,
    },
    Class {
        name: 'A',
        na: 14000,
        nonzer: 11,
        niter: 15,
        shift: 20.0,
        zeta_verify: 17.130235054029,
    },
    Class {
        name: 'B',
        na: 75000,
        nonzer: 13,
        niter: 75,
        shift: 60.0,
        zeta_verify: 22.712745482631,
    },
];
const RCOND: f64 = 0.1;
const CGITMAX: usize = 25;

/// NPB's `randlc`: x ← a·x mod 2^46, returns x·2^-46. Exact in integers,
/// so bit-for-bit NPB's sequence.
fn randlc(x: &mut u64, a: u64) -> f64 {
    *x = ((*x as u128 * a as u128) & ((1u128 << 46) - 1)) as u64;
    *x as f64 * (0.5f64).powi(46)
}

/// NPB's `makea` restricted to global rows `[lo, hi)` (0-based), all
/// columns: returns CSR (row pointers, values, 0-based columns). NPB's
/// steps: the outer products of its random sparse vectors, then the
/// diagonal, then `sparse`'s summation.
fn makea(
    n: usize,
    nonzer: usize,
    shift: f64,
    lo: usize,
    hi: usize,
) -> (Vec<usize>, Vec<f64>, Vec<u32>) {
    let mut trip = outer_products(n, nonzer, lo, hi);
    for i in lo..hi {
        trip.push(((i - lo) as u32, i as u32, RCOND - shift));
    }
    sparse(trip, n, hi - lo)
}

/// NPB's random sparse vectors over `n` positions: its generator's state,
/// the least power of two not below `n`, and the positions taken.
struct Sprnvc {
    tran: u64,
    n: usize,
    nn1: usize,
    mark: Vec<bool>,
}

/// NPB's generator multiplier, 5^13.
const AMULT: u64 = 1_220_703_125;

impl Sprnvc {
    /// The generator NPB's `makea` starts from (one number already drawn).
    fn new(n: usize) -> Sprnvc {
        let mut tran = 314_159_265u64;
        randlc(&mut tran, AMULT); // NPB draws one number before makea
        let mut nn1 = 1usize;
        while nn1 < n {
            nn1 *= 2;
        }
        Sprnvc {
            tran,
            n,
            nn1,
            mark: vec![false; n],
        }
    }

    /// NPB's `sprnvc`: `nonzer` distinct random positions (`iv`, 0-based)
    /// with random values (`v`).
    fn next(&mut self, nonzer: usize, v: &mut Vec<f64>, iv: &mut Vec<usize>) {
        v.clear();
        iv.clear();
        while v.len() < nonzer {
            let vecelt = randlc(&mut self.tran, AMULT);
            let vecloc = randlc(&mut self.tran, AMULT);
            let i = (self.nn1 as f64 * vecloc) as usize; // 0-based
            if i >= self.n || self.mark[i] {
                continue;
            }
            self.mark[i] = true;
            v.push(vecelt);
            iv.push(i);
        }
        for &i in iv.iter() {
            self.mark[i] = false;
        }
    }
}

/// NPB's `vecset`: element `i` of the sparse vector (`v`, `iv`) is 0.5.
fn vecset(v: &mut Vec<f64>, iv: &mut Vec<usize>, i: usize) {
    match iv.iter().position(|&j| j == i) {
        Some(k) => v[k] = 0.5,
        None => {
            v.push(0.5);
            iv.push(i);
        }
    }
}

/// NPB's outer products: for each outer row a random sparse vector (with
/// its own element 0.5) times itself, scaled by a geometric sequence from
/// 1 down to RCOND; the triples (local row, column, value) of rows
/// `[lo, hi)`, in generation order.
fn outer_products(n: usize, nonzer: usize, lo: usize, hi: usize) -> Vec<(u32, u32, f64)> {
    let mut generator = Sprnvc::new(n);
    let ratio = RCOND.powf(1.0 / n as f64);
    let mut size = 1.0f64;
    let mut trip: Vec<(u32, u32, f64)> = Vec::new();
    let mut v: Vec<f64> = Vec::with_capacity(nonzer + 1);
    let mut iv: Vec<usize> = Vec::with_capacity(nonzer + 1);
    for iouter in 0..n {
        generator.next(nonzer, &mut v, &mut iv);
        vecset(&mut v, &mut iv, iouter);
        for (k, &jcol) in iv.iter().enumerate() {
            let scale = size * v[k];
            for (k1, &irow) in iv.iter().enumerate() {
                if irow >= lo && irow < hi {
                    trip.push(((irow - lo) as u32, jcol as u32, v[k1] * scale));
                }
            }
        }
        size *= ratio;
    }
    trip
}

/// NPB's `sparse` on `rows` local rows of `n` columns: bucket the
/// triples by row (stable), then sum duplicates in order of first
/// appearance of each column, dropping zeros; CSR as [`makea`]'s.
fn sparse(trip: Vec<(u32, u32, f64)>, n: usize, rows: usize) -> (Vec<usize>, Vec<f64>, Vec<u32>) {
    let (start, bucket) = bucket_by_row(&trip, rows);
    drop(trip);
    let mut x = vec![0.0f64; n];
    let mut seen = vec![false; n];
    let mut order: Vec<u32> = Vec::new();
    let mut rowptr = Vec::with_capacity(rows + 1);
    let (mut vals, mut cols) = (Vec::new(), Vec::new());
    rowptr.push(0);
    for r in 0..rows {
        order.clear();
        for &(c, a) in &bucket[start[r]..start[r + 1]] {
            let c = c as usize;
            x[c] += a;
            if !seen[c] && x[c] != 0.0 {
                seen[c] = true;
                order.push(c as u32);
            }
        }
        for &c in &order {
            let c = c as usize;
            seen[c] = false;
            let xi = x[c];
            x[c] = 0.0;
            if xi != 0.0 {
                vals.push(xi);
                cols.push(c as u32);
            }
        }
        rowptr.push(vals.len());
    }
    (rowptr, vals, cols)
}

/// The triples' (column, value) grouped by local row, each row's in
/// generation order, and where each of the `rows` rows starts.
fn bucket_by_row(trip: &[(u32, u32, f64)], rows: usize) -> (Vec<usize>, Vec<(u32, f64)>) {
    let mut start = vec![0usize; rows + 1];
    for t in trip {
        start[t.0 as usize + 1] += 1;
    }
    for r in 0..rows {
        start[r + 1] += start[r];
    }
    let mut fill = start.clone();
    let mut bucket = vec![(0u32, 0.0f64); trip.len()];
    for t in trip {
        let k = &mut fill[t.0 as usize];
        bucket[*k] = (t.1, t.2);
        *k += 1;
    }
    (start, bucket)
}

struct Cg {
    class: &'static Class,
    a: Csr,
    /// Nonzeros of every global row (the declared work per row).
    work: Vec<u64>,
    x: Vec<f64>,
    z: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
    r: Vec<f64>,
    /// The all-gathered vector.
    full: Vec<f64>,
    plan: MemPlan,
    zeta: f64,
    rnorm: f64,
}

fn dot(ctx: &Ctx, a: &[f64], b: &[f64]) -> f64 {
    let local: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let mut g = 0.0;
    comm::all_reduce(ctx.world, &local, &mut g, SystemOperation::sum());
    g
}

impl Cg {
    fn new(ctx: &Ctx, class: &'static Class) -> Result<Cg> {
        let (first, rows) = ctx.my_rows();
        let n = class.na;
        let (rowptr, vals, cols) = makea(n, class.nonzer, class.shift, first, first + rows);
        // Every rank learns every row's nonzeros (the declaration, and
        // the element ranges of a redistribution).
        let mine: Vec<u64> = rowptr.windows(2).map(|w| (w[1] - w[0]) as u64).collect();
        let mut work = vec![0u64; n];
        {
            grid::all_gather_rows(ctx.world, &ctx.dist, &mine, &mut work);
        }
        let need = Need {
            name: "a".into(),
            row_bytes: RowBytes::Each(mine.iter().map(|&w| w as usize * NZ_BYTES).collect()),
            read_only: true,
            halo: false,
        };
        // x, z, p, q, r (local), the gathered vector, row pointers.
        let fixed = Fixed {
            bytes: 8 * n as u64 + 8,
            per_row: 48,
        };
        let plan = ctx.plan(fixed, std::slice::from_ref(&need))?;
        let a = Csr::new(
            "a",
            rowptr,
            vals,
            cols,
            &plan.pieces,
            ctx.disk_for(&plan, 0),
        )?;
        let mut cg = Cg {
            class,
            a,
            work,
            x: vec![1.0; rows],
            z: vec![0.0; rows],
            p: vec![0.0; rows],
            q: vec![0.0; rows],
            r: vec![0.0; rows],
            full: vec![0.0; n],
            plan,
            zeta: 0.0,
            rnorm: 0.0,
        };
        // NPB's untimed first iteration (pages in code and data), then x = 1.
        cg.outer(ctx)?;
        cg.x.fill(1.0);
        cg.zeta = 0.0;
        Ok(cg)
    }

    /// All-gather the local vector `v` into `full`, then `out = A full`
    /// (one stage: the product, streaming A from disk out of core).
    fn matvec(&mut self, ctx: &Ctx, which: Which) -> Result<()> {
        let v: &[f64] = match which {
            Which::P => &self.p,
            Which::Z => &self.z,
        };
        grid::all_gather_rows(ctx.world, &ctx.dist, v, &mut self.full);
        let full = &self.full;
        let out: &mut [f64] = match which {
            Which::P => &mut self.q,
            Which::Z => &mut self.r,
        };
        ctx.stage(|| {
            self.a.sweep(|rows, rp, vals, cols| {
                let nonzeros = (rp[rp.len() - 1] - rp[0]) as u64;
                ctx.work(nonzeros, || {
                    let base = rp[0];
                    for (i, r) in rows.enumerate() {
                        let (s, e) = (rp[i] - base, rp[i + 1] - base);
                        let mut sum = 0.0;
                        for (a, &c) in vals[s..e].iter().zip(&cols[s..e]) {
                            sum += a * full[c as usize];
                        }
                        out[r] = sum;
                    }
                })
            })
        })?;
        Ok(())
    }

    /// NPB's conj_grad: 25 CG iterations on A z = x, then r = A z and
    /// rnorm = ‖x − r‖.
    fn conj_grad(&mut self, ctx: &Ctx) -> Result<()> {
        self.q.fill(0.0);
        self.z.fill(0.0);
        self.r.copy_from_slice(&self.x);
        self.p.copy_from_slice(&self.r);
        let mut rho = dot(ctx, &self.r, &self.r);
        for _ in 0..CGITMAX {
            self.matvec(ctx, Which::P)?;
            let d = dot(ctx, &self.p, &self.q);
            let alpha = rho / d;
            let rho0 = rho;
            ctx.stage(|| {
                ctx.work(self.z.len() as u64, || {
                    for j in 0..self.z.len() {
                        self.z[j] += alpha * self.p[j];
                        self.r[j] -= alpha * self.q[j];
                    }
                })
            });
            rho = dot(ctx, &self.r, &self.r);
            let beta = rho / rho0;
            ctx.stage(|| {
                ctx.work(self.p.len() as u64, || {
                    for j in 0..self.p.len() {
                        self.p[j] = self.r[j] + beta * self.p[j];
                    }
                })
            });
        }
        self.matvec(ctx, Which::Z)?;
        let local: f64 = self
            .x
            .iter()
            .zip(&self.r)
            .map(|(x, r)| (x - r) * (x - r))
            .sum();
        let mut g = 0.0f64;
        comm::all_reduce(ctx.world, &local, &mut g, SystemOperation::sum());
        self.rnorm = g.sqrt();
        Ok(())
    }

    /// One outer iteration of the inverse power method.
    fn outer(&mut self, ctx: &Ctx) -> Result<()> {
        self.conj_grad(ctx)?;
        let local = [
            self.x.iter().zip(&self.z).map(|(x, z)| x * z).sum::<f64>(),
            self.z.iter().map(|z| z * z).sum::<f64>(),
        ];
        let mut g = [0.0f64; 2];
        comm::all_reduce(ctx.world, &local[..], &mut g[..], SystemOperation::sum());
        self.zeta = self.class.shift + 1.0 / g[0];
        let scale = 1.0 / g[1].sqrt();
        for (x, z) in self.x.iter_mut().zip(&self.z) {
            *x = scale * z;
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Which {
    P,
    Z,
}

impl Kernel for Cg {
    fn declare(&self, ctx: &Ctx) -> AppDecl {
        let n = self.class.na as u64;
        let mut d = AppDecl::new("cg", n, ctx.dist.0.clone());
        d.topology = Topology::Fixed;
        d.msg_scaling = MsgScaling::SenderRows;
        d.work_per_row = Some(self.work.clone());
        d.arrays = vec![ArrayDecl {
            name: "a".into(),
            bytes_per_row: NZ_BYTES as u64,
            read_only: true,
            file: Some("a".into()),
            per_work: true,
            level: None,
            halo: false,
        }];
        for v in ["x", "z", "p", "q", "r"] {
            d.arrays.push(ArrayDecl::rows(v, 8, false, false));
        }
        d.exchanges = vec![
            ExchangeDecl::new(
                ExchangeKind::Allgather,
                MsgScaling::SenderRows,
                8,
                CGITMAX as u32 + 1,
            ),
            ExchangeDecl::new(
                ExchangeKind::Reduction,
                MsgScaling::Constant,
                8,
                2 * CGITMAX as u32 + 3,
            ),
        ];
        d
    }

    fn iterate(&mut self, ctx: &Ctx) -> Result<()> {
        self.outer(ctx)
    }

    fn redistribute(&mut self, ctx: &Ctx, new: &Dist) -> Result<()> {
        let me = ctx.rank;
        // Rows move as element ranges: GEN_BLOCK over the nonzeros.
        let nz_of = |d: &Dist| -> Dist {
            let offs = d.offsets();
            Dist(
                (0..d.ranks())
                    .map(|j| {
                        let (a, b) = (offs[j] as usize, (offs[j] + d.0[j]) as usize);
                        self.work[a..b].iter().sum()
                    })
                    .collect(),
            )
        };
        let (old_e, new_e) = (nz_of(&ctx.dist), nz_of(new));
        let Some((vals, cols)) = self.a.core_mut() else {
            bail!("the matrix is out of core; --auto moves in-core arrays only");
        };
        let (mut vals, mut cols) = (std::mem::take(vals), std::mem::take(cols));
        mheta_runtime::redistribute_in_place(ctx.world, &old_e, &new_e, 1, &mut vals);
        mheta_runtime::redistribute_in_place(ctx.world, &old_e, &new_e, 1, &mut cols);
        let first = new.offsets()[me] as usize;
        let rows = new.0[me] as usize;
        let mut rowptr = Vec::with_capacity(rows + 1);
        rowptr.push(0);
        for r in first..first + rows {
            rowptr.push(rowptr[rowptr.len() - 1] + self.work[r] as usize);
        }
        self.a.set_core(rowptr, vals, cols);
        mheta_runtime::redistribute_in_place(ctx.world, &ctx.dist, new, 1, &mut self.x);
        for v in [&mut self.z, &mut self.p, &mut self.q, &mut self.r] {
            *v = vec![0.0; rows];
        }
        Ok(())
    }

    fn storage(&self) -> StorageReport {
        StorageReport::new(&self.plan, &["a"], self.a.direct())
    }

    fn state(&mut self, s: &mut State) -> Result<()> {
        // The matrix is fixed, built again for any rows; conj_grad starts
        // afresh from x every outer iteration.
        s.local("x", 1, &mut self.x)?;
        s.scalar("zeta", &mut self.zeta)?;
        s.scalar("rnorm", &mut self.rnorm)
    }

    fn finish(&mut self, ctx: &Ctx) -> Result<Value> {
        let c = self.class;
        let err = (self.zeta - c.zeta_verify).abs() / c.zeta_verify;
        let full_run = ctx.iters == c.niter;
        let nzz = (c.nonzer * (c.nonzer + 1)) as f64;
        let flops_per_iter = 2.0 * c.na as f64 * (3.0 + nzz + 25.0 * (5.0 + nzz) + 3.0);
        Ok(json!({
            "class": c.name.to_string(),
            "na": c.na,
            "nonzer": c.nonzer,
            "shift": c.shift,
            "nonzeros": self.work.iter().sum::<u64>(),
            "zeta": self.zeta,
            "zeta_reference": c.zeta_verify,
            "zeta_rel_error": err,
            "rnorm": self.rnorm,
            "flops_per_iteration": flops_per_iter,
            "verified": full_run && err <= 1e-10,
            "verification": if full_run {
                format!("zeta against NPB's class {} value, relative error <= 1e-10", c.name)
            } else {
                format!("not verifiable: NPB's value is for --iters {}", c.niter)
            },
        }))
    }
}

fn body(world: &mpi::topology::SimpleCommunicator) -> Result<()> {
    let Some(args) = parse_args::<Args>(world)? else {
        return Ok(());
    };
    let Some(class) = CLASSES.iter().find(|c| {
        args.class.len() == 1
            && c.name
                .eq_ignore_ascii_case(&args.class.chars().next().unwrap_or(' '))
    }) else {
        bail!(
            "--class {}: unknown NPB CG class (known: S, W, A, B)",
            args.class
        );
    };
    let extra = json!({});
    run(
        world,
        "cg",
        &args.common,
        class.na as u64,
        class.niter,
        extra,
        |ctx| Cg::new(ctx, class),
    )
    .map(|_| ())
}

fn main() {
    main_with_mpi("cg", body)
}
