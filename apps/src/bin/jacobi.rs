//! jacobi: 2-D 5-point Jacobi iteration for -Δu = f on the unit square
//! with u = 0 on the boundary, on an N×N interior grid whose N rows are
//! GEN_BLOCK-distributed over the ranks.
//!
//! Verification. With f = φ = sin(πx)·sin(πy), φ is an eigenvector of the
//! discrete Laplacian (eigenvalue μ = (8/h²)·sin²(πh/2), h = 1/(N+1)), so
//! from u₀ = 0 the k-th Jacobi iterate is exactly u_k = c_k·φ with
//! c_k = (1 − cos(πh)^k)/μ. `error` = max|u_k − c_k·φ| over the grid, and
//! the run is `verified` when error ≤ 1e-10 (values are O(0.05); rounding
//! leaves ~1e-16). The iterates converge to φ/μ, which differs from the
//! PDE's exact solution φ/(2π²) by at most h²/24 (the 5-point stencil's
//! O(h²) discretisation error); `disc_bound` reports it.
//!
//! Each iteration: halo exchange with the nearest ranks that own rows
//! (MPI_Sendrecv), one stage (the sweep), then MPI_Allreduce of the squared
//! update norm.

use anyhow::Result;
use clap::Parser;
use mheta_apps::{AutoReport, Common, Setup, Timer, main_with_mpi};
use mheta_live::markers;
use mheta_runtime::Dist;
use mheta_trace::{APP_VERSION, AppDecl, ArrayDecl, MsgScaling, Topology};
use mpi::collective::{CommunicatorCollectives, SystemOperation};
use mpi::point_to_point::{self as p2p, Destination, Source};
use mpi::topology::{Communicator, SimpleCommunicator};
use std::f64::consts::PI;
use std::time::Instant;

/// 2-D Jacobi on GEN_BLOCK rows, verified against a closed-form iterate.
#[derive(Parser, Debug)]
#[command(name = "jacobi", version)]
struct Args {
    /// Interior grid is N×N; its N rows are distributed.
    #[arg(long, default_value_t = 1024)]
    n: u64,
    #[command(flatten)]
    common: Common,
}

/// Zeros written now (not calloc'd pages that fault on first write), so
/// that no iteration, above all the instrumented one, pays for page faults.
fn zeroed(len: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(len);
    v.resize(len, 0.0);
    v
}

/// One rank's rows: `rows + 2` rows (ghosts above and below) of `n + 2`
/// columns (boundary columns are 0).
struct Block {
    n: usize,
    rows: usize,
    /// First global row.
    first: usize,
    u: Vec<f64>,
    unew: Vec<f64>,
    /// h²·f for the local rows, `rows × n`.
    h2f: Vec<f64>,
}

impl Block {
    fn width(&self) -> usize {
        self.n + 2
    }

    /// Fresh arrays for `rows` rows from global row `first`, u = 0.
    fn new(n: usize, first: usize, rows: usize) -> Block {
        let h = 1.0 / (n as f64 + 1.0);
        let mut h2f = zeroed(rows * n);
        for i in 0..rows {
            let y = (first + i + 1) as f64 * h;
            for j in 0..n {
                let x = (j + 1) as f64 * h;
                h2f[i * n + j] = h * h * (PI * x).sin() * (PI * y).sin();
            }
        }
        Block {
            n,
            rows,
            first,
            u: zeroed((rows + 2) * (n + 2)),
            unew: zeroed((rows + 2) * (n + 2)),
            h2f,
        }
    }

    /// The stencil on local row `i` (0-based) of `src`, written to `out`;
    /// returns the squared change.
    fn row(&self, src: &[f64], i: usize, out: &mut [f64]) -> f64 {
        let w = self.width();
        let n = self.n;
        let up = &src[i * w..(i + 1) * w];
        let mid = &src[(i + 1) * w..(i + 2) * w];
        let down = &src[(i + 2) * w..(i + 3) * w];
        let f = &self.h2f[i * n..(i + 1) * n];
        let mut diff = 0.0;
        for j in 1..=n {
            let v = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1] + f[j - 1]);
            let d = v - mid[j];
            diff += d * d;
            out[j] = v;
        }
        diff
    }

    /// Move the rows to distribution `new` (from `old`), reusing this
    /// block's buffers: u's rows go into the old unew buffer, which becomes
    /// u; the old u buffer becomes unew. Collective over `world`.
    fn redistribute(mut self, world: &SimpleCommunicator, old: &Dist, new: &Dist) -> Block {
        let me = world.rank() as usize;
        let (n, w) = (self.n, self.width());
        let rows = new.0[me] as usize;
        let mut u = std::mem::take(&mut self.unew);
        u.resize((rows + 2) * w, 0.0);
        mheta_live::redistribute_into(
            world,
            old,
            new,
            w,
            &self.u[w..(self.rows + 1) * w],
            &mut u[w..(rows + 1) * w],
        );
        let h2f = mheta_live::redistribute(world, old, new, n, &self.h2f);
        let mut unew = std::mem::take(&mut self.u);
        unew.resize((rows + 2) * w, 0.0);
        // Ghost rows: zero (global boundary) until an exchange fills them.
        // Boundary columns are never written, so they are still zero.
        for buf in [&mut u, &mut unew] {
            buf[..w].fill(0.0);
            buf[(rows + 1) * w..].fill(0.0);
        }
        Block {
            n,
            rows,
            first: new.offsets()[me] as usize,
            u,
            unew,
            h2f,
        }
    }

    /// One sweep of u into unew; returns the squared change.
    fn sweep(&mut self) -> f64 {
        let w = self.width();
        let mut unew = std::mem::take(&mut self.unew);
        let mut diff = 0.0;
        for i in 0..self.rows {
            diff += self.row(&self.u, i, &mut unew[(i + 1) * w..(i + 2) * w]);
        }
        self.unew = unew;
        diff
    }
}

