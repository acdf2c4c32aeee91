//! Sensors, as the Network Weather Service supplied them to Figueira and
//! Berman and to Schopf and Berman: per core, the CPU *availability* (the
//! share of the core a new CPU-bound process would get, [`cpu`]) and the
//! *available bandwidth* to a peer ([`bandwidth`]), sampled over time
//! ([`sampler`], what `mheta sense` runs), kept as HdrHistogram
//! distributions with their modes and turned into the model's
//! multi-modal stochastic values ([`summary`]). [`SenseFile`] is the
//! versioned JSON ([`file`]) and its `load` object, made by [`to_load`],
//! is a [`mheta_model::slowdown::LoadSpec`] for `mheta predict --load`.

pub mod bandwidth;
pub mod cpu;
pub mod file;
pub mod sampler;
pub mod summary;
pub mod to_load;

pub use bandwidth::{BwClient, BwPeer};
pub use cpu::{Method, cpu_probe, cpu_probe_turns, parse_stat, passive_avail, runnable_on};
pub use file::{CoreSense, Overhead, PairSense, SenseError, SenseFile, Settings, read_sense_file};
pub use sampler::sense;
pub use summary::{Summary, classify, current_mode, mixture_from_series, summarize};
pub use to_load::{load_spec, parse_ranks};

/// The `format` field of a sense file.
pub const FORMAT: &str = "mheta-sense";
/// Version of the sense file's layout.
pub const VERSION: u32 = 1;
/// NWS's default bandwidth probe: 64 KiB.
pub const DEFAULT_BW_BYTES: usize = 64 * 1024;
/// Availability is clamped to `[MIN_AVAIL, 1]` (a probe that got no CPU at
/// all still gives a positive share, so that modes and slowdowns exist).
pub const MIN_AVAIL: f64 = 1e-3;
/// How many of the last samples vote for the current mode.
pub const CURRENT_WINDOW: usize = 5;
