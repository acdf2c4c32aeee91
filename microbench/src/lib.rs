//! The measurements of `mheta-microbench` (pairs: [`net`]; nodes:
//! [`node`]) as a library, so that benches elsewhere in the workspace can
//! set their figures beside the profile's, measured the same way in the
//! same sitting.

pub mod net;
pub mod node;
