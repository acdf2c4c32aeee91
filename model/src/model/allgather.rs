//! libnbc's linear all-gather ([`Shape::Linear`](super::Shape::Linear)): when each rank leaves
//! it, from its blocks' pairs and the host links they share.
//!
//! Every rank sends its block to every other, so the plain pricing
//! ([`linear`] over few ranks) follows P(P - 1) blocks: at P = 1024 a
//! million a collective, and an NPB-style CG does 26 an iteration. Where
//! a pair's costs go by kind (same host or not; [`Links::spans`]) and the
//! hosts' links carry more than [`BY_HOST_BLOCKS`] blocks, it is priced
//! by host instead ([`by_host`]), in O(P · hosts):
//! - each block alone: the greatest arrival-plus-message over a host's
//!   senders, two per host to leave a receiver's own block out (the same
//!   maximum as block by block, bit for bit);
//! - the out-link: a sender's blocks leave one after another, so the one
//!   to the m-th rank of a host leaves at a line in m; a receiver's last
//!   is the upper envelope of its senders' lines;
//! - the in-link: a fluid queue. A sender's blocks into one host arrive
//!   evenly, as a ramp of work; the queue's completion of a block that
//!   arrives at x is max over u ≤ x of (u + work arrived in [u, x)) plus
//!   its own work, exact for one sender's blocks and off by at most a
//!   block a concurrent sender where several interleave
//!   (`tests::by_host_agrees_with_block_by_block`).

use super::collective::{Costs, Links};

/// Blocks between hosts above which an all-gather whose pairs go by kind
/// is priced by host ([`by_host`]): 64 ranks a host, from 512 ranks on.
pub(crate) const BY_HOST_BLOCKS: usize = 1 << 16;

/// [`Shape::Linear`]: rank j leaves when the last block reaches it, which
/// is no sooner than
/// - each block alone: its sender's arrival plus the pair's message
///   (`c.msg`, whose size is the sender's block);
/// - its place in the queue on the sender's host link: a host pushes out
///   the blocks its ranks send to other hosts one after another, a rank's
///   in the order libnbc posts them (to rank + 1, rank + 2, … mod P) and
///   the ranks in the order they arrive; then the pair's latency;
/// - its place in the queue on j's host link, which takes in the blocks
///   from other hosts in the order they reach it.
pub(crate) fn linear(arrive: &[f64], c: &Costs<'_>, links: Option<&Links<'_>>) -> Vec<f64> {
    let p = arrive.len();
    if let Some(l) = links
        && let Some(spans) = l.spans
    {
        let mut leave = alone_by_kind(arrive, c, spans);
        let crossing: usize = (spans.iter())
            .map(|&(a, b)| (a..b).filter(|&s| l.block[s] > 0.0).count() * (p - (b - a)))
            .sum();
        if crossing <= BY_HOST_BLOCKS || !by_host(arrive, c, l, spans, &mut leave) {
            host_queues(arrive, c, l, &mut leave);
        }
        return leave;
    }
    let mut leave = arrive.to_vec();
    for (j, lv) in leave.iter_mut().enumerate() {
        for s in (0..p).filter(|&s| s != j) {
            *lv = lv.max(arrive[s] + (c.msg)(s, j));
        }
    }
    if let Some(l) = links {
        host_queues(arrive, c, l, &mut leave);
    }
    leave
}

