//! The cluster profile: what one microbenchmark session (`mheta bench`,
//! crate `mheta-microbench`) measured of a cluster, stored as versioned
//! JSON. This crate owns the format and is the one typed API through which
//! the runtime reads it; it is MPI-free. It also owns the session's
//! options ([`cli::Measure`]), which the microbench and `mheta bench` share.
//!
//! Every measured figure is a [`SampleStats`]: mean, standard deviation, median,
//! 99th percentile and the HdrHistogram of the samples (V2 + DEFLATE,
//! base64), so that predictions can carry ranges. Costs are in seconds.
//! For an ordered pair (src, dst) a message of `b` bytes costs the sender
//! `o_send_s`, the receiver `o_recv_s`, and takes `one_way_s(b)` from the
//! start of the send to the end of the receive (LogP: o_s + L + G·b + o_r),
//! where `one_way_s` is piecewise linear with breakpoints where the MPI
//! library changes protocol ([`fit_segments`]).

#[cfg(feature = "cli")]
pub mod cli;
mod fit;
mod format;
mod links;
mod modes;
mod samples;
mod sizes;
mod text;

pub use fit::{fit_segments, line_fit};
pub use format::{
    COLD_BYTES, ClusterProfile, DiskCost, ExchangePoint, FORMAT, MAX_BANDWIDTH_BPS, MAX_TIME_S,
    MOVE_BYTES, MovePoint, NodeCost, OsuCompat, PairCost, ProfileError, ReusePoint, Segment,
    SendPoint, ShiftPoint, SizePoint, SpecLink, UnlistedPairs, VERSION, move_scale_at,
};
pub use modes::modes;
pub use samples::{MEAN_MIN_SHARE, MEAN_TEXT, Mode, ModeChoice, SampleStats};
pub use sizes::parse_max_size;
