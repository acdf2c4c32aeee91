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
//! (MPI_Sendrecv), one stage (the sweep, in ICLA pieces out of core), then
//! MPI_Allreduce of the squared update norm. The sweep updates u in place
//! with a one-row delayed write-back, so each grid point's update is the
//! same floating-point operation on every distribution and every piece
//! size: the result is bit-for-bit independent of `--dist` and of the
//! memory limit.

use anyhow::Result;
use clap::Parser;
use mheta_apps::checkpoint::State;
use mheta_apps::storage::{Access, MemPlan, Need, Rows, sweep};
use mheta_apps::{
    Common, Ctx, Fixed, Kernel, StorageReport, comm, grid, main_with_mpi, parse_args, run,
};
use mheta_model::Dist;
use mheta_trace::{AppDecl, ArrayDecl, ExchangeDecl, ExchangeKind, MsgScaling};
use mpi::collective::SystemOperation;
use serde_json::{Value, json};
use std::f64::consts::PI;

/// 2-D Jacobi on GEN_BLOCK rows, verified against a closed-form iterate.
#[derive(Parser, Debug)]
#[command(name = "jacobi", version)]
struct Args {
    /// Interior grid is N×N; its N rows are distributed.
    #[arg(long, default_value_t = 1024)]
    n: u64,
    /// Rows of the interior grid instead of N: an M×N grid of the same
    /// spacing, so the messages (rows of N) stay the same while the work
    /// changes (Romanazzi and Jimack's runs). Verified the same way, with
    /// f = sin(πx)·sin(πy/L_y) on the M×N rectangle.
    #[arg(long, value_name = "M")]
    rows: Option<u64>,
    #[command(flatten)]
    common: Common,
}

struct Jacobi {
    n: usize,
    /// Rows of n + 2 values (boundary columns are 0), with ghost rows.
    u: Rows,
    /// h²·f, rows of n values.
    f: Rows,
    first: usize,
    plan: MemPlan,
    last_diff: f64,
}

fn h2f_row(n: usize, m: usize, global_row: usize, row: &mut [f64]) {
    let h = 1.0 / (n as f64 + 1.0);
    let y = (global_row + 1) as f64 / (m as f64 + 1.0);
    for (j, v) in row.iter_mut().enumerate() {
        let x = (j + 1) as f64 * h;
        *v = h * h * (PI * x).sin() * (PI * y).sin();
    }
}

impl Jacobi {
    fn new(ctx: &Ctx, n: usize) -> Result<Jacobi> {
        let (first, rows) = ctx.my_rows();
        let m = ctx.dist.total() as usize;
        let w = n + 2;
        let needs = [
            Need::fixed("u", rows, 8 * w, false, true),
            Need::fixed("f", rows, 8 * n, true, false),
        ];
        // Ghost rows, the sweep's two temporary rows and the carries.
        let plan = ctx.plan(
            Fixed {
                bytes: (8 * 8 * w) as u64,
                per_row: 0,
            },
            &needs,
        )?;
        let u = Rows::new(
            "u",
            w,
            rows,
            true,
            &plan.pieces,
            ctx.disk_for(&plan, 0),
            |_, _| {},
        )?;
        let f = Rows::new(
            "f",
            n,
            rows,
            false,
            &plan.pieces,
            ctx.disk_for(&plan, 1),
            |r, row| h2f_row(n, m, first + r, row),
        )?;
        Ok(Jacobi {
            n,
            u,
            f,
            first,
            plan,
            last_diff: 0.0,
        })
    }
}

/// One Jacobi sweep over a piece, in place: new row i is computed from the
/// old rows i-1, i, i+1 into a temporary and written back after row i+1
/// has used the old row i. Returns the squared change.
fn sweep_piece(
    n: usize,
    data: &mut [f64],
    above: &[f64],
    below: &[f64],
    f: &[f64],
    tmp: &mut [Vec<f64>; 2],
) -> f64 {
    let w = n + 2;
    let rows = data.len() / w;
    let mut diff = 0.0;
    for i in 0..rows {
        let mut d = 0.0;
        {
            let up = if i == 0 {
                above
            } else {
                &data[(i - 1) * w..i * w]
            };
            let mid = &data[i * w..(i + 1) * w];
            let down = if i + 1 < rows {
                &data[(i + 1) * w..(i + 2) * w]
            } else {
                below
            };
            let fr = &f[i * n..(i + 1) * n];
            let out = &mut tmp[i % 2];
            for j in 1..=n {
                let v = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1] + fr[j - 1]);
                let dv = v - mid[j];
                d += dv * dv;
                out[j] = v;
            }
        }
        diff += d;
        if i > 0 {
            let prev = &tmp[(i - 1) % 2];
            data[(i - 1) * w + 1..i * w - 1].copy_from_slice(&prev[1..=n]);
        }
    }
    if rows > 0 {
        let last = &tmp[(rows - 1) % 2];
        data[(rows - 1) * w + 1..rows * w - 1].copy_from_slice(&last[1..=n]);
    }
    diff
}

