//! mheta's analysis side, free of MPI: the MHETA execution model
//! ([`model`]: trace + profile + distribution -> predicted time, its
//! replay one function per step kind in `model/replay.rs`, a rank's
//! program from its trace in `model/program.rs`), the out-of-core I/O
//! model and rule ([`iomodel`], [`ooc`]), GEN_BLOCK distributions
//! ([`dist`]), the distribution searches ([`search`]: GBS and baselines),
//! the cost of a move ([`redist`]), shared-node slowdowns, sensing and
//! risk ([`slowdown`], [`sense`], [`stoch`], [`risk`]), and emulated
//! cluster specs ([`cluster`]). The `mheta` CLI (`src/bin/mheta/`, one
//! module per subcommand, `main.rs` only dispatching) and the in-run
//! controller (`mheta-live`) both use these plain functions.

pub mod analysis;
pub mod cluster;
pub mod dist;
pub mod iomodel;
pub mod model;
pub mod ooc;
pub mod redist;
pub mod risk;
pub mod search;
pub mod sense;
pub mod slowdown;
pub mod stoch;
pub mod synthetic;

pub use dist::Dist;
pub use model::{Model, ModelError, Prediction};
