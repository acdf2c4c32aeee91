//! Emulated hosts on one machine, so that mheta meets real links without a
//! real cluster. This crate owns the cluster spec: its hosts and links
//! ([`spec`]) and its expansion into ranks with their powers, memories and
//! disks ([`cluster`]), building and removing a lab of network namespaces
//! on a bridge with each host's link shaped by tc on its own ends
//! ([`lab`]), the user-space relay that adds one-way latency where the
//! kernel has no netem ([`relay`]), which core each emulated rank and relay
//! runs on ([`cores`]), and the launcher agent that lets Open MPI's
//! `mpirun` start daemons inside the hosts ([`agent`]), and Slurm's
//! daemons, one slurmd per host ([`slurm`]). It is MPI-free; the
//! `mheta hosts` subcommands drive it.

pub mod agent;
pub mod cluster;
pub mod cores;
pub mod lab;
pub mod relay;
pub mod slurm;
pub mod spec;

pub use spec::{HostSpec, Lab, LabTable, SpecError};
