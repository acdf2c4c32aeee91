//! The network as the replay reads it: each pair's point-to-point costs
//! from the profile in flat arrays ([`Net`]), the wire time of a message
//! (MHETA eq. 3's T_{i->j}(q), [`Net::transfer`]), each host's link
//! ([`HostLink`]) and each rank's in-memory copy cost.

use mheta_profile::{ClusterProfile, MOVE_BYTES};

/// Costs of point-to-point messages, from the profile, as flat arrays.
#[derive(Clone, Debug)]
pub(crate) struct Net {
    p: usize,
    /// What the replay reads of each pair. Where the profile lists every
    /// pair, by [`Net::k`]: diagonal by diagonal, so that the pairs at
    /// one offset (every rank's right neighbour, every rank's partner in
    /// one round of a recursive doubling) lie side by side. Where it
    /// gives the unlisted pairs' costs by kind
    /// ([`ClusterProfile::unlisted`]): those two (same host, other host)
    /// and then the listed pairs, found through `listed`.
    wires: Vec<Wire>,
    /// The listed pairs' `k` and their place in `wires`, sorted by `k`;
    /// None: `wires` is the full table.
    listed: Option<Vec<(usize, u32)>>,
    /// The pairs' piecewise one-way fits, one run of segments per pair.
    segs: Vec<mheta_profile::Segment>,
    /// The pairs' measured exchanges (`PairCost::exchange`), one run per
    /// pair: (gap, bytes, seconds over the pair's one-way fit at that
    /// size).
    exch: Vec<(f64, f64, f64)>,
    /// The pairs' sender's times by size (`PairCost::send_by_size`), one
    /// run per pair: (bytes, seconds), each at least the ones before it
    /// and the pair's o_s.
    osz: Vec<(f64, f64)>,
    /// Mean costs, for reductions.
    pub(crate) mean: [f64; 4],
    /// Each rank's host (an index; one host when the profile does not
    /// name them): ranks of one host do not share a link.
    pub(crate) host: Vec<usize>,
    /// Per rank, its host's link out and in: the pair to another host
    /// that carries a mebibyte soonest and the seconds a byte adds to its
    /// large messages (the slope of its fit past a mebibyte), which a
    /// [`Shape::Linear`](super::Shape::Linear) collective's blocks share;
    /// None: no such pair.
    pub(crate) link_out: Vec<Option<HostLink>>,
    pub(crate) link_in: Vec<Option<HostLink>>,
    /// Per rank, seconds per byte of a copy within its memory
    /// ([`Net::find_copy_costs`]).
    pub(crate) copy_per_byte: Vec<f64>,
    /// Per rank, seconds per byte of shifting rows in its memory alone
    /// (`NodeCost::shift_per_byte`; `copy_per_byte` where not measured):
    /// [`Net::shift_at`] where `shift_by` has no points.
    pub(crate) shift_per_byte: Vec<f64>,
    /// Per rank, its `NodeCost::shift_by` as (log2 of the distance in
    /// bytes, seconds per byte), in increasing distance; empty where not
    /// measured.
    pub(crate) shift_by: Vec<Vec<(f64, f64)>>,
    /// Per rank, seconds per byte of backing memory it had not touched
    /// (`NodeCost::touch_per_byte`; 0 where not measured).
    pub(crate) touch_per_byte: Vec<f64>,
    /// Per rank, seconds per byte of a move's piece through MPI between
    /// it and a rank of its host, its rows out of the cache: the median
    /// over its host's pairs of `1 / PairCost::bandwidth_cold_bps`; 0
    /// where none was measured ([`Net::find_on_host_rates`]).
    pub(crate) cold_per_byte: Vec<f64>,
    /// Per rank, seconds per byte of a move's piece copied by both ends
    /// between it and a rank of its host: the median over its host's
    /// pairs of `1 / PairCost::direct_copy_bps`, `copy_per_byte` where
    /// none was measured.
    pub(crate) direct_per_byte: Vec<f64>,
    /// Per rank, how many times longer its CPU work takes in the job than
    /// it took when measured with a core to itself: its host's ranks over
    /// its machine's online CPUs, at least 1 (`NodeCost::machine_cpus`; 1
    /// where not recorded). The apps give each rank of a host with more
    /// ranks than CPUs a quota of that share (`base_share`)
    /// ([`Net::find_crowding`]).
    pub(crate) crowding: Vec<f64>,
    /// Each host's ranks (first, end) where a pair's costs depend only on
    /// whether its ranks share a host: a profile by kind that lists no
    /// pair, hosts of consecutive ranks, one link rate out and one in a
    /// host. None otherwise. A [`Shape::Linear`](super::Shape::Linear)
    /// all-gather over many ranks is priced by host on it
    /// (`model/allgather.rs`).
    pub(crate) kind_spans: Option<Vec<(usize, usize)>>,
}

