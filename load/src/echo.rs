//! The echo peer, one for both users: the competing communication of
//! `mheta load` (a cycle process's bursts) and the bandwidth sensor of
//! `mheta sense` (one probe is one burst). It owns the wire protocol
//! (docs/FORMATS.md, "Echo wire protocol"), its client side ([`Burst`]),
//! the server of one connection ([`serve_conn`]), a server that accepts
//! connections until told to stop ([`serve`]), and that server on a
//! thread of this process ([`EchoServer`]).
//!
//! Per burst the client writes a 12-byte header, `"MHL1"`, msgs (u32 LE),
//! bytes (u32 LE), then `msgs` messages of `bytes` bytes; the server reads
//! the whole burst and answers the 8-byte ack `"MHLA"` + the burst's
//! sequence number on the connection (u32 LE, from 1).

use crate::Notice;
use mheta_base::os::{pin_to_core, thread_cpu_s, thread_schedstat};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// Socket reads and writes time out this often, so that every loop
/// looks at its stop condition.
pub const IO_TIMEOUT: Duration = Duration::from_millis(50);
/// The first 4 bytes of a burst's header.
pub const HDR_MAGIC: &[u8; 4] = b"MHL1";
/// The first 4 bytes of an ack.
pub const ACK_MAGIC: &[u8; 4] = b"MHLA";
/// Length of a burst's header: magic, msgs, bytes.
pub const HDR_LEN: usize = 12;
/// Length of an ack: magic, sequence number.
pub const ACK_LEN: usize = 8;

/// How a transfer ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Xfer {
    /// All bytes moved.
    Done,
    /// The peer closed the connection before the first byte.
    Eof,
    /// The stop condition became true.
    Stopped,
}

/// A transient socket error: try again (timeouts are how loops poll).
pub fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Read exactly `buf.len()` bytes, checking `stop` at least every
/// [`IO_TIMEOUT`]. `Eof` only when the peer closed before the first byte.
fn read_full(s: &mut TcpStream, buf: &mut [u8], stop: &dyn Fn() -> bool) -> io::Result<Xfer> {
    let mut got = 0;
    while got < buf.len() {
        if stop() {
            return Ok(Xfer::Stopped);
        }
        match s.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(Xfer::Eof),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Xfer::Done)
}

/// Write all of `buf`, checking `stop` at least every [`IO_TIMEOUT`].
fn write_full(s: &mut TcpStream, buf: &[u8], stop: &dyn Fn() -> bool) -> io::Result<Xfer> {
    let mut put = 0;
    while put < buf.len() {
        if stop() {
            return Ok(Xfer::Stopped);
        }
        match s.write(&buf[put..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => put += n,
            Err(e) if is_retry(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Xfer::Done)
}

/// Blocking, `TCP_NODELAY`, reads and writes timing out every
/// [`IO_TIMEOUT`]: both ends of the protocol set their streams so.
pub fn setup_stream(s: &TcpStream) -> io::Result<()> {
    s.set_nonblocking(false)?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    s.set_write_timeout(Some(IO_TIMEOUT))
}

/// The client side: a burst of `msgs` messages of the same bytes, with
/// its header built once (it goes out with the first message, in one
/// write).
pub struct Burst {
    msgs: u32,
    /// The header followed by one message.
    buf: Vec<u8>,
}

impl Burst {
    /// A burst of `msgs` messages of `bytes` bytes (at most `u32::MAX`).
    pub fn new(msgs: u32, bytes: u32) -> Burst {
        let mut buf = vec![0x5au8; HDR_LEN + bytes as usize];
        buf[..4].copy_from_slice(HDR_MAGIC);
        buf[4..8].copy_from_slice(&msgs.to_le_bytes());
        buf[8..HDR_LEN].copy_from_slice(&bytes.to_le_bytes());
        Burst { msgs, buf }
    }

    /// The payload of one burst, bytes (the header not counted).
    pub fn payload(&self) -> u64 {
        self.msgs as u64 * (self.buf.len() - HDR_LEN) as u64
    }

    /// Send the burst on `s` and wait for its ack, checking `stop`.
    pub fn send(&self, s: &mut TcpStream, stop: &dyn Fn() -> bool) -> io::Result<Xfer> {
        let first = if self.msgs == 0 {
            &self.buf[..HDR_LEN]
        } else {
            &self.buf[..]
        };
        if let Xfer::Stopped = write_full(s, first, stop)? {
            return Ok(Xfer::Stopped);
        }
        for _ in 1..self.msgs {
            if let Xfer::Stopped = write_full(s, &self.buf[HDR_LEN..], stop)? {
                return Ok(Xfer::Stopped);
            }
        }
        let mut ack = [0u8; ACK_LEN];
        match read_full(s, &mut ack, stop)? {
            Xfer::Done if &ack[..4] == ACK_MAGIC => Ok(Xfer::Done),
            Xfer::Done => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "bad ack from the echo peer",
            )),
            Xfer::Eof => Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the echo peer closed the connection",
            )),
            Xfer::Stopped => Ok(Xfer::Stopped),
        }
    }
}

