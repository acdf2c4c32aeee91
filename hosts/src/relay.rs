//! The latency relay: a user-space forwarder that adds one-way latency to
//! an emulated host's link.
//!
//! Why it exists: the usual way to delay a link is the kernel's `netem`
//! qdisc, and the machines mheta's labs run on may have no `netem` (nor
//! `fq` with its time-based release). So a host whose link has an added
//! latency gets a split link instead:
//!
//! ```text
//! namespace veth  <->  A   (root namespace, not on the bridge)
//!                      |   the relay: every frame, both directions, held `delay`
//!                      C  <->  D  (enslaved to the bridge)
//! ```
//!
//! [`run`] opens one `AF_PACKET`/`SOCK_RAW` socket bound (`ETH_P_ALL`) to
//! `A` and one to `C`, and copies each frame received on one to the other,
//! sending it at its receive time plus `delay`, in order, each direction
//! on its own threads (a reader, and with a delay a sender that sleeps
//! until shortly before the deadline, by its own recent wake-up latency,
//! and then spins, sending with each frame the queued ones due within the
//! spin, so that the added latency is accurate; docs/design/hosts.md
//! gives the figures).
//!
//! The sockets use `PACKET_VNET_HDR`: each frame read comes with its
//! `virtio_net_hdr`, which is written back unchanged with the frame on the
//! other side. Large offloaded frames (TSO/GSO, up to 64 KiB) and partial
//! checksums thus cross the relay as they are, so TCP through it reaches
//! several Gbit/s. Only frames that arrive on an interface are forwarded
//! (`PACKET_IGNORE_OUTGOING`, and the packet type is checked as well):
//! the relay's own transmissions are never read back.
//!
//! Limits:
//! - the relay adds latency only; rates are tc's business on the link's
//!   other ends. Frames are never reordered, duplicated or lost on
//!   purpose: there is no jitter or loss model.
//! - it costs CPU: two copies of each frame, a thread per direction (two
//!   with a delay), and a short spin before each delayed send. A wire
//!   does not wait for a core, so the relay's threads ask for real-time
//!   scheduling ([`schedule_as_wire`]: `SCHED_FIFO`), which puts them ahead
//!   of every rank when a frame arrives or falls due. Without it (refused
//!   outside root, or by a cgroup without real-time runtime) the wake-ups
//!   wait behind busy ranks and the added latency grows with the load
//!   (figures: docs/design/hosts.md, "Relay scheduling").
//! - frames waiting out their delay are held in memory, up to
//!   [`MAX_QUEUED_BYTES`] per direction; beyond that, frames are dropped
//!   (as a full router buffer would) and counted in [`Stats`].
//! - frames larger than [`MAX_FRAME`] (BIG TCP) are dropped and counted.
//! - it needs `CAP_NET_RAW` (and `CAP_NET_ADMIN` for its large socket
//!   buffers; without it, the system's maximum buffer sizes apply).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// The size of the `virtio_net_hdr` that precedes each frame.
const VNET_HDR_LEN: usize = 10;

/// The largest frame carried, headers included: a 64 KiB GSO frame and
/// its link, network and transport headers.
pub const MAX_FRAME: usize = 65536 + 512;

/// The most bytes of frames held waiting out their delay, per direction.
pub const MAX_QUEUED_BYTES: usize = 128 << 20;

/// The receive and send buffers asked of each socket.
const SOCKET_BUFFER: libc::c_int = 32 << 20;

/// How often each thread looks at the stop flag, at most.
const POLL: Duration = Duration::from_millis(100);

/// The least and the most a sender spins before a frame's deadline (see
/// [`Spin`]).
const SPIN_MIN_NS: u64 = 10_000;
const SPIN_MAX_NS: u64 = 300_000;

/// How many of a sender's recent timed sleeps set its spin.
const SPIN_WINDOW: usize = 32;