/// One pair's costs as the replay reads them ([`Net::pair`]).
#[derive(Clone, Copy)]
pub(crate) struct Pair<'a> {
    /// The pair's index ([`Net::k`]): what a load's slowdowns are kept by.
    pub(crate) k: usize,
    w: &'a Wire,
    segs: &'a [mheta_profile::Segment],
    exch: &'a [(f64, f64, f64)],
    osz: &'a [(f64, f64)],
}

impl Pair<'_> {
    /// Time on the wire from the sender to the receiver (MHETA eq. 3's
    /// T_{i->j}(q)), from the pair's piecewise one-way fit.
    /// ([`mheta_profile::PairCost::transfer_s`], the same arithmetic.)
    pub(crate) fn transfer(&self, bytes: f64) -> f64 {
        let w = self.w;
        if !w.measured {
            return 0.0;
        }
        let (first, n) = (w.seg.0 as usize, w.seg.1 as usize);
        let one_way = if n == 0 {
            w.o_send + w.latency + w.o_recv + w.per_byte * bytes
        } else {
            let segs = &self.segs[first..first + n];
            let s = segs
                .iter()
                .find(|s| bytes <= s.to_bytes as f64)
                .unwrap_or(&segs[n - 1]);
            s.base_s + s.per_byte_s * (bytes - s.from_bytes as f64).max(0.0)
        };
        (one_way - w.o_send - w.o_recv).max(0.0)
    }

    /// Time on the wire of a send posted `gap` seconds after its
    /// sender's last MPI call ([`Pair::transfer`] where the pair measured
    /// no exchanges, `PairCost::exchange`): the transfer, what the
    /// pair's exchanges after that gap took over its exchanges back to
    /// back (the path out of the caches after a stage), and, for a send
    /// that goes `both_ways` at once with one from its receiver, what its
    /// exchanges back to back took over its one-way fit. Linear between
    /// the sizes and the gaps measured, flat past either end.
    pub(crate) fn exchange_transfer(&self, bytes: f64, gap: f64, both_ways: bool) -> f64 {
        let t = self.transfer(bytes);
        if self.w.exch.1 == 0 {
            return t;
        }
        let at_gap = self.excess(bytes, gap);
        let extra = if both_ways {
            at_gap
        } else {
            at_gap - self.excess(bytes, 0.0)
        };
        (t + extra).max(0.0)
    }

    /// What the pair's exchanges of `bytes` after `gap` took over its
    /// one-way fit (interpolated as [`Pair::exchange_transfer`] says).
    fn excess(&self, bytes: f64, gap: f64) -> f64 {
        let (first, n) = (self.w.exch.0 as usize, self.w.exch.1 as usize);
        let pts = &self.exch[first..first + n];
        // The excess at one gap's run of sizes.
        let at_size = |run: &[(f64, f64, f64)]| -> f64 {
            match run.iter().position(|&(_, b, _)| b >= bytes) {
                None => run[run.len() - 1].2,
                Some(0) => run[0].2,
                Some(i) => {
                    let ((_, b0, e0), (_, b1, e1)) = (run[i - 1], run[i]);
                    e0 + (e1 - e0) * (bytes - b0) / (b1 - b0)
                }
            }
        };
        // Runs of equal gap, in increasing gap.
        let mut lo: Option<(f64, f64)> = None;
        let mut start = 0;
        while start < n {
            let g = pts[start].0;
            let end = start + pts[start..].iter().take_while(|x| x.0 == g).count();
            let e = at_size(&pts[start..end]);
            if g >= gap {
                return match lo {
                    Some((g0, e0)) if g > g0 => e0 + (e - e0) * (gap - g0) / (g - g0),
                    _ => e,
                };
            }
            lo = Some((g, e));
            start = end;
        }
        lo.map_or(0.0, |(_, e)| e)
    }

    /// The sender's time in a send of 8 bytes, LogP's o_s.
    pub(crate) fn o_send(&self) -> f64 {
        self.w.o_send
    }

    /// The sender's time in a send of `bytes` (LogGP's o(m)): linear
    /// between o_s at 8 bytes and the sizes the pair measured
    /// (`PairCost::send_by_size`), flat past the largest (the eager
    /// limit); o_s where none were measured.
    pub(crate) fn o_send_at(&self, bytes: f64) -> f64 {
        let (first, n) = (self.w.osz.0 as usize, self.w.osz.1 as usize);
        let (mut b0, mut o0) = (8.0, self.w.o_send);
        if n == 0 || bytes <= b0 {
            return o0;
        }
        for &(b1, o1) in &self.osz[first..first + n] {
            if bytes <= b1 {
                return o0 + (o1 - o0) * (bytes - b0) / (b1 - b0);
            }
            (b0, o0) = (b1, o1);
        }
        o0
    }

    /// A send of `bytes`: the sender's time ([`Pair::o_send_at`]) and the
    /// time on the wire after it, [`Pair::exchange_transfer`] after
    /// `gap` (None: [`Pair::transfer`]) less what o(m) takes over o_s,
    /// so that the message arrives when the pair's measured one-way
    /// time says, and the sender is busy for the part of it that is
    /// its own (MHETA eq. 3 with LogGP's o(m)).
    pub(crate) fn send_costs(&self, bytes: f64, gap: Option<f64>, both_ways: bool) -> (f64, f64) {
        let o = self.o_send_at(bytes);
        let t = match gap {
            None => self.transfer(bytes),
            Some(g) => self.exchange_transfer(bytes, g, both_ways),
        };
        (o, (t - (o - self.w.o_send)).max(0.0))
    }

    pub(crate) fn o_recv(&self) -> f64 {
        self.w.o_recv
    }

    /// The eager limit, bytes (`u64::MAX`: every send eager).
    pub(crate) fn eager(&self) -> u64 {
        self.w.eager
    }

    /// Wire latency: what the receiver's acknowledgement of a rendezvous
    /// message takes back to its sender.
    pub(crate) fn latency(&self) -> f64 {
        self.w.latency
    }

    /// Bytes of a large message the transport holds for the sender once
    /// the receiver has matched it: on a connection that has carried only
    /// small messages (`PairCost::send_buffer_first_bytes`), else after the
    /// profile's sweep (`PairCost::send_buffer_bytes`); 0 where neither
    /// was measured.
    pub(crate) fn send_buffer(&self) -> f64 {
        self.w.send_buffer as f64
    }

    /// A move's piece of `bytes` across this pair ([`Pair::transfer`]
    /// with its part beyond a message's fixed cost at the rate the
    /// pair's move-sized messages got when waited for as a move waits:
    /// `PairCost::move_scale`).
    pub(crate) fn move_transfer(&self, bytes: f64) -> f64 {
        let fixed = self.transfer(0.0);
        let [a, b] = self.w.move_scale.map(f64::from);
        let k = mheta_profile::move_scale_at(&[(MOVE_BYTES[0], a), (MOVE_BYTES[1], b)], bytes);
        fixed + (self.transfer(bytes) - fixed) * k
    }
}

