//! The MPI ABI this library was built for, checked when it is loaded.
//!
//! Open MPI and the MPICH family (MPICH, Intel MPI, MVAPICH2, Cray MPICH)
//! differ in their handles (pointers against integers), constants and
//! status layout, so an interposer built for one and preloaded into a
//! program of the other would mix two MPI libraries in one process and
//! crash, or worse. Before the program's `main`, [`check`] lists the
//! shared objects loaded and stops the process with a message naming both
//! when one of the other family is among them.

use std::ffi::CStr;
use std::os::raw::{c_int, c_void};

/// An MPI ABI family.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Abi {
    OpenMpi,
    Mpich,
}

impl Abi {
    fn name(self) -> &'static str {
        match self {
            Abi::OpenMpi => "Open MPI",
            Abi::Mpich => "the MPICH family",
        }
    }
}

/// The family this library was compiled against: MPICH's handles are
/// integers, Open MPI's pointers.
pub const BUILT_FOR: Abi =
    if std::mem::size_of::<mpi_sys::MPI_Comm>() == std::mem::size_of::<c_int>() {
        Abi::Mpich
    } else {
        Abi::OpenMpi
    };

/// The family of a shared object by its file name: Open MPI's
/// `libmpi.so.40`; MPICH's `libmpich.so.12`, and the `libmpi.so.12` of
/// Intel MPI and MVAPICH2, Cray's `libmpi_cray.so`.
pub fn family(path: &str) -> Option<Abi> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.starts_with("libmpi.so.40") {
        Some(Abi::OpenMpi)
    } else if name.starts_with("libmpich.so")
        || name.starts_with("libmpi.so.12")
        || name.starts_with("libmpi_cray.so")
    {
        Some(Abi::Mpich)
    } else {
        None
    }
}

unsafe extern "C" fn note(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info and our data pointer.
    let (info, found) = unsafe { (&*info, &mut *(data as *mut Vec<String>)) };
    if !info.dlpi_name.is_null() {
        // SAFETY: a NUL-terminated name owned by the loader.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy();
        if family(&name).is_some() {
            found.push(name.into_owned());
        }
    }
    0
}

/// Stop the process when an MPI library of the other family is loaded.
extern "C" fn check() {
    let mut found: Vec<String> = Vec::new();
    // SAFETY: the callback only reads what the loader passes.
    unsafe { libc::dl_iterate_phdr(Some(note), (&raw mut found).cast()) };
    if let Some(other) = found.iter().find(|p| family(p) != Some(BUILT_FOR)) {
        crate::warn(format!(
            "mheta: libmheta_interpose.so was built for {} but this program loads {other} ({}): use the mheta built for that MPI (MHETA_MPI={} before the README's commands)",
            BUILT_FOR.name(),
            family(other).map_or("?", Abi::name),
            if BUILT_FOR == Abi::OpenMpi {
                "mpich"
            } else {
                "openmpi"
            },
        ));
        // SAFETY: ends the process at once, before main.
        unsafe { libc::_exit(1) };
    }
}

#[used]
#[unsafe(link_section = ".init_array")]
static CHECK_ON_LOAD: extern "C" fn() = check;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_are_told_apart_by_name() {
        assert_eq!(
            family("/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4"),
            Some(Abi::OpenMpi)
        );
        assert_eq!(
            family("/usr/lib/x86_64-linux-gnu/libmpich.so.12"),
            Some(Abi::Mpich)
        );
        assert_eq!(
            family("/opt/intel/mpi/lib/release/libmpi.so.12"),
            Some(Abi::Mpich)
        );
        assert_eq!(
            family("/opt/cray/pe/lib64/libmpi_cray.so.12"),
            Some(Abi::Mpich)
        );
        assert_eq!(family("/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40"), None);
        assert_eq!(family("libc.so.6"), None);
    }
}
