//! The measurements of `mheta-microbench` (pairs: [`net`]; nodes:
//! [`node`], and the cost of data by the time since its last use:
//! [`reuse`]; OSU's own loops: [`osu`]) as a library, so that benches
//! elsewhere in the workspace can set their figures beside the profile's,
//! measured the same way in the same run.

pub mod budget;
pub mod net;
pub mod node;
pub mod osu;
pub mod reuse;
