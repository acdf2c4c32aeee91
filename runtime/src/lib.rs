//! mheta's analysis side, free of MPI: the MHETA execution model
//! ([`model`]: trace + profile + distribution -> predicted time), GEN_BLOCK
//! distributions ([`dist`]), the distribution searches ([`search`]: GBS and
//! baselines), and emulated cluster specs ([`cluster`]). The `mheta` CLI
//! and the in-run controller (`mheta-live`) both use these plain functions.

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