/// The nearest ranks above (lower rank) and below that own rows.
fn neighbours(d: &Dist, me: usize) -> (Option<usize>, Option<usize>) {
    if d.0[me] == 0 {
        return (None, None);
    }
    let up = (0..me).rev().find(|&j| d.0[j] > 0);
    let down = (me + 1..d.ranks()).find(|&j| d.0[j] > 0);
    (up, down)
}

/// Halo exchange: send the first row up and receive the bottom ghost from
/// below, then send the last row down and receive the top ghost from above.
fn exchange(world: &SimpleCommunicator, b: &mut Block, up: Option<usize>, down: Option<usize>) {
    let w = b.width();
    let r = b.rows;
    let (top_ghost_and_first, rest) = b.u.split_at_mut(2 * w);
    let (top_ghost, first) = top_ghost_and_first.split_at_mut(w);
    let first: &[f64] = first;
    let (mid_and_last, bottom_ghost) = rest.split_at_mut((r - 1) * w);
    let last: &[f64] = if r == 1 {
        first
    } else {
        &mid_and_last[(r - 2) * w..]
    };
    // Upward: first row to `up`, bottom ghost from `down`.
    match (up, down) {
        (Some(u), Some(d)) => {
            p2p::send_receive_into(
                first,
                &world.process_at_rank(u as i32),
                bottom_ghost,
                &world.process_at_rank(d as i32),
            );
        }
        (Some(u), None) => world.process_at_rank(u as i32).send(first),
        (None, Some(d)) => {
            world.process_at_rank(d as i32).receive_into(bottom_ghost);
        }
        (None, None) => {}
    }
    // Downward: last row to `down`, top ghost from `up`.
    match (up, down) {
        (Some(u), Some(d)) => {
            p2p::send_receive_into(
                last,
                &world.process_at_rank(d as i32),
                top_ghost,
                &world.process_at_rank(u as i32),
            );
        }
        (None, Some(d)) => world.process_at_rank(d as i32).send(last),
        (Some(u), None) => {
            world.process_at_rank(u as i32).receive_into(top_ghost);
        }
        (None, None) => {}
    }
}

