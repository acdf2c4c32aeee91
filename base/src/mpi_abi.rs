//! Which MPI ABI family the shared objects in this process belong to, so
//! that a library built for one family (mheta's interposer, `libmheta.so`)
//! can stop, with a message, instead of crashing in a program of the other.
//!
//! Open MPI and the MPICH family (MPICH, Intel MPI, MVAPICH2, Cray MPICH)
//! differ in their handles (pointers against integers), constants and
//! status layout: two of them in one process mix both.

use std::ffi::CStr;
use std::os::raw::{c_int, c_void};

/// An MPI ABI family.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    OpenMpi,
    Mpich,
}

impl Family {
    /// The family whose handles are `handle_bytes` long: MPICH's are
    /// C ints, Open MPI's pointers.
    pub fn of_handle_size(handle_bytes: usize) -> Family {
        if handle_bytes == std::mem::size_of::<c_int>() {
            Family::Mpich
        } else {
            Family::OpenMpi
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Family::OpenMpi => "Open MPI",
            Family::Mpich => "the MPICH family",
        }
    }

    /// `MHETA_MPI`'s value that builds for this family.
    pub fn switch(self) -> &'static str {
        match self {
            Family::OpenMpi => "openmpi",
            Family::Mpich => "mpich",
        }
    }
}

/// The family of a shared object by its file name: Open MPI's
/// `libmpi.so.40`; MPICH's `libmpich.so`, and the `libmpi.so.12` of
/// Intel MPI and MVAPICH2, Cray's `libmpi_cray.so`.
pub fn family(path: &str) -> Option<Family> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.starts_with("libmpi.so.40") {
        Some(Family::OpenMpi)
    } else if name.starts_with("libmpich.so")
        || name.starts_with("libmpi.so.12")
        || name.starts_with("libmpi_cray.so")
    {
        Some(Family::Mpich)
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

/// The first MPI library loaded in this process that is not of family
/// `built_for`, if any.
pub fn foreign(built_for: Family) -> Option<String> {
    let mut found: Vec<String> = Vec::new();
    // SAFETY: the callback only reads what the loader passes.
    unsafe { libc::dl_iterate_phdr(Some(note), (&raw mut found).cast()) };
    found.into_iter().find(|p| family(p) != Some(built_for))
}

/// Stop the process (exit 1, at once) with a message when `lib`, built
/// for `built_for`, finds an MPI library of the other family loaded.
/// For a load-time constructor.
pub fn stop_on_foreign(lib: &str, built_for: Family) {
    if let Some(other) = foreign(built_for) {
        let msg = format!(
            "mheta: {lib} was built for {} but this program loads {other} ({}): use the mheta built for that MPI (MHETA_MPI={} before the README's commands)\n",
            built_for.name(),
            family(&other).map_or("?", Family::name),
            family(&other).map_or("?", Family::switch),
        );
        // SAFETY: one write of our own bytes to stderr, then the end of
        // the process, before main.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_are_told_apart_by_name() {
        let f = family;
        assert_eq!(
            f("/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4"),
            Some(Family::OpenMpi)
        );
        assert_eq!(
            f("/usr/lib/x86_64-linux-gnu/libmpich.so.12"),
            Some(Family::Mpich)
        );
        assert_eq!(
            f("/opt/intel/mpi/lib/release/libmpi.so.12"),
            Some(Family::Mpich)
        );
        assert_eq!(
            f("/opt/cray/pe/lib64/libmpi_cray.so.12"),
            Some(Family::Mpich)
        );
        assert_eq!(f("/usr/lib/x86_64-linux-gnu/libmpi_mpifh.so.40"), None);
        assert_eq!(f("libc.so.6"), None);
        assert_eq!(Family::of_handle_size(4), Family::Mpich);
        assert_eq!(Family::of_handle_size(8), Family::OpenMpi);
    }

    #[test]
    fn this_test_process_loads_no_mpi() {
        assert_eq!(foreign(Family::OpenMpi), None);
        assert_eq!(foreign(Family::Mpich), None);
    }
}