/// A host's link as [`Net::link_out`] and [`Net::link_in`] hold it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostLink {
    /// The pair that shows the link's rate (its load slowdown applies).
    pub(crate) pair: usize,
    /// Seconds a byte takes on the link.
    pub(crate) per_byte_s: f64,
}

/// One pair's costs, in one record of a few words: the replay reads a
/// pair at every message, and at P = 1024 the profile's own records
/// (~0.5 KB each, with their samples) made that a cache miss per field
/// and the P x P table half a gigabyte.
#[derive(Clone, Copy, Debug)]
struct Wire {
    measured: bool,
    /// [`mheta_profile::PairCost::move_scale`] at each of
    /// [`mheta_profile::MOVE_BYTES`].
    move_scale: [f32; 2],
    o_send: f64,
    o_recv: f64,
    latency: f64,
    per_byte: f64,
    /// Eager limit, bytes (`u64::MAX`: not measured, every send eager).
    eager: u64,
    /// [`Pair::send_buffer`], bytes.
    send_buffer: u64,
    /// The pair's segments in [`Net::segs`]: first, count (0: the linear
    /// fit).
    seg: (u32, u32),
    /// The pair's exchanges in [`Net::exch`]: first, count (0: none).
    exch: (u32, u32),
    /// The pair's sends by size in [`Net::osz`]: first, count (0: none).
    osz: (u32, u32),
}

