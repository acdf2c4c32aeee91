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
