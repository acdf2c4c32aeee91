//! 1-D GEN_BLOCK row neighbours and halo exchange: a rank talks to the
//! nearest rank above and below that owns rows (ranks with 0 rows sit
//! out), as `app.json`'s `neighbour1d` topology declares.

use crate::storage::Rows;
use mheta_model::Dist;
use mpi::datatype::Equivalence;
use mpi::topology::SimpleCommunicator;

/// The nearest ranks above (lower rank) and below that own rows; none for
/// a rank that owns no rows.
pub fn neighbours(d: &Dist, me: usize) -> (Option<usize>, Option<usize>) {
    if d.0[me] == 0 {
        return (None, None);
    }
    let up = (0..me).rev().find(|&j| d.0[j] > 0);
    let down = (me + 1..d.ranks()).find(|&j| d.0[j] > 0);
    (up, down)
}

/// Send `send` to `to` and receive `recv` from `from` (either may be none).
pub use crate::comm::shift;

/// Halo exchange of a stencil array: the first row goes up and the
/// bottom ghost comes from below, then the last row goes down and the top
/// ghost comes from above (`MPI_Sendrecv`). Ghosts at the global boundary
/// keep their values (the boundary condition). Out of core, the first and
/// last rows come from the array's in-core copies of them.
pub fn exchange(world: &SimpleCommunicator, a: &mut Rows, d: &Dist, me: usize) {
    if a.rows == 0 {
        return;
    }
    let (up, down) = neighbours(d, me);
    let first = a.first_row().to_vec();
    shift(world, &first, up, &mut a.bottom, down);
    let last = a.last_row().to_vec();
    shift(world, &last, down, &mut a.top, up);
}

/// All-gather a row-distributed vector (one value per row): every rank
/// contributes its rows `local` under `d` and receives all of them in
/// `full` (`MPI_Allgatherv`). Collective.
pub fn all_gather_rows<T: Equivalence>(
    world: &SimpleCommunicator,
    d: &Dist,
    local: &[T],
    full: &mut [T],
) {
    let counts: Vec<i32> = d.0.iter().map(|&s| s as i32).collect();
    let displs: Vec<i32> = d.offsets().iter().map(|&o| o as i32).collect();
    crate::comm::all_gather_varcount(world, local, full, &counts, &displs);
}

/// What the stencil kernels verify: the largest |u − exact| over the
/// interior points of a row-distributed grid and the sum of u there (the
/// checksum), over all ranks (`MPI_Allreduce`, max and sum). `u` holds
/// this rank's rows from global row `first`, n interior columns between
/// two boundary columns; `exact(col, row)` takes the padded column
/// (1..=n) and the global row. Collective.
pub fn max_error_and_sum(
    world: &SimpleCommunicator,
    u: &mut Rows,
    first: usize,
    n: usize,
    exact: impl Fn(usize, usize) -> f64,
) -> Result<(f64, f64), crate::mpiio::IoError> {
    use crate::storage::{Access, sweep};
    use mpi::collective::SystemOperation;
    let w = n + 2;
    let (mut err, mut sum) = (0.0f64, 0.0f64);
    sweep(&mut [(u, Access::Read)], |rows, v| {
        for (i, r) in rows.enumerate() {
            for col in 1..=n {
                let val = v[0].data[i * w + col];
                err = err.max((val - exact(col, first + r)).abs());
                sum += val;
            }
        }
    })?;
    let (mut gerr, mut gsum) = (0.0f64, 0.0f64);
    crate::comm::all_reduce(world, &err, &mut gerr, SystemOperation::max());
    crate::comm::all_reduce(world, &sum, &mut gsum, SystemOperation::sum());
    Ok((gerr, gsum))
}
