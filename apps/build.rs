//! Export the paced-I/O wrappers (`src/mpiio.rs`, `pace`) from the app
//! executables, so that the MPI library's calls resolve to them first.
fn main() {
    for s in [
        "pread",
        "pwrite",
        "preadv",
        "pwritev",
        "aio_read",
        "aio_error",
    ] {
        println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol={s}");
    }
}
