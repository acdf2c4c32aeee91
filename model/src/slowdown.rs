//! The slowdown model of Figueira and Berman and the load a
//! prediction runs under.
//!
//! A node's *local slowdown* (eq. 2) follows from what its competing
//! processes do: each computes a fraction of its time and communicates
//! another; the probabilities that i of them compute, or communicate, at
//! once come from a dynamic programme over the processes in O(p²)
//! ([`activity_probabilities`]). The *communication slowdown* of a pair is
//! its dedicated over its available bandwidth (eq. 3), and the *aggregate
//! slowdown* of a parallel run combines the nodes' local slowdowns with
//! their weights and the work each holds (eqs. 5, 8 and 12).
//!
//! [`LoadSpec`] is the load a prediction runs under, per node: either a
//! description of the competing processes (eq. 2), or the CPU availability
//! sensed on the node (`mheta sense`), a stochastic value or a mixture of
//! modes (Schopf and Berman). [`LoadSpec::resolve`] turns it into per-rank
//! stochastic CPU slowdowns and per-pair communication slowdowns for the
//! model ([`crate::Model::with_load`]).
//!
//! The equations as published are in `slowdown/equations.rs`, eq. 2 under
//! processor sharing in `slowdown/sharing.rs`, the load description and
//! its resolution in `slowdown/load.rs`; all are re-exported here.

mod equations;
mod load;
mod sharing;

pub use equations::{
    Competitor, DelayComm, TwoPiece, activity_probabilities, aggregate_constraint,
    aggregate_load_dependent, comm_slowdown, extra_work, local_slowdown,
};
pub use load::{LoadError, LoadSpec, LocalRule, NodeLoad, Slowdowns};
pub use sharing::{local_slowdown_shared_node, local_slowdown_sharing};
