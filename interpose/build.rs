//! What the MPI under build has of MPI-4, probed by compiling a pointer
//! to its `PMPI_*` functions (an undeclared name is an error, where an
//! undeclared call may be only a warning) with the compiler wrapper
//! `mpi-sys` reads (`$MPICC`, else `mpicc`):
//! - `cfg(mpi_large_count)`: the large-count C calls (`PMPI_Send_c`,
//!   counts of `MPI_Count`), which add the `_c` entry points of the
//!   wrapper tables (the entries marked `[c]`);
//! - `cfg(mpi4_calls)`: `PMPI_Isendrecv` and the persistent collectives
//!   (`PMPI_Bcast_init`), which add the table of `src/wrappers/mpi4.rs`.
//!
//! MPICH 4 has both, Open MPI 4.1 neither.
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(mpi_large_count)");
    println!("cargo:rustc-check-cfg=cfg(mpi4_calls)");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-changed=build.rs");
    let probes = [
        (
            "mpi_large_count",
            "int (*probe)(const void *, MPI_Count, MPI_Datatype, int, int, MPI_Comm) = PMPI_Send_c;\n",
        ),
        (
            "mpi4_calls",
            "int (*probe)(const void *, int, MPI_Datatype, int, int, void *, int, MPI_Datatype, \
             int, int, MPI_Comm, MPI_Request *) = PMPI_Isendrecv;\n\
             int (*probe2)(void *, int, MPI_Datatype, int, MPI_Comm, MPI_Info, MPI_Request *) \
             = PMPI_Bcast_init;\n",
        ),
    ];
    for (cfg, decl) in probes {
        if compiles(cfg, decl) {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}

/// Does `#include <mpi.h>` followed by `decl` compile?
fn compiles(name: &str, decl: &str) -> bool {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src = out.join(format!("{name}_probe.c"));
    std::fs::write(&src, format!("#include <mpi.h>\n{decl}"))
        .expect("write the probe into OUT_DIR");
    let cc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    Command::new(&cc)
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(out.join(format!("{name}_probe.o")))
        .output()
        .is_ok_and(|o| o.status.success())
}