/// The two link queues of [`linear`], raising each rank's `leave` to
/// when its last block from another host is through both.
///
/// The blocks into a host are taken in the order they reach its link,
/// ties in the order they were sent. They are kept by sending host: a
/// host's link sends one block after another, so where the latency
/// between two hosts is one figure (a profile by kind of pair) each
/// host's blocks already come in order, and the (stable, run-finding)
/// sort only merges a run per host.
fn host_queues(arrive: &[f64], c: &Costs<'_>, l: &Links<'_>, leave: &mut [f64]) {
    let p = arrive.len();
    let hosts = l.host.iter().max().map_or(0, |&h| h + 1);
    let mut order: Vec<usize> = (0..p).filter(|&s| l.block[s] > 0.0).collect();
    order.sort_by(|&a, &b| arrive[a].total_cmp(&arrive[b]));
    let mut link_out = vec![f64::NEG_INFINITY; hosts];
    let (mut ranks_of, mut senders_of) = (vec![0usize; hosts], vec![0usize; hosts]);
    for &h in l.host {
        ranks_of[h] += 1;
    }
    for &s in &order {
        senders_of[l.host[s]] += 1;
    }
    // Per receiving host, then per sending host: the blocks coming in,
    // (when they reach the link, their place in the sending, sender,
    // receiver).
    let mut incoming: Vec<Vec<(f64, u32, u32, u32)>> = (0..hosts * hosts)
        .map(|k| {
            let (to, from) = (k / hosts, k % hosts);
            Vec::with_capacity(if to == from {
                0
            } else {
                senders_of[from] * ranks_of[to]
            })
        })
        .collect();
    let mut sent = 0u32;
    for &s in &order {
        let h = l.host[s];
        for d in (1..p).map(|t| (s + t) % p).filter(|&d| l.host[d] != h) {
            let start = link_out[h].max(arrive[s]);
            link_out[h] = start + (l.egress)(s, l.block[s]);
            let lat = (l.latency)(s, d);
            leave[d] = leave[d].max(link_out[h] + lat + (c.o_recv)(s, d));
            incoming[l.host[d] * hosts + h].push((start + lat, sent, s as u32, d as u32));
            sent += 1;
        }
    }
    let mut blocks = Vec::new();
    for to in 0..hosts {
        blocks.clear();
        for from in 0..hosts {
            blocks.append(&mut incoming[to * hosts + from]);
        }
        blocks.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut link_in = f64::NEG_INFINITY;
        for &(at, _, s, d) in &blocks {
            let (s, d) = (s as usize, d as usize);
            link_in = link_in.max(at) + (l.ingress)(d, l.block[s]);
            leave[d] = leave[d].max(link_in + (c.o_recv)(s, d));
        }
    }
}

/// Each rank's leave from its blocks alone, max over s ≠ j of
/// `arrive[s] + c.msg(s, j)`, where a message's cost goes by whether its
/// ranks share a host (`spans`, each host's ranks): per host the two
/// greatest over its senders to a rank of it, and the greatest to a rank
/// of another host; per receiver the greatest that is not its own.
fn alone_by_kind(arrive: &[f64], c: &Costs<'_>, spans: &[(usize, usize)]) -> Vec<f64> {
    const NONE: f64 = f64::NEG_INFINITY;
    let p = arrive.len();
    // Per host: (greatest, its sender, second) to one of its ranks; the
    // greatest to another host's.
    let mut near = vec![(NONE, usize::MAX, NONE); spans.len()];
    let mut far = vec![NONE; spans.len()];
    for (h, &(a, b)) in spans.iter().enumerate() {
        let other = if a > 0 { Some(0) } else { (b < p).then_some(b) };
        for (s, &t) in arrive.iter().enumerate().take(b).skip(a) {
            if b - a > 1 {
                let v = t + (c.msg)(s, if s == a { a + 1 } else { a });
                let n = &mut near[h];
                if v > n.0 {
                    *n = (v, s, n.0);
                } else if v > n.2 {
                    n.2 = v;
                }
            }
            if let Some(o) = other {
                far[h] = far[h].max(t + (c.msg)(s, o));
            }
        }
    }
    // The two hosts whose senders reach other hosts last.
    let (mut f1, mut f1h, mut f2) = (NONE, usize::MAX, NONE);
    for (h, &v) in far.iter().enumerate() {
        if v > f1 {
            (f1, f1h, f2) = (v, h, f1);
        } else if v > f2 {
            f2 = v;
        }
    }
    let mut leave = arrive.to_vec();
    for (h, &(a, b)) in spans.iter().enumerate() {
        let n = near[h];
        let from_far = if f1h == h { f2 } else { f1 };
        for (j, lv) in leave.iter_mut().enumerate().take(b).skip(a) {
            let from_near = if n.1 == j { n.2 } else { n.0 };
            *lv = lv.max(from_near).max(from_far);
        }
    }
    leave
}

