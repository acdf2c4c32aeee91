//! Competing load and its sensors, on the machine mheta runs on: the
//! sensors behind `mheta sense` ([`sense`]: CPU availability by probe and
//! by schedstat, bandwidth to an echo peer, the sense file, and their
//! conversion into the model's load description). This crate is to load
//! what `mheta-microbench` is to the cluster profile; the `mheta` CLI only
//! parses arguments and prints.

pub mod sense;