/// The real-time priority of the relay's threads (`SCHED_FIFO`): above
/// every normal thread, low among real-time ones.
pub const WIRE_PRIORITY: libc::c_int = 20;

/// Give the calling thread, and the threads it starts afterwards,
/// `SCHED_FIFO` at [`WIRE_PRIORITY`], so that the relay forwards a frame
/// when it arrives or falls due instead of when a core is free. Call it
/// before [`run`]. The error (not root, or no real-time runtime in the
/// process's cgroup) leaves normal scheduling in place.
pub fn schedule_as_wire() -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: WIRE_PRIORITY,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The frames and bytes forwarded in one direction, and those dropped.
#[derive(Debug, Default)]
pub struct Counters {
    /// Frames sent on.
    pub frames: AtomicU64,
    /// Bytes of the frames sent on (Ethernet frames, without the
    /// `virtio_net_hdr`).
    pub bytes: AtomicU64,
    /// Frames not sent on: too large, over the queue's limit, or refused
    /// by the outgoing interface (down, or its peer's backlog full).
    pub dropped: AtomicU64,
}

/// What a relay has done so far, by direction. It may be read while the
/// relay runs.
#[derive(Debug, Default)]
pub struct Stats {
    /// Frames received on `a` and sent on `c`.
    pub a_to_c: Counters,
    /// Frames received on `c` and sent on `a`.
    pub c_to_a: Counters,
}

/// Forward every frame between interfaces `a` and `c`, in both
/// directions, each `delay` after it arrived, until `stop` is set (it is
/// looked at every 100 ms at least).
///
/// Both interfaces must exist; they should be up (frames are not carried
/// while one is down, but the relay keeps running). Errors name the
/// interface concerned, as `relay: interface mhr0a: no such device`.
pub fn run(a: &str, c: &str, delay: Duration, stop: &AtomicBool) -> io::Result<()> {
    run_with_stats(a, c, delay, stop, &Stats::default())
}

/// As [`run`], counting the frames forwarded and dropped in `stats`.
pub fn run_with_stats(
    a: &str,
    c: &str,
    delay: Duration,
    stop: &AtomicBool,
    stats: &Stats,
) -> io::Result<()> {
    let sa = PacketSocket::open(a)?;
    let sc = PacketSocket::open(c)?;
    let delay_ns = u64::try_from(delay.as_nanos()).unwrap_or(u64::MAX);
    // Set when a thread fails, so that the others end too.
    let failed = AtomicBool::new(false);
    let done = || stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed);
    let report = |r: io::Result<()>| {
        if r.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        r
    };
    let queued = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let directions = [
        (&sa, &sc, &stats.a_to_c, &queued[0]),
        (&sc, &sa, &stats.c_to_a, &queued[1]),
    ];
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for (from, to, counters, queued) in directions {
            if delay_ns == 0 {
                handles.push(s.spawn(move || report(forward(from, to, &done, counters))));
            } else {
                let (tx, rx) = mpsc::channel();
                let queue = Queue {
                    tx,
                    queued,
                    delay_ns,
                };
                handles.push(s.spawn(move || report(enqueue(from, &queue, &done, counters))));
                handles.push(s.spawn(move || report(send_due(&rx, to, queued, &done, counters))));
            }
        }
        // Join them all, then give the first error.
        let results: Vec<io::Result<()>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("relay: a thread panicked")))
            })
            .collect();
        results.into_iter().collect()
    })
}

/// A frame waiting out its delay: its `virtio_net_hdr` and the frame.
struct Frame {
    /// When to send it, `CLOCK_MONOTONIC` nanoseconds.
    due: u64,
    data: Box<[u8]>,
}

/// The way from a direction's reader to its sender.
struct Queue<'a> {
    tx: mpsc::Sender<Frame>,
    /// Bytes of the frames in the channel.
    queued: &'a AtomicUsize,
    delay_ns: u64,
}