impl Wire {
    const NONE: Wire = Wire {
        measured: false,
        move_scale: [1.0; 2],
        o_send: 0.0,
        o_recv: 0.0,
        latency: 0.0,
        per_byte: 0.0,
        eager: u64::MAX,
        send_buffer: 0,
        seg: (0, 0),
        exch: (0, 0),
        osz: (0, 0),
    };
}

impl Net {
    /// Whether any pair's exchanges were measured (`PairCost::exchange`).
    pub(crate) fn has_exchanges(&self) -> bool {
        !self.exch.is_empty()
    }

    pub(super) fn from_profile(prof: &ClusterProfile) -> Net {
        let p = prof.np as usize;
        let classed = prof.unlisted.is_some();
        let mut net = Net {
            p,
            wires: if classed {
                Vec::new()
            } else {
                vec![Wire::NONE; p * p]
            },
            listed: classed.then(Vec::new),
            segs: Vec::new(),
            exch: Vec::new(),
            osz: Vec::new(),
            mean: [0.0; 4],
            host: vec![0; p],
            link_out: vec![None; p],
            link_in: vec![None; p],
            copy_per_byte: Vec::new(),
            shift_per_byte: Vec::new(),
            shift_by: vec![Vec::new(); p],
            touch_per_byte: vec![0.0; p],
            cold_per_byte: vec![0.0; p],
            direct_per_byte: Vec::new(),
            crowding: vec![1.0; p],
            kind_spans: None,
        };
        if prof.hosts.len() == p {
            let mut names: std::collections::HashMap<&str, usize> = Default::default();
            for (r, h) in prof.hosts.iter().enumerate() {
                let next = names.len();
                net.host[r] = *names.entry(h.as_str()).or_insert(next);
            }
        }
        let wire = |c: &mheta_profile::PairCost,
                    segs: &mut Vec<mheta_profile::Segment>,
                    exch: &mut Vec<(f64, f64, f64)>,
                    osz: &mut Vec<(f64, f64)>| {
            let w = Wire {
                measured: true,
                move_scale: MOVE_BYTES.map(|b| c.move_scale(b as f64) as f32),
                o_send: c.o_send_s,
                o_recv: c.o_recv_s,
                latency: c.latency_s,
                per_byte: c.per_byte_s,
                eager: c.eager_limit_bytes.unwrap_or(u64::MAX),
                send_buffer: c
                    .send_buffer_first_bytes
                    .or(c.send_buffer_bytes)
                    .unwrap_or(0),
                seg: (segs.len() as u32, c.segments.len() as u32),
                exch: (exch.len() as u32, c.exchange.len() as u32),
                osz: (osz.len() as u32, c.send_by_size.len() as u32),
            };
            segs.extend(c.segments.iter().cloned());
            let mut most = c.o_send_s;
            osz.extend((c.send_by_size.iter()).map(|x| {
                most = most.max(x.o_send_s);
                (x.bytes as f64, most)
            }));
            exch.extend((c.exchange.iter()).map(|x| {
                let b = x.bytes as f64;
                (x.gap_s, b, x.one_way.p50 - c.one_way_s(b))
            }));
            w
        };
        if classed {
            for same in [true, false] {
                let w = prof.unlisted_pair(same).map_or(Wire::NONE, |c| {
                    wire(c, &mut net.segs, &mut net.exch, &mut net.osz)
                });
                net.wires.push(w);
            }
        }
        // In the order of `k`, so that a pair's segments lie where its
        // neighbours' do.
        let mut order: Vec<(usize, usize)> = (prof.pairs.iter().enumerate())
            .map(|(i, c)| (net.k(c.src as usize, c.dst as usize), i))
            .collect();
        order.sort_unstable();
        for (k, i) in order {
            let w = wire(&prof.pairs[i], &mut net.segs, &mut net.exch, &mut net.osz);
            match &mut net.listed {
                Some(l) => {
                    l.push((k, net.wires.len() as u32));
                    net.wires.push(w);
                }
                None => net.wires[k] = w,
            }
        }
        net.mean = net.mean_costs(prof);
        net.find_host_links();
        net.kind_spans = net.find_kind_spans();
        let mut measured: Vec<Option<f64>> = vec![None; p];
        let mut shift: Vec<Option<f64>> = vec![None; p];
        for n in prof.nodes.iter().filter(|n| (n.rank as usize) < p) {
            measured[n.rank as usize] = n.copy_per_byte.as_ref().map(|c| c.p50);
            shift[n.rank as usize] = n.shift_per_byte.as_ref().map(|c| c.p50);
            net.touch_per_byte[n.rank as usize] = n.touch_per_byte.as_ref().map_or(0.0, |c| c.p50);
            net.shift_by[n.rank as usize] = (n.shift_by.iter())
                .map(|pt| ((pt.distance_bytes as f64).log2(), pt.per_byte.p50))
                .collect();
        }
        net.find_copy_costs(&measured);
        net.shift_per_byte = (shift.iter().zip(&net.copy_per_byte))
            .map(|(s, c)| s.unwrap_or(*c))
            .collect();
        net.find_on_host_rates(prof);
        net.find_crowding(prof);
        net
    }

