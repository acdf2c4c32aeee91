//! Competing load and its sensors, on the machine mheta runs on. This
//! crate is to load what `mheta-microbench` is to the cluster profile;
//! the `mheta` CLI only parses arguments and prints.
//!
//! - The contention engine behind `mheta load` (Figueira and Berman's
//!   competing applications, section 3 and eq. 2): the process specs
//!   ([`spec`]), bursty levels ([`schedule`]), the workers ([`worker`]),
//!   a run and its configuration ([`run`]), what stops it ([`signal`]),
//!   and the timeline it writes ([`timeline`]).
//! - The echo peer both use ([`echo`]): one wire protocol and one server
//!   for the competing communication of `mheta load` and the bandwidth
//!   probe of `mheta sense`.
//! - The sensors behind `mheta sense` ([`sense`]): CPU availability by
//!   probe and by counting runnable tasks, bandwidth to an echo peer,
//!   the sense file, and their conversion into the model's load
//!   description.
//!
//! The file formats and the wire protocol are in docs/FORMATS.md; the
//! measurements behind the defaults in docs/design/load.md.

pub mod echo;
pub mod error;
pub mod run;
pub mod schedule;
pub mod sense;
pub mod signal;
pub mod spec;
pub mod timeline;
mod worker;

pub use error::LoadError;
pub use run::{EchoConfig, Finished, LoadConfig, RunOpts, run, serve_echo};
pub use schedule::{Bursty, SwitchMode};
pub use spec::{Kind, ProcSpec};
pub use timeline::Timeline;

/// A message for the user while a load or an echo server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice<'a> {
    /// Progress (running, listening) and an echo connection that failed.
    Info(&'a str),
    /// Something failed but the run goes on (a thread not started).
    Warn(&'a str),
}

/// Where [`Notice`]s go.
pub type Notify = std::sync::Arc<dyn Fn(Notice<'_>) + Send + Sync>;