/// [`host_queues`] by host, for pairs that go by kind (`spans`): the
/// out-links exactly (to rounding), the in-links as fluid queues (module
/// doc). False, with `leave` untouched, where a sender's link takes no
/// time a block (no link to another host measured): its blocks would be
/// one burst, which the fluid queue does not price.
fn by_host(
    arrive: &[f64],
    c: &Costs<'_>,
    l: &Links<'_>,
    spans: &[(usize, usize)],
    leave: &mut [f64],
) -> bool {
    let p = arrive.len();
    let mut order: Vec<usize> = (0..p).filter(|&s| l.block[s] > 0.0).collect();
    order.sort_by(|&a, &b| arrive[a].total_cmp(&arrive[b]));
    // Each sender's time a block on its host's out-link, and when its
    // first block leaves: its host's link sends one block after another,
    // the senders in the order they arrive.
    let (mut each, mut first) = (vec![0.0; p], vec![0.0; p]);
    let mut link_out = vec![f64::NEG_INFINITY; spans.len()];
    for &s in &order {
        let h = l.host[s];
        let others = p - (spans[h].1 - spans[h].0);
        if others == 0 {
            continue;
        }
        each[s] = (l.egress)(s, l.block[s]);
        if each[s] <= 0.0 {
            return false;
        }
        first[s] = link_out[h].max(arrive[s]);
        link_out[h] = first[s] + others as f64 * each[s];
    }
    // A sender's latency and o_recv to a rank of another host: by kind,
    // one figure for them all.
    let mut to_other = vec![(0.0, 0.0); p];
    for &s in &order {
        let far = if l.host[s] == 0 {
            spans.get(1)
        } else {
            spans.first()
        };
        if let Some(&(o, _)) = far {
            to_other[s] = ((l.latency)(s, o), (c.o_recv)(s, o));
        }
    }
    let mut by_slope = order;
    by_slope.sort_by(|&a, &b| each[a].total_cmp(&each[b]));
    let mut lines = Vec::with_capacity(p);
    let (mut reach, mut sent) = (Vec::new(), Vec::new());
    let mut ramps = Vec::with_capacity(2 * p);
    let mut scratch = (Vec::new(), Vec::new());
    for (h, &(a, b)) in spans.iter().enumerate() {
        let n = b - a;
        // Sender s's blocks into host h go to a, a + 1, …, b - 1 in turn
        // (libnbc posts to s + 1, s + 2, … mod P; h's ranks are
        // consecutive and s is not one of them), after `skip` blocks to
        // other hosts: the ranks from s + 1 up to a, less s's own host's
        // from s + 1 on. Block m reaches h's link at
        // first + (skip + m)·each + latency; the in-link's work is n
        // blocks, one every `each` from there.
        ramps.clear();
        lines.clear();
        for &s in by_slope.iter().filter(|&&s| l.host[s] != h) {
            let own_end = spans[l.host[s]].1;
            let skip = (a + p - s - 1) % p - (own_end - s - 1);
            let at = first[s] + skip as f64 * each[s] + to_other[s].0;
            let rate = (l.ingress)(a, l.block[s]) / each[s];
            ramps.push((at, rate));
            ramps.push((at + n as f64 * each[s], -rate));
            lines.push((each[s], at, s, to_other[s].1));
        }
        if lines.is_empty() {
            continue;
        }
        // The out-link: rank a + m has its block from s when it has left
        // s's host, `each` after it began, and the latency and o_recv.
        envelope(&lines, n, |&(e, at, _, r)| (e, at + e + r), &mut sent);
        // The in-link: rank a + m's last block to reach it, its sender.
        envelope(&lines, n, |&(e, at, _, _)| (e, at), &mut reach);
        sort_by_time(&mut ramps, &mut scratch);
        let (mut t, mut work, mut rate, mut best) =
            (f64::NEG_INFINITY, 0.0, 0.0, f64::NEG_INFINITY);
        let mut next = 0;
        for m in 0..n {
            let (x, i) = reach[m];
            // Up to x: the work arrived and the greatest u - work(u).
            while next < ramps.len() && ramps[next].0 <= x {
                let (at, dr) = ramps[next];
                if t > f64::NEG_INFINITY {
                    work += rate * (at - t);
                }
                t = at;
                best = best.max(t - work);
                rate += dr;
                next += 1;
            }
            let arrived = work + rate * (x - t);
            let (_, _, s, r) = lines[i];
            let done = best.max(x - arrived) + arrived + (l.ingress)(a, l.block[s]);
            let d = a + m;
            leave[d] = leave[d].max(sent[m].0).max(done + r);
        }
    }
    true
}

