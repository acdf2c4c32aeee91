//! The MHETA execution model and everything that prices or chooses a
//! GEN_BLOCK distribution, as plain functions over plain data, free of
//! MPI: GEN_BLOCK distributions ([`dist`]), the model ([`model`]: trace +
//! profile + distribution -> predicted time, with each rank's row-cost
//! curve where one was measured, [`curve`]; a rank's program from its
//! trace in `model/program.rs`, the replay one function per step kind in
//! `model/replay.rs`, compiled for searches in `model/fast.rs`), the
//! out-of-core rule and I/O model ([`ooc`],
//! [`iomodel`]), what a row costs by the time since its last sweep
//! ([`reuse`]), the trace's summaries ([`analysis`]), the searches
//! ([`search`]: GBS and baselines), the cost of a move ([`redist`]),
//! shared-node slowdowns, stochastic values and risk ([`slowdown`],
//! [`stoch`], [`risk`]), a rank's summary of its trace for the planner
//! in a job ([`summary`]), and synthetic programs for tests and benches
//! ([`synthetic`]). The `mheta` CLI and the in-job runtime
//! (`mheta-runtime`) both call these.

pub mod analysis;
pub mod curve;
pub mod dist;
pub mod iomodel;
pub mod model;
pub mod ooc;
pub mod redist;
pub mod reuse;
pub mod risk;
pub mod search;
pub mod slowdown;
pub mod stoch;
pub mod summary;
pub mod synthetic;

pub use dist::Dist;
pub use model::{Evaluator, Model, ModelError, Prediction};