impl Kernel for Jacobi {
    fn declare(&self, ctx: &Ctx) -> AppDecl {
        let n = self.n as u64;
        let mut d = AppDecl::new("jacobi", n, ctx.dist.0.clone());
        d.arrays = vec![
            ArrayDecl::rows("u", 8 * (n + 2), false, true).with_halo(),
            ArrayDecl::rows("f", 8 * n, true, true),
        ];
        d.exchanges = vec![
            ExchangeDecl::new(ExchangeKind::Halo, MsgScaling::Constant, 8 * (n + 2), 2),
            ExchangeDecl::new(ExchangeKind::Reduction, MsgScaling::Constant, 8, 1),
        ];
        d
    }

    fn iterate(&mut self, ctx: &Ctx) -> Result<()> {
        grid::exchange(ctx.world, &mut self.u, &ctx.dist, ctx.rank);
        let n = self.n;
        let mut tmp = [vec![0.0; n + 2], vec![0.0; n + 2]];
        let local = ctx.stage(|| -> Result<f64> {
            let mut diff = 0.0;
            sweep(
                &mut [
                    (&mut self.u, Access::ReadWrite),
                    (&mut self.f, Access::Read),
                ],
                |_, v| {
                    let (uv, fv) = v.split_at_mut(1);
                    let points = (uv[0].data.len() / (n + 2) * n) as u64;
                    diff += ctx.work(points, || {
                        sweep_piece(
                            n,
                            uv[0].data,
                            uv[0].above,
                            uv[0].below,
                            fv[0].data,
                            &mut tmp,
                        )
                    });
                },
            )?;
            Ok(diff)
        })?;
        let mut global = 0.0f64;
        comm::all_reduce(ctx.world, &local, &mut global, SystemOperation::sum());
        self.last_diff = global;
        Ok(())
    }

    fn redistribute(&mut self, ctx: &Ctx, new: &Dist) -> Result<()> {
        let me = ctx.rank;
        // Ghosts become zero (the global boundary) until an exchange fills them.
        for a in [&mut self.u, &mut self.f] {
            a.redistribute(ctx.world, &ctx.dist, new, me)
                .map_err(anyhow::Error::msg)?;
        }
        self.first = new.offsets()[me] as usize;
        Ok(())
    }

    fn storage(&self) -> StorageReport {
        StorageReport::new(&self.plan, &["u", "f"], self.u.direct().or(self.f.direct()))
    }

    fn state(&mut self, s: &mut State) -> Result<()> {
        // f is the fixed right-hand side, built again for any rows.
        s.rows("u", &mut self.u)?;
        s.scalar("last_diff", &mut self.last_diff)
    }

    fn finish(&mut self, ctx: &Ctx) -> Result<Value> {
        let n = self.n;
        let h = 1.0 / (n as f64 + 1.0);
        let m = ctx.dist.total() as usize;
        let hy = 1.0 / (m as f64 + 1.0);
        // u_k = c_k·φ with c_{k+1} = ρ·c_k + h²/4, ρ = (cos πh + cos πh_y)/2:
        // c_k = (h²/4)(1 − ρ^k)/(1 − ρ), (1 − cos(πh)^k)/μ on the square.
        let ck = if m == n {
            let mu = 8.0 / (h * h) * (PI * h / 2.0).sin().powi(2);
            (1.0 - (PI * h).cos().powi(ctx.iters as i32)) / mu
        } else {
            let rho = 0.5 * ((PI * h).cos() + (PI * hy).cos());
            0.25 * h * h * (1.0 - rho.powi(ctx.iters as i32)) / (1.0 - rho)
        };
        let (gerr, gsum) =
            grid::max_error_and_sum(ctx.world, &mut self.u, self.first, n, |j, r| {
                ck * (PI * j as f64 * h).sin() * (PI * (r + 1) as f64 * hy).sin()
            })?;
        Ok(json!({
            "n": n,
            "rows": m,
            "verified": gerr <= 1e-10,
            "error": gerr,
            "checksum": gsum,
            "residual": self.last_diff.sqrt(),
            "disc_bound": h * h / 24.0,
        }))
    }
}

fn body(world: &mpi::topology::SimpleCommunicator) -> Result<()> {
    let Some(args) = parse_args::<Args>(world)? else {
        return Ok(());
    };
    if args.n == 0 {
        anyhow::bail!("--n must be at least 1");
    }
    let rows = args.rows.unwrap_or(args.n);
    if rows == 0 {
        anyhow::bail!("--rows must be at least 1");
    }
    let n = args.n as usize;
    run(world, "jacobi", &args.common, rows, 100, json!({}), |ctx| {
        Jacobi::new(ctx, n)
    })
}

fn main() {
    main_with_mpi("jacobi", body)
}