/// Without a delay: send each frame on as soon as it is read.
fn forward(
    from: &PacketSocket,
    to: &PacketSocket,
    done: &dyn Fn() -> bool,
    counters: &Counters,
) -> io::Result<()> {
    let mut buf = vec![0u8; VNET_HDR_LEN + MAX_FRAME];
    while !done() {
        match from.recv(&mut buf)? {
            Received::Frame(n, _) => to.send_counted(&buf[..n], counters)?,
            Received::TooLarge => {
                counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Received::Nothing => {}
        }
    }
    Ok(())
}

/// With a delay, the reader: stamp each frame with its deadline and queue
/// it for the sender.
fn enqueue(
    from: &PacketSocket,
    queue: &Queue<'_>,
    done: &dyn Fn() -> bool,
    counters: &Counters,
) -> io::Result<()> {
    let mut buf = vec![0u8; VNET_HDR_LEN + MAX_FRAME];
    while !done() {
        match from.recv(&mut buf)? {
            Received::Frame(n, arrived) => {
                let due = arrived.saturating_add(queue.delay_ns);
                if queue.queued.load(Ordering::Relaxed) + n > MAX_QUEUED_BYTES {
                    counters.dropped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                queue.queued.fetch_add(n, Ordering::Relaxed);
                let frame = Frame {
                    due,
                    data: buf[..n].into(),
                };
                if queue.tx.send(frame).is_err() {
                    // The sender has ended: so do we.
                    return Ok(());
                }
            }
            Received::TooLarge => {
                counters.dropped.fetch_add(1, Ordering::Relaxed);
            }
            Received::Nothing => {}
        }
    }
    Ok(())
}

/// How long a sender spins before a frame's deadline: the wake-up
/// latency its own timed sleeps have shown, so that the frame leaves on
/// time without spinning for nothing. It is the 7th-largest overshoot (the
/// 80th percentile) of the last [`SPIN_WINDOW`] sleeps, plus 5 µs, within
/// [`SPIN_MIN_NS`]..=[`SPIN_MAX_NS`]. The same machine's wake-up latency
/// changes from one day to the next (figures: docs/design/hosts.md,
/// "Relay wake-up"): a fixed spin is either late on a slow-waking machine
/// or, on a fast one, CPU taken from the ranks of the relay's core for
/// nothing.
struct Spin {
    recent: [u64; SPIN_WINDOW],
    next: usize,
    ns: u64,
}

impl Spin {
    fn new() -> Spin {
        Spin {
            recent: [SPIN_MIN_NS; SPIN_WINDOW],
            next: 0,
            ns: SPIN_MIN_NS,
        }
    }

    /// A timed sleep meant to end at `wake` ended `overshoot` ns late.
    fn saw(&mut self, overshoot: u64) {
        self.recent[self.next] = overshoot;
        self.next = (self.next + 1) % SPIN_WINDOW;
        let mut v = self.recent;
        v.sort_unstable();
        self.ns = (v[SPIN_WINDOW - 7] + 5_000).clamp(SPIN_MIN_NS, SPIN_MAX_NS);
    }
}

/// With a delay, the sender: send each queued frame at its deadline, and
/// with it every queued frame due within the spin ([`Spin`]; a stream of
/// frames leaves in bursts of one wake-up each, none of them more than
/// that early).
fn send_due(
    rx: &mpsc::Receiver<Frame>,
    to: &PacketSocket,
    queued: &AtomicUsize,
    done: &dyn Fn() -> bool,
    counters: &Counters,
) -> io::Result<()> {
    set_timer_slack_min();
    let mut spin = Spin::new();
    let mut next: Option<Frame> = None;
    while !done() {
        let frame = match next.take() {
            Some(f) => f,
            None => match rx.recv_timeout(POLL) {
                Ok(f) => f,
                Err(mpsc::RecvTimeoutError::Timeout) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            },
        };
        queued.fetch_sub(frame.data.len(), Ordering::Relaxed);
        if !wait_until(frame.due, &mut spin, done) {
            break;
        }
        to.send_counted(&frame.data, counters)?;
        while let Ok(f) = rx.try_recv() {
            if f.due > now_ns() + spin.ns {
                next = Some(f);
                break;
            }
            queued.fetch_sub(f.data.len(), Ordering::Relaxed);
            to.send_counted(&f.data, counters)?;
        }
    }
    Ok(())
}

/// When the frame whose `recvmsg` header is `msg` arrived, in
/// `CLOCK_MONOTONIC` ns: its `SCM_TIMESTAMPNS` (`CLOCK_REALTIME`)
/// moved to the monotonic clock, when it has one that lies within the
/// last second; otherwise now.
fn arrival_ns(msg: &libc::msghdr) -> u64 {
    let now = now_ns();
    // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR/CMSG_NXTHDR stay
    // within its control buffer, and a SCM_TIMESTAMPNS message's data is a
    // timespec (read unaligned, as the buffer promises no alignment).
    let stamp = unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        let mut found = None;
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                found = Some(std::ptr::read_unaligned(
                    libc::CMSG_DATA(c).cast::<libc::timespec>(),
                ));
                break;
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
        found
    };
    let Some(ts) = stamp else {
        return now;
    };
    let stamp_real = (ts.tv_sec as i128) * 1_000_000_000 + ts.tv_nsec as i128;
    let since = clock_ns(libc::CLOCK_REALTIME) - stamp_real;
    if (0..1_000_000_000).contains(&since) {
        now - since as u64
    } else {
        now
    }
}

/// Clock `clock`, in nanoseconds.
fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clocks asked for
    // always exist, so the call cannot fail.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as i128) * 1_000_000_000 + ts.tv_nsec as i128
}

