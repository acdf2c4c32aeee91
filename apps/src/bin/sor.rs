//! sor: red-black successive over-relaxation for the 2-D Laplace equation
//! Δu = 0 on the unit square, N×N interior points, N rows GEN_BLOCK.
//!
//! Each iteration is two half-sweeps (red points, (i + j) even, then
//! black), each preceded by a halo exchange (MPI_Sendrecv with the nearest
//! ranks that own rows) and each a stage (in ICLA pieces out of core),
//! then an MPI_Allreduce of the squared update. ω is the optimal
//! 2 / (1 + sin(πh)), h = 1/(N + 1).
//!
//! Verification against an exact solution: the boundary values are
//! g(x, y) = x³ − 3xy², a harmonic cubic whose 5-point discrete Laplacian
//! is exactly zero, so g is also the exact solution of the discrete
//! problem. `error` = max |u − g| over the grid; `verified` when
//! error ≤ 1e-9 (values are O(1); SOR's error falls by about ω − 1 per
//! iteration, so that needs a few times N iterations). A red update reads
//! only black neighbours and vice versa, so every update is the same
//! floating-point operation on every distribution: the result is bit for
//! bit independent of `--dist` and of the memory limit.

use anyhow::Result;
use clap::Parser;
use mheta_apps::checkpoint::State;
use mheta_apps::harmonic::{g, laplace_grid, move_grid};
use mheta_apps::storage::{Access, MemPlan, Rows, sweep};
use mheta_apps::{Common, Ctx, Kernel, StorageReport, comm, grid, main_with_mpi, parse_args, run};
use mheta_model::Dist;
use mheta_trace::{AppDecl, ArrayDecl, ExchangeDecl, ExchangeKind, MsgScaling};
use mpi::collective::SystemOperation;
use serde_json::{Value, json};
use std::f64::consts::PI;

/// Red-black SOR on GEN_BLOCK rows, verified against an exact solution.
#[derive(Parser, Debug)]
#[command(name = "sor", version)]
struct Args {
    /// Interior grid is N×N; its N rows are distributed.
    #[arg(long, default_value_t = 256)]
    n: u64,
    #[command(flatten)]
    common: Common,
}

struct Sor {
    n: usize,
    omega: f64,
    first: usize,
    u: Rows,
    plan: MemPlan,
    last_diff: f64,
}

impl Sor {
    fn new(ctx: &Ctx, n: usize) -> Result<Sor> {
        let (first, u, plan) = laplace_grid(ctx, n, 4)?;
        let h = 1.0 / (n as f64 + 1.0);
        Ok(Sor {
            n,
            omega: 2.0 / (1.0 + (PI * h).sin()),
            first,
            u,
            plan,
            last_diff: 0.0,
        })
    }

    /// One half-sweep of colour `c` (0 red, 1 black); the squared update.
    fn half_sweep(&mut self, ctx: &Ctx, c: usize) -> Result<f64> {
        grid::exchange(ctx.world, &mut self.u, &ctx.dist, ctx.rank);
        let (n, omega, first) = (self.n, self.omega, self.first);
        let w = n + 2;
        ctx.stage(|| {
            let mut diff = 0.0;
            sweep(&mut [(&mut self.u, Access::ReadWrite)], |rows, v| {
                let (data, above, below) = (&mut *v[0].data, v[0].above, v[0].below);
                let nrows = rows.len();
                diff += ctx.work((nrows * n / 2) as u64, || {
                    let mut d = 0.0;
                    for i in 0..nrows {
                        let gi = first + rows.start + i;
                        let (head, rest) = data.split_at_mut(i * w);
                        let (mid, tail) = rest.split_at_mut(w);
                        let up: &[f64] = if i == 0 { above } else { &head[(i - 1) * w..] };
                        let down: &[f64] = if i + 1 < nrows { &tail[..w] } else { below };
                        let mut j = 1 + (gi + 1 + c) % 2;
                        while j <= n {
                            let new = (1.0 - omega) * mid[j]
                                + omega * 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1]);
                            let dv = new - mid[j];
                            d += dv * dv;
                            mid[j] = new;
                            j += 2;
                        }
                    }
                    d
                });
            })?;
            Ok(diff)
        })
    }
}

impl Kernel for Sor {
    fn declare(&self, ctx: &Ctx) -> AppDecl {
        let n = self.n as u64;
        let mut d = AppDecl::new("sor", n, ctx.dist.0.clone());
        d.arrays = vec![ArrayDecl::rows("u", 8 * (n + 2), false, true).with_halo()];
        d.exchanges = vec![
            ExchangeDecl::new(ExchangeKind::Halo, MsgScaling::Constant, 8 * (n + 2), 4),
            ExchangeDecl::new(ExchangeKind::Reduction, MsgScaling::Constant, 8, 1),
        ];
        d
    }

    fn iterate(&mut self, ctx: &Ctx) -> Result<()> {
        let local = self.half_sweep(ctx, 0)? + self.half_sweep(ctx, 1)?;
        let mut global = 0.0f64;
        comm::all_reduce(ctx.world, &local, &mut global, SystemOperation::sum());
        self.last_diff = global;
        Ok(())
    }

    fn redistribute(&mut self, ctx: &Ctx, new: &Dist) -> Result<()> {
        self.first = move_grid(ctx, &mut self.u, self.n, new)?;
        Ok(())
    }

    fn storage(&self) -> StorageReport {
        StorageReport::new(&self.plan, &["u"], self.u.direct())
    }

    fn state(&mut self, s: &mut State) -> Result<()> {
        s.rows("u", &mut self.u)?;
        s.scalar("last_diff", &mut self.last_diff)
    }

    fn finish(&mut self, ctx: &Ctx) -> Result<Value> {
        let n = self.n;
        let h = 1.0 / (n as f64 + 1.0);
        let (gerr, gsum) =
            grid::max_error_and_sum(ctx.world, &mut self.u, self.first, n, |j, r| {
                g(j as f64 * h, (r + 1) as f64 * h)
            })?;
        Ok(json!({
            "n": n,
            "omega": self.omega,
            "error": gerr,
            "checksum": gsum,
            "update_norm": self.last_diff.sqrt(),
            "verified": gerr <= 1e-9,
            "verification": "max |u - (x^3 - 3xy^2)| <= 1e-9 (the exact solution of the discrete problem)",
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
    let n = args.n as usize;
    run(world, "sor", &args.common, args.n, 500, json!({}), |ctx| {
        Sor::new(ctx, n)
    })
}

fn main() {
    main_with_mpi("sor", body)
}
