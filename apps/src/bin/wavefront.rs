//! wavefront: a pipelined kernel like the MHETA paper's RNA pseudoknot
//! code: lexicographic Gauss–Seidel sweeps for the 2-D Laplace equation on
//! an N×N grid, N rows GEN_BLOCK, the columns cut into `--tiles` tiles.
//!
//! Each point takes the new values of the points above and to its left
//! and the old values below and to its right, so rank i can start tile t
//! only when rank i−1 has finished it: per iteration, each rank first
//! sends its first row (old values) up, then for every tile receives the
//! new last row of the rank above for that tile's columns, updates its
//! rows there (one stage), and sends its own last row down (MHETA eq. 4:
//! a wait per tile). Ranks that own no rows sit out.
//!
//! Verification: rank 0 recomputes the same recurrence serially on the
//! whole grid and compares every value; `verified` when they agree bit for
//! bit (every update is the same floating-point operation in the same
//! order of dependencies). The boundary is g = x³ − 3xy² as in `sor`, the
//! discrete problem's exact solution, and `error` = max |u − g| shows the
//! sweeps converging.

use anyhow::Result;
use clap::Parser;
use mheta_apps::checkpoint::State;
use mheta_apps::harmonic::{g, initial_row, laplace_grid, move_grid};
use mheta_apps::storage::{Access, MemPlan, Rows, sweep};
use mheta_apps::{Common, Ctx, Kernel, StorageReport, comm, grid, main_with_mpi, parse_args, run};
use mheta_model::Dist;
use mheta_trace::{AppDecl, ArrayDecl, ExchangeDecl, ExchangeKind, MsgScaling};
use mpi::collective::Root;
use mpi::datatype::PartitionMut;
use mpi::topology::Communicator;
use serde_json::{Value, json};

/// Pipelined Gauss–Seidel in tiles on GEN_BLOCK rows, verified serially.
#[derive(Parser, Debug)]
#[command(name = "wavefront", version)]
struct Args {
    /// Grid is N×N interior points; its N rows are distributed.
    #[arg(long, default_value_t = 512)]
    n: u64,
    /// Column tiles per sweep (pipeline stages).
    #[arg(long, default_value_t = 8)]
    tiles: u64,
    #[command(flatten)]
    common: Common,
}

/// Columns `[c0, c1)` (1-based interior) of tile `t` of `tiles`.
fn tile_cols(n: usize, tiles: usize, t: usize) -> (usize, usize) {
    (1 + t * n / tiles, 1 + (t + 1) * n / tiles)
}

/// The Gauss–Seidel update of columns `[c0, c1)` of the rows in `data`
/// (rows of `w` values), in row order: up is new, down is old.
fn gs_rows(data: &mut [f64], w: usize, above_new: &[f64], below: &[f64], c0: usize, c1: usize) {
    let rows = data.len() / w;
    for i in 0..rows {
        let (head, rest) = data.split_at_mut(i * w);
        let (mid, tail) = rest.split_at_mut(w);
        let up: &[f64] = if i == 0 {
            above_new
        } else {
            &head[(i - 1) * w..]
        };
        let down: &[f64] = if i + 1 < rows { &tail[..w] } else { below };
        for j in c0..c1 {
            mid[j] = 0.25 * (up[j] + down[j] + mid[j - 1] + mid[j + 1]);
        }
    }
}

struct Wavefront {
    n: usize,
    tiles: usize,
    first: usize,
    u: Rows,
    plan: MemPlan,
}

impl Wavefront {
    fn new(ctx: &Ctx, n: usize, tiles: usize) -> Result<Wavefront> {
        let (first, u, plan) = laplace_grid(ctx, n, 5)?;
        Ok(Wavefront {
            n,
            tiles,
            first,
            u,
            plan,
        })
    }

    /// Every rank's rows, gathered at rank 0 (None elsewhere).
    fn gather(&mut self, ctx: &Ctx) -> Result<Option<Vec<f64>>> {
        let w = self.n + 2;
        let mut mine = Vec::with_capacity(self.u.rows * w);
        sweep(&mut [(&mut self.u, Access::Read)], |_, v| {
            mine.extend_from_slice(v[0].data)
        })?;
        let root = ctx.world.process_at_rank(0);
        if ctx.rank == 0 {
            let counts: Vec<i32> = ctx
                .dist
                .0
                .iter()
                .map(|&s| (s as usize * w) as i32)
                .collect();
            let displs: Vec<i32> = ctx
                .dist
                .offsets()
                .iter()
                .map(|&o| (o as usize * w) as i32)
                .collect();
            let mut all = vec![0.0f64; self.n * w];
            {
                let mut part = PartitionMut::new(&mut all[..], &counts[..], &displs[..]);
                root.gather_varcount_into_root(&mine[..], &mut part);
            }
            Ok(Some(all))
        } else {
            root.gather_varcount_into(&mine[..]);
            Ok(None)
        }
    }
}

