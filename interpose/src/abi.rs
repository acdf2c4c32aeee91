//! The MPI ABI this library was built for, checked when it is loaded:
//! before the program's `main`, a library of the other family among the
//! loaded objects stops the process with a message naming both
//! ([`mheta_base::mpi_abi`]).

use mheta_base::mpi_abi::{Family, stop_on_foreign};

/// The family this library was compiled against.
pub fn built_for() -> Family {
    Family::of_handle_size(std::mem::size_of::<mpi_sys::MPI_Comm>())
}

extern "C" fn check() {
    stop_on_foreign("libmheta_interpose.so", built_for());
}

#[used]
#[unsafe(link_section = ".init_array")]
static CHECK_ON_LOAD: extern "C" fn() = check;
