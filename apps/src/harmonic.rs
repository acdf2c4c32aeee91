//! The Laplace problem that `sor` and `wavefront` solve: Δu = 0 on the
//! unit square, N×N interior points (h = 1/(N + 1)), boundary values
//! g(x, y) = x³ − 3xy². g is harmonic and its 5-point discrete Laplacian is
//! exactly zero (second differences of cubics are exact), so g is also the
//! exact solution of the discrete problem.

use crate::storage::Rows;

/// The exact (and boundary) solution.
pub fn g(x: f64, y: f64) -> f64 {
    x * x * x - 3.0 * x * y * y
}

/// Grid row `gi` (−1 and n are the boundary rows) of n + 2 values,
/// boundary columns included: g on the boundary, zero inside.
pub fn initial_row(n: usize, gi: isize, row: &mut [f64]) {
    let h = 1.0 / (n as f64 + 1.0);
    let y = (gi + 1) as f64 * h;
    let boundary = gi < 0 || gi >= n as isize;
    for (j, v) in row.iter_mut().enumerate() {
        *v = if boundary || j == 0 || j == n + 1 {
            g(j as f64 * h, y)
        } else {
            0.0
        };
    }
}

/// Ghost rows at the global boundary hold g; inner ghosts come from halo
/// exchanges.
pub fn set_boundary_ghosts(u: &mut Rows, n: usize, first: usize) {
    if first == 0 {
        initial_row(n, -1, &mut u.top);
    }
    if first + u.rows == n {
        initial_row(n, n as isize, &mut u.bottom);
    }
}

/// The distributed grid `u` of the Laplace kernels: this rank's rows of
/// n + 2 values (boundary columns included), one array that may go out of
/// core, initial values from [`initial_row`] and ghosts from
/// [`set_boundary_ghosts`]. `fixed_rows` counts the kernel's other
/// full-width rows that stay in core (halo buffers, gathered rows).
/// Returns the first global row, the grid and its memory plan.
pub fn laplace_grid(
    ctx: &crate::Ctx,
    n: usize,
    fixed_rows: usize,
) -> anyhow::Result<(usize, Rows, crate::storage::MemPlan)> {
    let (first, rows) = ctx.my_rows();
    let w = n + 2;
    let needs = [crate::storage::Need::fixed("u", rows, 8 * w, false, true)];
    let fixed = crate::Fixed {
        bytes: (fixed_rows * 8 * w) as u64,
        per_row: 0,
    };
    let plan = ctx.plan(fixed, &needs)?;
    let mut u = Rows::new(
        "u",
        w,
        rows,
        true,
        &plan.pieces,
        ctx.disk_for(&plan, 0),
        |r, row| initial_row(n, (first + r) as isize, row),
    )?;
    set_boundary_ghosts(&mut u, n, first);
    Ok((first, u, plan))
}

/// Move the grid `u` of [`laplace_grid`] to the distribution `new`
/// (collective) and set the boundary ghosts of its new rows; returns the
/// new first global row.
pub fn move_grid(
    ctx: &crate::Ctx,
    u: &mut Rows,
    n: usize,
    new: &mheta_model::Dist,
) -> anyhow::Result<usize> {
    u.redistribute(ctx.world, &ctx.dist, new, ctx.rank)
        .map_err(anyhow::Error::msg)?;
    let first = new.offsets()[ctx.rank] as usize;
    set_boundary_ghosts(u, n, first);
    Ok(first)
}
