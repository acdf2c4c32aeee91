//! The bandwidth sensor: a TCP transfer of `bw_bytes` (64 KiB, the
//! Network Weather Service's default) to an acknowledging peer, timed.
//! One probe is one burst of the echo protocol ([`crate::echo`]) with one
//! message; the peer is an [`crate::echo::EchoServer`] thread of this
//! process pinned to another core, or `mheta sense --serve` (or `mheta
//! load --echo-listen`) on another host. The best figure seen is the
//! dedicated bandwidth, and dedicated over available is Figueira and
//! Berman's communication slowdown (eq. 3).

use crate::echo::{Burst, Xfer, setup_stream};
use serde::{Deserialize, Serialize};
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// How long a probe may wait for its ack before it fails.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the bandwidth probe sends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BwPeer {
    /// An [`crate::echo::EchoServer`] thread of this process pinned to
    /// this core.
    Core(usize),
    /// `mheta sense --serve` at HOST:PORT.
    Addr(String),
}

impl std::fmt::Display for BwPeer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BwPeer::Core(c) => write!(f, "core {c}"),
            BwPeer::Addr(a) => f.write_str(a),
        }
    }
}

/// The client side of the bandwidth probe: one connection, reused.
pub struct BwClient {
    stream: TcpStream,
    burst: Burst,
}

impl BwClient {
    /// Connect to the echo peer at `addr` for probes of `bytes` bytes (at
    /// most 4 GiB - 1).
    pub fn connect(addr: &str, bytes: usize) -> io::Result<BwClient> {
        let a = addr.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("{addr}: no address"))
        })?;
        let bytes = u32::try_from(bytes)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "probe size over 4 GiB"))?;
        let stream = TcpStream::connect_timeout(&a, Duration::from_secs(5))?;
        setup_stream(&stream)?;
        Ok(BwClient {
            stream,
            burst: Burst::new(1, bytes),
        })
    }

    /// One probe: send the bytes, wait for the acknowledgement; returns
    /// (bytes/s, seconds taken).
    pub fn probe(&mut self) -> io::Result<(f64, f64)> {
        let t0 = Instant::now();
        let late = || t0.elapsed() > PROBE_TIMEOUT;
        match self.burst.send(&mut self.stream, &late)? {
            Xfer::Done => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no ack from the echo peer",
                ));
            }
        }
        let dt = t0.elapsed().as_secs_f64().max(1e-9);
        Ok((self.burst.payload() as f64 / dt, dt))
    }
}