    /// [`Net::crowding`]: per host, its ranks over the online CPUs of
    /// its machine (the most any of its ranks recorded), the share the
    /// apps' CPU emulation gives each of its ranks (`base_share`,
    /// `apps/src/emulate.rs`). Emulated hosts of one machine keep a core
    /// each while the others wait, as a move's ranks mostly do across
    /// links, so they are not counted together.
    fn find_crowding(&mut self, prof: &ClusterProfile) {
        let p = self.crowding.len();
        // Per host: its ranks and the most CPUs any of them recorded.
        let mut of: std::collections::HashMap<usize, (usize, Option<u32>)> = Default::default();
        for &h in &self.host {
            of.entry(h).or_insert((0, None)).0 += 1;
        }
        for n in prof.nodes.iter().filter(|n| (n.rank as usize) < p) {
            let e = of.entry(self.host[n.rank as usize]).or_insert((0, None));
            e.1 = e.1.max(n.machine_cpus.filter(|&c| c > 0));
        }
        for (x, h) in self.crowding.iter_mut().zip(&self.host) {
            if let Some(&(n, Some(c))) = of.get(h) {
                *x = (n as f64 / c as f64).max(1.0);
            }
        }
    }

    /// Seconds per byte of rank `i` shifting rows by `distance` bytes:
    /// its `shift_by` points, linear in log2(distance) between them and
    /// flat beyond them; its `shift_per_byte` where it has none.
    pub(crate) fn shift_at(&self, i: usize, distance: f64) -> f64 {
        let pts = &self.shift_by[i];
        let (Some(first), Some(last)) = (pts.first(), pts.last()) else {
            return self.shift_per_byte[i];
        };
        let x = distance.max(1.0).log2();
        if x <= first.0 {
            return first.1;
        }
        if x >= last.0 {
            return last.1;
        }
        let k = pts.partition_point(|pt| pt.0 <= x);
        let ((x0, y0), (x1, y1)) = (pts[k - 1], pts[k]);
        y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    }