/// What a server did on its connections.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct EchoStats {
    /// Complete bursts read and acknowledged.
    pub bursts: u64,
    /// Their payload, bytes.
    pub bytes: u64,
    /// CPU time of the serving threads, seconds.
    pub cpu_s: f64,
    /// Their run-queue delay, seconds (None without schedstat).
    pub runq_wait_s: Option<f64>,
}

/// Serve one connection until the client closes it (also in the middle of
/// a burst, which is not counted) or `stop`. The statistics are returned
/// also after an error.
pub fn serve_conn(mut s: TcpStream, stop: &dyn Fn() -> bool) -> (EchoStats, io::Result<()>) {
    let cpu0 = thread_cpu_s();
    let sched0 = thread_schedstat();
    let mut st = EchoStats::default();
    if let Err(e) = setup_stream(&s) {
        return (st, Err(e));
    }
    let mut buf = vec![0u8; 256 << 10];
    let r = (|| -> io::Result<()> {
        loop {
            let mut hdr = [0u8; HDR_LEN];
            match read_full(&mut s, &mut hdr, stop)? {
                Xfer::Done => {}
                Xfer::Eof | Xfer::Stopped => return Ok(()),
            }
            if &hdr[..4] != HDR_MAGIC {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not an mheta echo client (bad header)",
                ));
            }
            let msgs = u32::from_le_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]) as u64;
            let bytes = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]) as u64;
            let mut left = msgs * bytes;
            while left > 0 {
                let n = left.min(buf.len() as u64) as usize;
                match read_full(&mut s, &mut buf[..n], stop)? {
                    Xfer::Done => left -= n as u64,
                    Xfer::Stopped | Xfer::Eof => return Ok(()),
                }
            }
            st.bursts += 1;
            st.bytes += msgs * bytes;
            let mut ack = [0u8; ACK_LEN];
            ack[..4].copy_from_slice(ACK_MAGIC);
            ack[4..].copy_from_slice(&(st.bursts as u32).to_le_bytes());
            if let Xfer::Stopped = write_full(&mut s, &ack, stop)? {
                return Ok(());
            }
        }
    })();
    st.cpu_s = thread_cpu_s() - cpu0;
    st.runq_wait_s = match (thread_schedstat(), sched0) {
        (Some(now), Some(from)) => Some(now.since(&from).runq_wait_s),
        _ => None,
    };
    match r {
        // The client may close first when we stop.
        Err(_) if stop() => (st, Ok(())),
        r => (st, r),
    }
}

/// What [`serve`] did: its connections, and the totals of those whose
/// threads ended well.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct Served {
    pub connections: u64,
    pub stats: EchoStats,
}