/// `CLOCK_MONOTONIC`, in nanoseconds.
fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC) as u64
}

/// Wait until `CLOCK_MONOTONIC` reaches `deadline` (ns): sleep until
/// `spin` before it, then spin; each sleep's overshoot goes to `spin`.
/// False if `done` turned true first (it is looked at every [`POLL`]
/// while sleeping).
fn wait_until(deadline: u64, spin: &mut Spin, done: &dyn Fn() -> bool) -> bool {
    let poll_ns = POLL.as_nanos() as u64;
    loop {
        let now = now_ns();
        if now >= deadline {
            return true;
        }
        let left = deadline - now;
        if left <= spin.ns {
            std::hint::spin_loop();
            continue;
        }
        if done() {
            return false;
        }
        let wake = (deadline - spin.ns).min(now + poll_ns);
        let ts = libc::timespec {
            tv_sec: (wake / 1_000_000_000) as libc::time_t,
            tv_nsec: (wake % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: `ts` is a valid timespec; a null remainder is allowed
        // with TIMER_ABSTIME. An early return (EINTR) is harmless: the
        // loop looks at the clock again.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if r == 0 {
            spin.saw(now_ns().saturating_sub(wake));
        }
    }
}

/// Make this thread's timed sleeps end on time: the default timer slack
/// (50 µs) would be added to every delay.
fn set_timer_slack_min() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects the
    // calling thread only. Failure leaves the default slack: ignored.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// What one read gave.
enum Received {
    /// A frame that arrived on the interface, of this length with its
    /// `virtio_net_hdr`, and when (`CLOCK_MONOTONIC` ns: the kernel's
    /// receive timestamp, or the time it was read where that is missing).
    Frame(usize, u64),
    /// A frame too large for the buffer (dropped).
    TooLarge,
    /// Nothing to forward: the timeout passed, a signal came, the frame
    /// was the interface's own outgoing one, or the interface went down.
    Nothing,
}

/// The error `e` of step `what` on interface `name`.
fn err_on(name: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("relay: interface {name}: {what}: {e}"))
}

/// A raw packet socket on one interface, with `virtio_net_hdr`s.
struct PacketSocket {
    fd: OwnedFd,
    name: String,
}