    /// [`Net::cold_per_byte`] and [`Net::direct_per_byte`]: each rank's
    /// median over the listed pairs between it and another rank of its
    /// host, either way; a rank with none takes the profile's pair for
    /// unlisted ranks of one host, when it has one.
    fn find_on_host_rates(&mut self, prof: &ClusterProfile) {
        let p = self.p;
        let (mut cold, mut direct) = (vec![Vec::new(); p], vec![Vec::new(); p]);
        let per_byte = |bps: f64| (bps > 0.0 && bps.is_finite()).then(|| 1.0 / bps);
        for c in &prof.pairs {
            let (s, d) = (c.src as usize, c.dst as usize);
            if s >= p || d >= p || self.host[s] != self.host[d] {
                continue;
            }
            for r in [s, d] {
                cold[r].extend(per_byte(c.bandwidth_cold_bps));
                direct[r].extend(c.direct_copy_bps.and_then(per_byte));
            }
        }
        let same = prof.unlisted_pair(true);
        for r in 0..p {
            if cold[r].is_empty() {
                cold[r].extend(same.and_then(|c| per_byte(c.bandwidth_cold_bps)));
            }
            if direct[r].is_empty() {
                direct[r].extend(same.and_then(|c| c.direct_copy_bps.and_then(per_byte)));
            }
        }
        self.cold_per_byte = cold
            .iter_mut()
            .map(|v| mheta_base::median(v).unwrap_or(0.0))
            .collect();
        self.direct_per_byte = (direct.iter_mut().zip(&self.copy_per_byte))
            .map(|(v, &c)| mheta_base::median(v).unwrap_or(c))
            .collect();
    }

    /// The costs the replay reads of pair (s, d), whose `k` is given.
    #[inline]
    fn wire_of(&self, s: usize, d: usize, k: usize) -> &Wire {
        match &self.listed {
            None => &self.wires[k],
            Some(l) => match l.binary_search_by_key(&k, |e| e.0) {
                Ok(i) => &self.wires[l[i].1 as usize],
                Err(_) => &self.wires[usize::from(self.host[s] != self.host[d])],
            },
        }
    }