/// Accept connections on `l` until `stop`, each served on its own thread
/// (pinned to `core` if given) until `stop` or its client goes; then join
/// them. `tell` hears how a connection failed or could not be served. On
/// an accept error the connections are stopped and joined first.
pub fn serve(
    l: &TcpListener,
    core: Option<usize>,
    stop: &(dyn Fn() -> bool + Sync),
    tell: &(dyn Fn(Notice<'_>) + Sync),
) -> io::Result<Served> {
    // Poll, so that `stop` (set by a signal handler) ends the loop: a
    // blocking accept is restarted after EINTR.
    l.set_nonblocking(true)?;
    let halt = AtomicBool::new(false);
    let conn_stop = || halt.load(Ordering::Relaxed) || stop();
    std::thread::scope(|sc| {
        let mut conns = Vec::new();
        let accepted = loop {
            if stop() {
                break Ok(());
            }
            match l.accept() {
                Ok((s, from)) => {
                    let conn_stop = &conn_stop;
                    let h = std::thread::Builder::new()
                        .name("echo".into())
                        .spawn_scoped(sc, move || serve_one(s, from, core, conn_stop, tell));
                    match h {
                        Ok(h) => conns.push(h),
                        Err(e) => tell(Notice::Warn(&format!(
                            "cannot start a thread for {from}: {e}"
                        ))),
                    }
                }
                Err(e) if is_retry(&e) => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => {
                    halt.store(true, Ordering::Relaxed);
                    break Err(e);
                }
            }
        };
        let mut served = Served {
            connections: conns.len() as u64,
            stats: EchoStats::default(),
        };
        for h in conns {
            if let Ok(Some(s)) = h.join() {
                served.stats.bursts += s.bursts;
                served.stats.bytes += s.bytes;
                served.stats.cpu_s += s.cpu_s;
                if let Some(w) = s.runq_wait_s {
                    *served.stats.runq_wait_s.get_or_insert(0.0) += w;
                }
            }
        }
        accepted.map(|()| served)
    })
}

/// One accepted connection, on its thread: pin, serve, say how it failed.
fn serve_one(
    s: TcpStream,
    from: SocketAddr,
    core: Option<usize>,
    stop: &dyn Fn() -> bool,
    tell: &dyn Fn(Notice<'_>),
) -> Option<EchoStats> {
    if let Some(c) = core
        && let Err(e) = pin_to_core(c)
    {
        tell(Notice::Info(&format!("echo connection from {from}: {e}")));
        return None;
    }
    let (st, r) = serve_conn(s, stop);
    if let Err(e) = &r {
        tell(Notice::Info(&format!("echo connection from {from}: {e}")));
    }
    Some(st)
}

/// [`serve`] on a thread of this process, its acceptor and connections
/// pinned to a core if given, until dropped.
pub struct EchoServer {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EchoServer {
    /// Listen on `bind` (e.g. `127.0.0.1:0`).
    pub fn start(bind: &str, core: Option<usize>) -> io::Result<EchoServer> {
        let l = TcpListener::bind(bind)?;
        let addr = l.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name("echo-server".into())
            .spawn(move || {
                if let Some(c) = core {
                    let _ = pin_to_core(c);
                }
                let _ = serve(&l, core, &|| st.load(Ordering::Relaxed), &|_| {});
            })?;
        Ok(EchoServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn echo_protocol_round_trip() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let addr = l.local_addr().unwrap();
        let srv = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let (st, r) = serve_conn(s, &|| false);
            r.unwrap();
            st
        });
        let mut c = TcpStream::connect(addr).unwrap();
        setup_stream(&c).unwrap();
        let b = Burst::new(4, 70_000);
        for _ in 0..3 {
            assert_eq!(b.send(&mut c, &|| false).unwrap(), Xfer::Done);
        }
        drop(c);
        let st = srv.join().unwrap();
        assert_eq!(st.bursts, 3);
        assert_eq!(st.bytes, 3 * 4 * 70_000);
        assert_eq!(b.payload(), 4 * 70_000);
    }

    #[test]
    fn server_on_a_thread_counts_and_stops() {
        let sv = EchoServer::start("127.0.0.1:0", None).unwrap();
        let mut c = TcpStream::connect(sv.addr).unwrap();
        setup_stream(&c).unwrap();
        let b = Burst::new(1, 65536);
        for _ in 0..5 {
            assert_eq!(b.send(&mut c, &|| false).unwrap(), Xfer::Done);
        }
        drop(sv);
        // The server is gone: the connection is closed.
        assert!(b.send(&mut c, &|| false).is_err());
    }
}