impl PacketSocket {
    /// Open and bind the socket for interface `name`.
    fn open(name: &str) -> io::Result<PacketSocket> {
        let no_device = || {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("relay: interface {name}: no such device"),
            )
        };
        let cname = CString::new(name).map_err(|_| no_device())?;
        // SAFETY: `cname` is a valid NUL-terminated string that outlives
        // the call.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(no_device());
        }
        // Protocol 0: the socket receives nothing until it is bound to the
        // interface below.
        // SAFETY: plain socket(2) call with constant arguments.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(err_on(name, "packet socket", io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a freshly opened descriptor owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let sock = PacketSocket {
            fd,
            name: name.to_string(),
        };
        sock.configure()?;
        let ifindex = libc::c_int::try_from(ifindex).map_err(|_| no_device())?;
        sock.bind(ifindex)?;
        Ok(sock)
    }

    /// The error `e` of step `what` on this socket's interface.
    fn err(&self, what: &str, e: io::Error) -> io::Error {
        err_on(&self.name, what, e)
    }

    /// Socket options: `virtio_net_hdr`s, no outgoing frames, buffers of
    /// [`SOCKET_BUFFER`] bytes, and [`POLL`] timeouts on reads and writes.
    fn configure(&self) -> io::Result<()> {
        let one: libc::c_int = 1;
        self.set(libc::SOL_PACKET, libc::PACKET_VNET_HDR, &one)
            .map_err(|e| self.err("PACKET_VNET_HDR", e))?;
        self.set(libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, &one)
            .map_err(|e| self.err("PACKET_IGNORE_OUTGOING", e))?;
        // Each frame's arrival as the kernel saw it: the reader's own
        // wake-up after the frame arrived is then no part of its delay.
        self.set(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &one)
            .map_err(|e| self.err("SO_TIMESTAMPNS", e))?;
        for (force, plain) in [
            (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
            (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
        ] {
            // Without CAP_NET_ADMIN, settle for the system's maximum.
            if self.set(libc::SOL_SOCKET, force, &SOCKET_BUFFER).is_err() {
                self.set(libc::SOL_SOCKET, plain, &SOCKET_BUFFER)
                    .map_err(|e| self.err("socket buffer", e))?;
            }
        }
        let timeout = libc::timeval {
            tv_sec: 0,
            tv_usec: POLL.as_micros() as libc::suseconds_t,
        };
        for opt in [libc::SO_RCVTIMEO, libc::SO_SNDTIMEO] {
            self.set(libc::SOL_SOCKET, opt, &timeout)
                .map_err(|e| self.err("socket timeout", e))?;
        }
        Ok(())
    }

    /// Bind to interface `ifindex` for every protocol, and make the
    /// interface promiscuous while the socket lives.
    fn bind(&self, ifindex: libc::c_int) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain data, for which all zeroes is valid.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as libc::c_ushort;
        addr.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        addr.sll_ifindex = ifindex;
        // SAFETY: `addr` is a valid sockaddr_ll and the length given is its
        // size.
        let rc = unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&raw const addr).cast::<libc::sockaddr>(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(self.err("bind", io::Error::last_os_error()));
        }
        // Promiscuous while the socket lives (the kernel counts and undoes
        // it on close), for interfaces that filter frames by address.
        // SAFETY: packet_mreq is plain data, for which all zeroes is valid.
        let mut mreq: libc::packet_mreq = unsafe { std::mem::zeroed() };
        mreq.mr_ifindex = ifindex;
        mreq.mr_type = libc::PACKET_MR_PROMISC as libc::c_ushort;
        self.set(libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
            .map_err(|e| self.err("promiscuous mode", e))
    }

    /// Set a socket option to `value`.
    fn set<T>(&self, level: libc::c_int, opt: libc::c_int, value: &T) -> io::Result<()> {
        // SAFETY: `value` points to a live `T` of the size given; the
        // kernel only reads it.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                opt,
                (value as *const T).cast::<libc::c_void>(),
                size_of::<T>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Read one frame and its `virtio_net_hdr` into `buf`, waiting
    /// [`POLL`] at most.
    fn recv(&self, buf: &mut [u8]) -> io::Result<Received> {
        // SAFETY: sockaddr_ll is plain data, for which all zeroes is valid.
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast::<libc::c_void>(),
            iov_len: buf.len(),
        };
        // Room for one SCM_TIMESTAMPNS (a timespec), u64-aligned.
        let mut control = [0u64; 8];
        // SAFETY: msghdr is plain data, for which all zeroes is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_name = (&raw mut from).cast::<libc::c_void>();
        msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast::<libc::c_void>();
        msg.msg_controllen = size_of_val(&control) as _;
        // SAFETY: `msg` points at `from`, at `iov` (which covers `buf`,
        // writable for `buf.len()` bytes) and at `control`, all alive and
        // writable for the lengths given; MSG_TRUNC only changes the
        // length returned (the frame's full length), not what is written.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &raw mut msg, libc::MSG_TRUNC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN | libc::EINTR | libc::ENETDOWN) => Ok(Received::Nothing),
                _ => Err(self.error("receive", e)),
            };
        }
        let n = n as usize;
        if from.sll_pkttype == libc::PACKET_OUTGOING || n <= VNET_HDR_LEN {
            Ok(Received::Nothing)
        } else if n > buf.len() {
            Ok(Received::TooLarge)
        } else {
            Ok(Received::Frame(n, arrival_ns(&msg)))
        }
    }

    /// Send one frame with its `virtio_net_hdr`, counting it as forwarded
    /// or dropped. Errors are only those that will not pass: the
    /// interface is gone, or the socket broken.
    fn send_counted(&self, frame: &[u8], counters: &Counters) -> io::Result<()> {
        loop {
            // SAFETY: `frame` is readable for `frame.len()` bytes; the
            // socket is bound, so no address is needed.
            let n = unsafe {
                libc::send(
                    self.fd.as_raw_fd(),
                    frame.as_ptr().cast::<libc::c_void>(),
                    frame.len(),
                    0,
                )
            };
            if n >= 0 {
                counters.frames.fetch_add(1, Ordering::Relaxed);
                let bytes = frame.len().saturating_sub(VNET_HDR_LEN) as u64;
                counters.bytes.fetch_add(bytes, Ordering::Relaxed);
                return Ok(());
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // The interface is down, its peer's backlog full, the send
                // buffer full past the timeout, or the frame refused: lost,
                // as on a wire.
                Some(
                    libc::ENOBUFS | libc::EAGAIN | libc::ENETDOWN | libc::EMSGSIZE | libc::EINVAL,
                ) => {
                    counters.dropped.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                _ => return Err(self.error("send", e)),
            }
        }
    }

    /// An error of `what` on this socket, naming its interface.
    fn error(&self, what: &str, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("relay: interface {}: {what}: {e}", self.name),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spin_follows_the_wake_up_latency_seen_not_its_outliers() {
        let mut s = Spin::new();
        assert_eq!(s.ns, SPIN_MIN_NS);
        for _ in 0..SPIN_WINDOW {
            s.saw(40_000);
        }
        assert_eq!(s.ns, 45_000);
        // A few late wake-ups (a vCPU stalled) do not move it.
        for _ in 0..6 {
            s.saw(2_000_000);
        }
        assert_eq!(s.ns, 45_000);
        // When most sleeps are late, it follows, up to its most.
        for _ in 0..SPIN_WINDOW {
            s.saw(2_000_000);
        }
        assert_eq!(s.ns, SPIN_MAX_NS);
        // A machine that wakes on time: the least spin.
        for _ in 0..SPIN_WINDOW {
            s.saw(1_000);
        }
        assert_eq!(s.ns, SPIN_MIN_NS);
    }
}