fn run(world: &SimpleCommunicator) -> Result<()> {
    let args = Args::try_parse().map_err(|e| {
        // --help and --version print and exit cleanly on rank 0 only.
        if world.rank() == 0 {
            let _ = e.print();
        }
        if e.use_stderr() {
            anyhow::anyhow!("invalid arguments")
        } else {
            anyhow::anyhow!("")
        }
    });
    let args = match args {
        Ok(a) => a,
        Err(e) if e.to_string().is_empty() => return Ok(()),
        Err(e) => return Err(e),
    };
    if args.n == 0 {
        anyhow::bail!("--n must be at least 1");
    }
    let s = Setup::new(world, &args.common, args.n)?;
    s.warn_unemulated("jacobi");
    let n = args.n as usize;
    let iters = args.common.iters;
    let emu = s.emulator();
    let mut dist = s.dist.clone();
    let decl = AppDecl {
        version: APP_VERSION,
        app: "jacobi".into(),
        rows: args.n,
        dist: dist.0.clone(),
        arrays: vec![
            ArrayDecl {
                name: "u".into(),
                bytes_per_row: 2 * 8 * (args.n + 2),
                read_only: false,
            },
            ArrayDecl {
                name: "f".into(),
                bytes_per_row: 8 * args.n,
                read_only: true,
            },
        ],
        msg_scaling: MsgScaling::Constant,
        topology: Topology::Neighbour1d,
    };
    s.declare(&decl);

    let me = s.rank;
    let offs = dist.offsets();
    let mut b = Block::new(n, offs[me] as usize, dist.0[me] as usize);
    let mut nb = neighbours(&dist, me);
    let mut timer = Timer::default();
    let mut auto_report: Option<AutoReport> = None;
    let mut last_diff = 0.0f64;
    let t_start = Instant::now();
    for it in 0..iters {
        timer.begin();
        markers::iteration_begin();
        if b.rows > 0 {
            exchange(world, &mut b, nb.0, nb.1);
        }
        let local = markers::stage(|| {
            if b.rows == 0 {
                return 0.0;
            }
            let t = Instant::now();
            let d = b.sweep();
            emu.stretch(t);
            d
        });
        let mut global = 0.0f64;
        world.all_reduce_into(&local, &mut global, SystemOperation::sum());
        last_diff = global;
        std::mem::swap(&mut b.u, &mut b.unew);
        markers::iteration_end();
        timer.end();

        if let Some((at, profile)) = &s.auto
            && it + 1 == *at
        {
            let inst = mheta_live::instrumented_iterations();
            let t0 = Instant::now();
            let plan = mheta_live::plan_in_run(world, &decl, &mheta_live::trace_dir(), profile)?;
            let plan_s = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            // Both distributed arrays move: u (with its boundary columns)
            // and the read-only right-hand side.
            b = b.redistribute(world, &dist, &plan.dist);
            let redistribute_s = t1.elapsed().as_secs_f64();
            if let Some(f) = &plan.found {
                auto_report = Some(AutoReport {
                    instrumented_iterations: inst,
                    redistributed_after: it,
                    from_dist: dist.0.clone(),
                    chosen_dist: f.dist.clone(),
                    predicted_from_s: plan.predicted_current_s,
                    predicted_chosen_s: f.predicted_s,
                    measured_from_s: None,
                    measured_chosen_s: None,
                    evaluations: f.evaluations,
                    plan_s,
                    redistribute_s,
                });
            }
            dist = plan.dist;
            nb = neighbours(&dist, me);
            // Redistribution is paid for in this run; keep it out of the
            // iteration times.
            if let Some(t) = timer.times.last_mut() {
                *t = f64::NAN;
            }
        }
    }
    let elapsed_s = t_start.elapsed().as_secs_f64();

    // Verification against the closed-form iterate.
    let h = 1.0 / (n as f64 + 1.0);
    let mu = 8.0 / (h * h) * (PI * h / 2.0).sin().powi(2);
    let ck = (1.0 - (PI * h).cos().powi(iters as i32)) / mu;
    let w = n + 2;
    let (mut err, mut sum) = (0.0f64, 0.0f64);
    for i in 0..b.rows {
        let y = (b.first + i + 1) as f64 * h;
        for j in 0..n {
            let x = (j + 1) as f64 * h;
            let v = b.u[(i + 1) * w + j + 1];
            err = err.max((v - ck * (PI * x).sin() * (PI * y).sin()).abs());
            sum += v;
        }
    }
    let mut gerr = 0.0;
    world.all_reduce_into(&err, &mut gerr, SystemOperation::max());
    let mut gsum = 0.0;
    world.all_reduce_into(&sum, &mut gsum, SystemOperation::sum());

    if me == 0 {
        // Medians leave out iteration 0 (warm-up), the instrumented
        // iterations (perturbed by recording), the redistribution and the
        // first iteration after it.
        let inst: Vec<u64> = if mheta_live::interposer_loaded() {
            mheta_live::instrumented_iterations().collect()
        } else {
            vec![]
        };
        if let Some(a) = auto_report.as_mut() {
            let mut skip = inst.clone();
            skip.push(a.redistributed_after);
            a.measured_from_s = timer.median(1, a.redistributed_after + 1, &skip);
            a.measured_chosen_s = timer.median(a.redistributed_after + 2, iters, &[]);
        }
        let skip = inst;
        let report = serde_json::json!({
            "app": "jacobi",
            "np": s.np,
            "n": n,
            "dist": dist.0,
            "iters": iters,
            "cluster": args.common.cluster,
            "elapsed_s": elapsed_s,
            "iter_median_s": timer.median(1, iters, &skip),
            "iter_times_s": if std::env::var_os("MHETA_DEBUG_TIMES").is_some() { Some(&timer.times) } else { None },
            "verified": gerr <= 1e-10,
            "error": gerr,
            "checksum": gsum,
            "residual": last_diff.sqrt(),
            "disc_bound": h * h / 24.0,
            "auto": auto_report,
        });
        println!("{report}");
    }
    Ok(())
}

fn main() {
    main_with_mpi("jacobi", run)
}