    /// Pair (src, dst), looked up once for the replay's several reads of
    /// it.
    #[inline]
    pub(crate) fn pair(&self, src: usize, dst: usize) -> Pair<'_> {
        let k = self.k(src, dst);
        Pair {
            k,
            w: self.wire_of(src, dst, k),
            segs: &self.segs,
            exch: &self.exch,
            osz: &self.osz,
        }
    }

    /// The sender and receiver of pair `k`.
    fn ends(&self, k: usize) -> (usize, usize) {
        let (off, src) = (k / self.p, k % self.p);
        (src, (src + off) % self.p)
    }

    /// The pairs' mean o_s, o_r, L and G, over every ordered pair (an
    /// unlisted kind weighs as many pairs as it stands for).
    fn mean_costs(&self, prof: &ClusterProfile) -> [f64; 4] {
        let costs =
            |c: &mheta_profile::PairCost| [c.o_send_s, c.o_recv_s, c.latency_s, c.per_byte_s];
        let mut weighed: Vec<(f64, [f64; 4])> =
            prof.pairs.iter().map(|c| (1.0, costs(c))).collect();
        if self.listed.is_some() {
            let p = self.p as f64;
            let mut per_host = vec![0f64; self.host.iter().max().map_or(1, |h| h + 1)];
            for &h in &self.host {
                per_host[h] += 1.0;
            }
            let same: f64 = per_host.iter().map(|c| c * (c - 1.0)).sum();
            let listed_same = (prof.pairs.iter())
                .filter(|c| self.host[c.src as usize] == self.host[c.dst as usize])
                .count() as f64;
            let listed_other = prof.pairs.len() as f64 - listed_same;
            for (is_same, n) in [
                (true, same - listed_same),
                (false, p * (p - 1.0) - same - listed_other),
            ] {
                if let Some(c) = prof.unlisted_pair(is_same).filter(|_| n > 0.0) {
                    weighed.push((n, costs(c)));
                }
            }
        }
        let total: f64 = weighed.iter().map(|w| w.0).sum::<f64>().max(1.0);
        let mut mean = [0.0; 4];
        for (n, c) in &weighed {
            for (m, v) in mean.iter_mut().zip(c) {
                *m += n * v / total;
            }
        }
        mean
    }

    /// The pairs (src, dst) of one kind (ranks of one host, or of two)
    /// whose costs can differ: every such pair of a full table; the
    /// listed ones, and for each rank one pair each way that the
    /// unlisted kind stands for, of a profile that gives it.
    fn pairs_to_scan(&self, same_host: bool) -> Box<dyn Iterator<Item = (usize, usize)> + '_> {
        let p = self.p;
        let kind = move |s: usize, d: usize| s != d && (self.host[s] == self.host[d]) == same_host;
        let Some(listed) = &self.listed else {
            return Box::new(
                (0..p)
                    .flat_map(move |s| (0..p).map(move |d| (s, d)))
                    .filter(move |&(s, d)| kind(s, d)),
            );
        };
        // For each rank, one partner of the kind: another rank of its
        // host, or the first rank of another host.
        let hosts = self.host.iter().max().map_or(1, |h| h + 1);
        let mut first = vec![None; hosts];
        let mut second = vec![None; hosts];
        for (r, &h) in self.host.iter().enumerate() {
            if first[h].is_none() {
                first[h] = Some(r);
            } else if second[h].is_none() {
                second[h] = Some(r);
            }
        }
        let firsts: Vec<usize> = first.iter().flatten().copied().take(2).collect();
        let partner = move |r: usize| -> Option<usize> {
            let h = self.host[r];
            if same_host {
                if first[h] == Some(r) {
                    second[h]
                } else {
                    first[h]
                }
            } else {
                firsts.iter().copied().find(|&o| self.host[o] != h)
            }
        };
        let unlisted = (0..p).flat_map(move |r| {
            let o = partner(r);
            o.map(|o| (r, o)).into_iter().chain(o.map(|o| (o, r)))
        });
        Box::new(
            listed
                .iter()
                .map(|&(k, _)| self.ends(k))
                .filter(move |&(s, d)| kind(s, d))
                .chain(unlisted),
        )
    }

    /// [`Net::link_out`] and [`Net::link_in`] of every rank.
    fn find_host_links(&mut self) {
        let p = self.p;
        let mib = (1u64 << 20) as f64;
        let (mut out_t, mut in_t) = (vec![f64::INFINITY; p], vec![f64::INFINITY; p]);
        let (mut best_out, mut best_in) = (vec![None; p], vec![None; p]);
        for (s, d) in self.pairs_to_scan(false) {
            let pr = self.pair(s, d);
            if !pr.w.measured {
                continue;
            }
            let t = pr.transfer(mib);
            if t < out_t[s] {
                (out_t[s], best_out[s]) = (t, Some(pr.k));
            }
            if t < in_t[d] {
                (in_t[d], best_in[d]) = (t, Some(pr.k));
            }
        }
        let link = |k: Option<usize>| {
            k.map(|k| HostLink {
                pair: k,
                per_byte_s: (self.transfer(k, 2.0 * mib) - self.transfer(k, mib)) / mib,
            })
        };
        let (link_out, link_in) = (
            best_out.into_iter().map(link).collect(),
            best_in.into_iter().map(link).collect(),
        );
        (self.link_out, self.link_in) = (link_out, link_in);
    }

    /// [`Net::kind_spans`].
    fn find_kind_spans(&self) -> Option<Vec<(usize, usize)>> {
        if !self.listed.as_ref().is_some_and(|l| l.is_empty()) {
            return None;
        }
        let rate = |l: &Option<HostLink>| l.map(|l| l.per_byte_s.to_bits());
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for r in 0..self.p {
            let h = self.host[r];
            if h == spans.len() {
                spans.push((r, r + 1));
                continue;
            }
            // Not a new host: the last one, else its ranks are not
            // consecutive.
            let a = spans[h].0;
            if h + 1 != spans.len()
                || rate(&self.link_out[r]) != rate(&self.link_out[a])
                || rate(&self.link_in[r]) != rate(&self.link_in[a])
            {
                return None;
            }
            spans[h].1 = r + 1;
        }
        Some(spans)
    }

    /// Time on the wire from `k`'s sender to its receiver (MHETA eq. 3's
    /// T_{i->j}(q)): [`Pair::transfer`].
    pub(crate) fn transfer(&self, k: usize, bytes: f64) -> f64 {
        let (s, d) = self.ends(k);
        self.pair(s, d).transfer(bytes)
    }

    /// The index of pair (src, dst): its offset (dst - src mod P) times
    /// P, plus src. At P = 1024 the table is 56 MB; in row order a
    /// sweep over every rank's neighbour touched one cache line per rank.
    #[inline]
    pub(crate) fn k(&self, src: usize, dst: usize) -> usize {
        let off = if dst >= src {
            dst - src
        } else {
            dst + self.p - src
        };
        off * self.p + src
    }

    /// Pair `k` in the (src, dst) order of a profile's and a load's
    /// per-pair lists (`src * P + dst`).
    pub(crate) fn row_major(&self, k: usize) -> usize {
        let (off, src) = (k / self.p, k % self.p);
        src * self.p + (src + off) % self.p
    }

    /// [`Net::copy_per_byte`]: each rank's own measured cost of shifting
    /// rows in memory (`NodeCost::copy_per_byte`); for a profile without
    /// it, the fastest pair of its host (a shared-memory transfer is a
    /// copy and its overheads), else of any host; else 0, unpriced. Never
    /// a link between hosts: a network's rate says nothing of a memory's.
    fn find_copy_costs(&mut self, measured: &[Option<f64>]) {
        let hosts = self.host.iter().max().map_or(1, |h| h + 1);
        let mut on_host = vec![f64::INFINITY; hosts];
        for (a, b) in self.pairs_to_scan(true) {
            let w = self.pair(a, b).w;
            if w.measured {
                on_host[self.host[a]] = on_host[self.host[a]].min(w.per_byte);
            }
        }
        let some_host = on_host.iter().copied().fold(f64::INFINITY, f64::min);
        self.copy_per_byte = (self.host.iter().enumerate())
            .map(|(r, &h)| {
                let own = measured.get(r).copied().flatten();
                [own.unwrap_or(f64::INFINITY), on_host[h], some_host]
                    .into_iter()
                    .find(|v| v.is_finite())
                    .unwrap_or(0.0)
            })
            .collect();
    }

    /// Cost of a reduction of `bytes` over `p` ranks: recursive doubling,
    /// ceil(log2 p) rounds of one exchange each.
    pub(super) fn reduce(&self, bytes: f64) -> f64 {
        let rounds = (self.p as f64).log2().ceil();
        let [os, or, l, g] = self.mean;
        rounds * (os + l + bytes * g + or)
    }
}

#[cfg(test)]
mod tests;
