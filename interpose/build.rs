//! Whether the MPI under build has MPI-4's large-count C calls
//! (`MPI_Send_c`, counts of `MPI_Count`): MPICH 4 does, Open MPI 4.1 does
//! not. The probe compiles a pointer to `PMPI_Send_c` (an undeclared name
//! is an error, where an undeclared call may be only a warning) with the
//! compiler wrapper `mpi-sys` reads (`$MPICC`, else `mpicc`); when it
//! compiles, `cfg(mpi_large_count)` adds the `_c` entry points of the
//! wrapper table (`src/wrappers.rs`, the entries marked `[c]`).
use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(mpi_large_count)");
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src = out.join("large_count_probe.c");
    std::fs::write(
        &src,
        "#include <mpi.h>\n\
         int (*probe)(const void *, MPI_Count, MPI_Datatype, int, int, MPI_Comm) = PMPI_Send_c;\n",
    )
    .expect("write the probe into OUT_DIR");
    let cc = std::env::var("MPICC").unwrap_or_else(|_| "mpicc".into());
    let built = Command::new(&cc)
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(out.join("large_count_probe.o"))
        .output()
        .is_ok_and(|o| o.status.success());
    if built {
        println!("cargo:rustc-cfg=mpi_large_count");
    }
}
