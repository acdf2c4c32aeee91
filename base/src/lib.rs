//! The few helpers that every mheta crate shares, each in one place: the
//! median and an `f64` ordered for heaps and sorts ([`stats`]), sizes as command lines write them ([`units`]),
//! writing a file so that a reader never sees half of it ([`fs`]), and what
//! mheta asks of the operating system ([`os`]): the host's name, the cores
//! a process may use, pinning threads to a core, and the thread and process
//! CPU clocks; how a move waits for its messages, polling and then napping
//! ([`nap`]); and which MPI family the libraries loaded belong to
//! ([`mpi_abi`]). No MPI and no other mheta crate below it; everything above
//! may use it.

pub mod fs;
pub mod mpi_abi;
pub mod nap;
pub mod os;
pub mod stats;
pub mod units;

pub use fs::write_atomic;
pub use stats::{Total, median, quantile};
pub use units::parse_bytes;