/// Sorts `v` by its first field, in buckets of equal time: the ramps of
/// [`by_host`] spread over the all-gather about evenly, so this takes
/// a few passes where a comparison sort of 2P ramps took log₂2P.
/// `scratch`: reused buffers.
fn sort_by_time(v: &mut Vec<(f64, f64)>, scratch: &mut (Vec<(f64, f64)>, Vec<u32>)) {
    let n = v.len();
    let (lo, hi) = v
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), e| {
            (lo.min(e.0), hi.max(e.0))
        });
    if n < 64 || !(hi - lo).is_finite() || hi - lo <= 0.0 {
        v.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
        return;
    }
    let (out, start) = scratch;
    let scale = n as f64 / (hi - lo);
    let bucket = |t: f64| (((t - lo) * scale) as usize).min(n - 1);
    start.clear();
    start.resize(n + 1, 0);
    for e in v.iter() {
        start[bucket(e.0) + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    out.clear();
    out.resize(n, (0.0, 0.0));
    let mut fill = start[..n].to_vec();
    for &e in v.iter() {
        let b = bucket(e.0);
        out[fill[b] as usize] = e;
        fill[b] += 1;
    }
    for i in 0..n {
        let (x, y) = (start[i] as usize, start[i + 1] as usize);
        if y - x > 1 {
            out[x..y].sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        }
    }
    std::mem::swap(v, out);
}

/// For m = 0, 1, …, n - 1: the greatest of `y(line) = k + m·e` over
/// `lines`, sorted by slope e, and the index of its line, where
/// `key(line) = (e, k)`. The upper envelope, built and walked once.
fn envelope<L>(lines: &[L], n: usize, key: impl Fn(&L) -> (f64, f64), out: &mut Vec<(f64, usize)>) {
    let mut hull: Vec<(f64, f64, usize)> = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let (e, k) = key(line);
        if let Some(&(e2, k2, _)) = hull.last()
            && e2 == e
        {
            if k2 >= k {
                continue;
            }
            hull.pop();
        }
        // The last line is under the new one and the one before it
        // wherever it is not: where the new meets the one before lies at
        // or before where the last did.
        while hull.len() >= 2 {
            let (e1, k1, _) = hull[hull.len() - 2];
            let (e2, k2, _) = hull[hull.len() - 1];
            if (k1 - k) * (e2 - e1) <= (k1 - k2) * (e - e1) {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push((e, k, i));
    }
    out.clear();
    let mut at = 0;
    for m in 0..n {
        let y = |h: &(f64, f64, usize)| h.1 + m as f64 * h.0;
        while at + 1 < hull.len() && y(&hull[at + 1]) >= y(&hull[at]) {
            at += 1;
        }
        out.push((y(&hull[at]), hull[at].2));
    }
}

#[cfg(test)]
mod tests {
    use super::super::collective::tests::{ZERO, close};
    use super::*;

    #[test]
    fn linear_blocks_share_their_hosts_links() {
        // Four hosts of one rank; host 2's link carries 1 MB/s each way,
        // the others 1 GB/s. A message: 1 µs plus its block at the slower
        // end's rate.
        let rate: [f64; 4] = [1e9, 1e9, 1e6, 1e9];
        let run = |block: &[f64], host: &[usize]| {
            let msg = |s: usize, d: usize| 1e-6 + block[s] / rate[s].min(rate[d]);
            let c = Costs {
                msg: &msg,
                o_send: ZERO,
                o_recv: ZERO,
            };
            let egress = |s: usize, b: f64| b / rate[s];
            let ingress = |j: usize, b: f64| b / rate[j];
            let latency = |_: usize, _: usize| 1e-6;
            let l = Links {
                host,
                block,
                egress: &egress,
                ingress: &ingress,
                latency: &latency,
                spans: None,
            };
            linear(&[0.0; 4], &c, Some(&l))
        };
        // Rank 2 sends its 1000 B to 3, 0 and 1 in turn (1, 2 and 3 ms,
        // and a latency) and takes in 3000 B through its link (3 ms),
        // not one block's 1 ms.
        close(
            &run(&[1000.0; 4], &[0, 1, 2, 3]),
            &[2.001e-3, 3.001e-3, 3.001e-3, 1.001e-3],
        );
        // Half the block on rank 2: its copies leave twice as fast, but it
        // still takes in 3000 B.
        close(
            &run(&[1000.0, 1000.0, 500.0, 1000.0], &[0, 1, 2, 3]),
            &[1.001e-3, 1.501e-3, 3.001e-3, 0.501e-3],
        );
        // On one host no link is shared: each block alone.
        let alone = 1e-6 + 1000.0 / 1e6;
        close(&run(&[1000.0; 4], &[0; 4]), &[alone; 4]);
    }

    /// The host queues as their doc states them, the plain way: every
    /// block into a host in one list, sorted by when it reaches the link,
    /// ties as sent (a stable sort); `host_queues` must give the same
    /// leaves bit for bit, with latencies per kind of pair (its runs
    /// sorted) and per pair (not).
    #[test]
    fn host_queues_take_blocks_as_they_reach_the_link_ties_as_sent() {
        fn plain(arrive: &[f64], c: &Costs<'_>, l: &Links<'_>, leave: &mut [f64]) {
            let p = arrive.len();
            let mut order: Vec<usize> = (0..p).filter(|&s| l.block[s] > 0.0).collect();
            order.sort_by(|&a, &b| arrive[a].total_cmp(&arrive[b]));
            let mut link_out = vec![f64::NEG_INFINITY; p];
            let mut incoming = vec![Vec::new(); p];
            for &s in &order {
                let h = l.host[s];
                for d in (1..p).map(|t| (s + t) % p).filter(|&d| l.host[d] != h) {
                    let start = link_out[h].max(arrive[s]);
                    link_out[h] = start + (l.egress)(s, l.block[s]);
                    let lat = (l.latency)(s, d);
                    leave[d] = leave[d].max(link_out[h] + lat + (c.o_recv)(s, d));
                    incoming[l.host[d]].push((start + lat, s, d));
                }
            }
            for mut blocks in incoming {
                blocks.sort_by(|a, b| a.0.total_cmp(&b.0));
                let mut link_in = f64::NEG_INFINITY;
                for (at, s, d) in blocks {
                    link_in = link_in.max(at) + (l.ingress)(d, l.block[s]);
                    leave[d] = leave[d].max(link_in + (c.o_recv)(s, d));
                }
            }
        }
        let host = [0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 0];
        let p = host.len();
        let block: Vec<f64> = (0..p).map(|s| [0.0, 500.0, 1000.0][s % 3]).collect();
        let o_recv = |s: usize, d: usize| 1e-7 * (1 + (s + d) % 3) as f64;
        let c = Costs {
            msg: &|_, _| 0.0,
            o_send: ZERO,
            o_recv: &o_recv,
        };
        let egress = |s: usize, b: f64| b * [1e-9, 2e-9, 1e-9, 4e-9][host[s]];
        let ingress = |j: usize, b: f64| b * [2e-9, 1e-9, 3e-9, 1e-9][host[j]];
        let by_kind = |_: usize, _: usize| 1e-6;
        let by_pair = |s: usize, d: usize| 1e-6 * (1 + (s * 5 + d) % 4) as f64;
        for latency in [&by_kind as &dyn Fn(usize, usize) -> f64, &by_pair] {
            let l = Links {
                host: &host,
                block: &block,
                egress: &egress,
                ingress: &ingress,
                latency,
                spans: None,
            };
            for a in 0..4 {
                // Many ties: arrivals on a few values.
                let arrive: Vec<f64> = (0..p).map(|j| 1e-6 * ((j * a) % 3) as f64).collect();
                let (mut want, mut got) = (arrive.clone(), arrive.clone());
                plain(&arrive, &c, &l, &mut want);
                host_queues(&arrive, &c, &l, &mut got);
                assert_eq!(got, want, "arrivals {arrive:?}");
            }
        }
    }

    /// A small deterministic generator (xorshift), for test layouts.
    struct Xs(u64);
    impl Xs {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A layout whose pairs go by kind: `p` ranks, hosts of `g`, blocks
    /// up to 64 KiB (a fifth of them empty when `gaps`), arrivals over
    /// `spread` s, each host's out-link at 1 GB/s and its in-link at
    /// `in_rate` times that.
    struct Layout {
        host: Vec<usize>,
        spans: Vec<(usize, usize)>,
        block: Vec<f64>,
        arrive: Vec<f64>,
        in_rate: f64,
    }

    fn layout(
        p: usize,
        g: usize,
        seed: u64,
        gaps: bool,
        spread: f64,
        in_rate: f64,
        big: f64,
    ) -> Layout {
        let mut x = Xs(seed);
        let host: Vec<usize> = (0..p).map(|r| r / g).collect();
        let spans = (0..p.div_ceil(g))
            .map(|h| (h * g, ((h + 1) * g).min(p)))
            .collect();
        let block = (0..p)
            .map(|_| {
                let b = (x.next() * big).round();
                if gaps && x.next() < 0.2 { 0.0 } else { b }
            })
            .collect();
        let arrive = (0..p).map(|_| x.next() * spread).collect();
        Layout {
            host,
            spans,
            block,
            arrive,
            in_rate,
        }
    }

    /// Each rank's leave block by block, and by kind and host (through
    /// [`linear`] when `dispatch`, else [`by_host`] directly).
    fn both(t: &Layout, dispatch: bool) -> (Vec<f64>, Vec<f64>) {
        let (host, block) = (&t.host, &t.block);
        let same = |s: usize, d: usize| host[s] == host[d];
        let msg = |s: usize, d: usize| {
            if same(s, d) {
                2e-6 + block[s] * 2e-10
            } else {
                2e-5 + block[s] * 1e-9
            }
        };
        let o_send = |_: usize, _: usize| 1e-6;
        let o_recv = |s: usize, d: usize| if same(s, d) { 5e-7 } else { 1e-6 };
        let c = Costs {
            msg: &msg,
            o_send: &o_send,
            o_recv: &o_recv,
        };
        let egress = |_: usize, b: f64| b * 1e-9;
        let ingress = |_: usize, b: f64| b * 1e-9 / t.in_rate;
        let latency = |_: usize, _: usize| 1.8e-5;
        let mut l = Links {
            host,
            block,
            egress: &egress,
            ingress: &ingress,
            latency: &latency,
            spans: None,
        };
        let exact = linear(&t.arrive, &c, Some(&l));
        l.spans = Some(&t.spans);
        if dispatch {
            return (exact, linear(&t.arrive, &c, Some(&l)));
        }
        let mut fast = alone_by_kind(&t.arrive, &c, &t.spans);
        assert!(by_host(&t.arrive, &c, &l, &t.spans, &mut fast));
        (exact, fast)
    }

    #[test]
    fn alone_by_kind_is_the_plain_maximum_bit_for_bit() {
        for (p, g) in [(1, 1), (2, 1), (5, 5), (7, 2), (9, 3), (12, 4), (13, 1)] {
            for seed in 1..4 {
                let t = layout(p, g, seed, true, 1e-4, 1.0, 65536.0);
                let msg = |s: usize, d: usize| {
                    let k = if t.host[s] == t.host[d] { 1e-9 } else { 7e-9 };
                    1e-6 + k * t.block[s]
                };
                let c = Costs {
                    msg: &msg,
                    o_send: ZERO,
                    o_recv: ZERO,
                };
                let plain = linear(&t.arrive, &c, None);
                assert_eq!(
                    alone_by_kind(&t.arrive, &c, &t.spans),
                    plain,
                    "p {p}, g {g}"
                );
            }
        }
    }

    #[test]
    fn by_host_agrees_with_block_by_block() {
        // (ranks, a host's, in-link over out-link, arrivals' spread s)
        let cases = [
            (128, 16, 1.0, 0.0, 65536.0),
            (128, 16, 1.0, 2e-3, 65536.0),
            (256, 64, 1.0, 1e-3, 65536.0),
            (192, 8, 4.0, 1e-3, 65536.0),
            (192, 8, 0.5, 1e-3, 65536.0),
            (240, 48, 2.0, 5e-3, 65536.0),
            (128, 16, 1.0, 1e-3, 1024.0),
            (128, 16, 0.5, 1e-3, 512.0),
            (256, 32, 1.0, 5e-3, 2048.0),
            (64, 1, 1.0, 1e-3, 4096.0),
            (200, 48, 1.0, 1e-3, 16384.0),
        ];
        for (p, g, in_rate, spread, big) in cases {
            let mut worst: f64 = 0.0;
            for seed in 1..4 {
                let t = layout(p, g, seed * 7919, seed != 2, spread, in_rate, big);
                let (exact, fast) = both(&t, false);
                assert!(
                    exact.iter().zip(&t.arrive).any(|(e, a)| e - a > 1e-4),
                    "blocks that cost"
                );
                let first = t.arrive.iter().cloned().fold(f64::INFINITY, f64::min);
                for d in 0..p {
                    let err = (fast[d] - exact[d]).abs() / (exact[d] - first);
                    worst = worst.max(err);
                }
                let last = |v: &[f64]| v.iter().cloned().fold(0.0, f64::max);
                let whole = (last(&fast) - last(&exact)).abs() / (last(&exact) - first);
                eprintln!(
                    "p {p}, hosts of {g}, in-link {in_rate}x, spread {spread} s, blocks to {big} B, \
                     seed {seed}: worst rank {worst:.5}, last {whole:.5}"
                );
                assert!(whole <= 1e-3, "the last leave off by {whole}");
            }
            assert!(worst <= 5e-3, "a rank's leave off by {worst}");
        }
    }

    /// Past [`BY_HOST_BLOCKS`] blocks between hosts, [`linear`] prices by
    /// host; below, block by block, bit for bit.
    #[test]
    fn linear_goes_by_host_past_its_block_count() {
        // 384 ranks, hosts of 64: 384 · 320 blocks cross hosts.
        let t = layout(384, 64, 17, true, 1e-3, 1.0, 8192.0);
        let (exact, fast) = both(&t, true);
        let first = t.arrive.iter().cloned().fold(f64::INFINITY, f64::min);
        for (e, f) in exact.iter().zip(&fast) {
            assert!((e - f).abs() <= 5e-3 * (e - first), "{e} against {f}");
        }
        // 192 ranks: 192 · 128 blocks, block by block.
        let t = layout(192, 64, 17, true, 1e-3, 1.0, 8192.0);
        let (exact, fast) = both(&t, true);
        assert_eq!(exact, fast);
    }

    #[test]
    fn sort_by_time_sorts_with_ties_and_spikes() {
        let mut x = Xs(99);
        let mut scratch = (Vec::new(), Vec::new());
        for n in [0, 1, 63, 64, 65, 1000, 4099] {
            // Ties (times on a grid) and a far outlier that leaves most
            // buckets empty.
            let mut v: Vec<(f64, f64)> = (0..n)
                .map(|i| ((x.next() * 50.0).floor() * 1e-4, i as f64))
                .collect();
            if n > 2 {
                v[n / 2].0 = 1e3;
            }
            let mut want = v.clone();
            want.sort_by(|a, b| a.0.total_cmp(&b.0));
            sort_by_time(&mut v, &mut scratch);
            let times = |w: &[(f64, f64)]| w.iter().map(|e| e.0).collect::<Vec<_>>();
            assert_eq!(times(&v), times(&want), "n {n}");
            let mut ids: Vec<u64> = v.iter().map(|e| e.1 as u64).collect();
            ids.sort_unstable();
            assert_eq!(
                ids,
                (0..n as u64).collect::<Vec<_>>(),
                "n {n}: every entry once"
            );
        }
    }
}