impl Kernel for Wavefront {
    fn declare(&self, ctx: &Ctx) -> AppDecl {
        let n = self.n as u64;
        let mut d = AppDecl::new("wavefront", n, ctx.dist.0.clone());
        d.tiles = Some(self.tiles as u32);
        d.arrays = vec![ArrayDecl::rows("u", 8 * (n + 2), false, true).with_halo()];
        d.exchanges = vec![
            ExchangeDecl::new(ExchangeKind::Halo, MsgScaling::Constant, 8 * (n + 2), 1),
            ExchangeDecl::new(
                ExchangeKind::Pipeline,
                MsgScaling::Constant,
                8 * n / self.tiles as u64,
                self.tiles as u32,
            ),
        ];
        d
    }

    fn iterate(&mut self, ctx: &Ctx) -> Result<()> {
        if self.u.rows == 0 {
            return Ok(());
        }
        let (n, w) = (self.n, self.n + 2);
        let (up, down) = grid::neighbours(&ctx.dist, ctx.rank);
        // The old first row goes up; the old row below comes from below.
        let first = self.u.first_row().to_vec();
        grid::shift(ctx.world, &first, up, &mut self.u.bottom, down);
        for t in 0..self.tiles {
            let (c0, c1) = tile_cols(n, self.tiles, t);
            if c0 == c1 {
                continue;
            }
            // MHETA eq. 4: wait for the tile from the rank above.
            if let Some(u) = up {
                comm::recv_tagged(ctx.world, &mut self.u.top[c0..c1], u, t as i32);
            }
            ctx.stage(|| {
                sweep(&mut [(&mut self.u, Access::ReadWrite)], |_, v| {
                    let (data, above_new, below) = (&mut *v[0].data, v[0].above_new, v[0].below);
                    let points = (data.len() / w * (c1 - c0)) as u64;
                    ctx.work(points, || gs_rows(data, w, above_new, below, c0, c1));
                })
            })?;
            if let Some(d) = down {
                let last = &self.u.last_row()[c0..c1];
                comm::send_tagged(ctx.world, last, d, t as i32);
            }
        }
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
        s.rows("u", &mut self.u)
    }

    fn finish(&mut self, ctx: &Ctx) -> Result<Value> {
        let (n, w) = (self.n, self.n + 2);
        let all = self.gather(ctx)?;
        let mut out = json!({ "n": n, "tiles": self.tiles, "verified": false });
        if let Some(par) = all {
            // The same recurrence, serially, on the whole grid.
            let mut s = vec![0.0f64; n * w];
            for (r, row) in s.chunks_exact_mut(w).enumerate() {
                initial_row(n, r as isize, row);
            }
            let (mut top, mut bottom) = (vec![0.0; w], vec![0.0; w]);
            initial_row(n, -1, &mut top);
            initial_row(n, n as isize, &mut bottom);
            for _ in 0..ctx.iters {
                gs_rows(&mut s, w, &top, &bottom, 1, n + 1);
            }
            let h = 1.0 / (n as f64 + 1.0);
            let (mut diff, mut err, mut sum) = (0.0f64, 0.0f64, 0.0f64);
            for r in 0..n {
                for j in 1..=n {
                    let (p, q) = (par[r * w + j], s[r * w + j]);
                    diff = diff.max((p - q).abs());
                    err = err.max((p - g(j as f64 * h, (r + 1) as f64 * h)).abs());
                    sum += p;
                }
            }
            out = json!({
                "n": n,
                "tiles": self.tiles,
                "max_diff_serial": diff,
                "error": err,
                "checksum": sum,
                "verified": diff == 0.0,
                "verification": "every value equals a serial run of the same recurrence, bit for bit",
            });
        }
        Ok(out)
    }
}

fn body(world: &mpi::topology::SimpleCommunicator) -> Result<()> {
    let Some(args) = parse_args::<Args>(world)? else {
        return Ok(());
    };
    if args.n == 0 {
        anyhow::bail!("--n must be at least 1");
    }
    if args.tiles == 0 || args.tiles > args.n {
        anyhow::bail!(
            "--tiles {} must be between 1 and N = {}",
            args.tiles,
            args.n
        );
    }
    let (n, tiles) = (args.n as usize, args.tiles as usize);
    let extra = json!({});
    run(world, "wavefront", &args.common, args.n, 20, extra, |ctx| {
        Wavefront::new(ctx, n, tiles)
    })
}

fn main() {
    main_with_mpi("wavefront", body)
}
