//! Compiling a logged replay ([`compile`]): the ops each step of the
//! log stands for, with routes, pair costs and message slots fixed, the
//! ones that change nothing left out, in level order ([`schedule`]).

use super::{Compiled, KINDS, Msg, NONE, Op, Take};
use crate::dist::Dist;
use crate::model::replay::LogEvent;
use crate::model::{Model, SendMode, Shape, Step, collective};
use mheta_trace::MsgScaling;

/// The ops of the replay of `m` under `d` that logged `events`; None
/// where the log does not fit the programs.
pub(super) fn compile(m: &Model, d: &Dist, events: &[LogEvent]) -> Option<Compiled> {
    let p = m.ranks();
    let levels = m.levels as usize;
    let fixed = m.app.msg_scaling == MsgScaling::Constant;
    let active = |i: usize| d.0[i] > 0 || m.app.topology == mheta_trace::Topology::Fixed;
    let mut c = Compiled {
        ops: Vec::with_capacity(events.len()),
        msgs: Vec::new(),
        takes: Vec::new(),
        waits: Vec::new(),
        blocks: Vec::new(),
        sends: 0,
        send_waits: Vec::new(),
        holds: d.0.iter().map(|&r| r > 0).collect(),
        wake: m.programs.iter().map(|pr| (pr.wake_s, pr.spin_s)).collect(),
        sleeps: m.programs.iter().any(|pr| pr.wake_s > 0.0),
        laps: m.laps(),
    };
    let mut pc = vec![0usize; p];
    // Each rank's sends so far (their numbers), and where its lap began.
    let mut own: Vec<Vec<u32>> = vec![Vec::new(); p];
    let mut base = vec![None::<usize>; p];
    let mut took: Vec<u32> = Vec::new();
    // Per rank, whether its last op cleared its stage's compute (every
    // op but a computation, a stage's end and a lap's end does).
    let mut cleared = vec![true; p];
    // Where each rank's last op is in `c.ops` (usize::MAX: none yet).
    let mut last = vec![usize::MAX; p];
    let quiet = m
        .programs
        .iter()
        .all(|pr| !(pr.wake_s > 0.0 && pr.spin_s < 0.0));
    for ev in events {
        let i = match *ev {
            LogEvent::Took(g) => {
                took.push(g);
                continue;
            }
            LogEvent::Step(i) | LogEvent::Arrive(i) => i as usize,
        };
        let steps = &m.programs[i].steps;
        let len = steps.len();
        if len == 0 {
            return None;
        }
        if pc[i] == len && base[i].is_none() {
            base[i] = Some(own[i].len());
            last[i] = c.ops.len();
            c.ops.push(Op::LapEnd { i: i as u32 });
        }
        let step = &steps[pc[i] % len];
        let iu = i as u32;
        if let LogEvent::Arrive(_) = ev {
            if !matches!(step, Step::Reduce { .. }) {
                return None;
            }
            last[i] = c.ops.len();
            c.ops.push(Op::Arrive { i: iu });
            cleared[i] = true;
            continue;
        }
        let op = match step {
            Step::Compute { s, scaled, level } => Op::Compute {
                i: iu,
                s: *s,
                scaled: *scaled,
                slot: (i * levels + (*level as usize).min(levels - 1)) as u32,
            },
            Step::StageEnd(k) => Op::StageEnd { i: iu, k: *k },
            Step::Send(to, mode) => {
                let g = c.sends as u32;
                c.sends += 1;
                own[i].push(g);
                let j = if active(i) {
                    m.route(d, i, to.rank)
                } else {
                    None
                };
                let msg = match j {
                    None => NONE,
                    Some(j) => {
                        let pr = m.net.pair(i, j);
                        let b = m.msg_bytes(d, i, to.bytes);
                        let waits = match mode {
                            SendMode::Buffered => false,
                            SendMode::Synchronous => true,
                            SendMode::Standard => b > pr.eager() as f64,
                        };
                        let both_ways = m.both_ways(i, pc[i] % len);
                        let (o, wire) = pr.send_costs(b, None, false);
                        let fixed_wire = fixed && !m.net.has_exchanges();
                        c.msgs.push(Msg {
                            j: j as u32,
                            o: if fixed { o * m.cpu_factor(i) } else { f64::NAN },
                            wire: if fixed_wire {
                                wire * m.net_factor(pr.k)
                            } else {
                                f64::NAN
                            },
                            bytes: to.bytes,
                            waits,
                            standard: *mode == SendMode::Standard,
                            both_ways,
                        });
                        (c.msgs.len() - 1) as u32
                    }
                };
                c.send_waits.push(msg != NONE && c.msgs[msg as usize].waits);
                Op::Send {
                    i: iu,
                    g,
                    msg,
                    pre: 0.0,
                }
            }
            Step::Recv(from) | Step::Probe(from) => {
                let pay = matches!(step, Step::Recv(_));
                recv_op(m, d, i, std::slice::from_ref(from), pay, &mut took, &mut c)?
            }
            Step::WaitRecvs(froms) => recv_op(m, d, i, froms, true, &mut took, &mut c)?,
            Step::WaitSends(ns) => {
                let b = base[i].unwrap_or(0);
                let from = c.waits.len() as u32;
                for &n in ns {
                    c.waits
                        .push(own[i].get(b + n as usize).copied().unwrap_or(NONE));
                }
                Op::WaitSends {
                    i: iu,
                    from,
                    to: c.waits.len() as u32,
                }
            }
            Step::MatchedRecv => Op::MatchedRecv {
                i: iu,
                o: if active(i) { m.net.mean[1] } else { 0.0 },
            },
            Step::Reduce { bytes, shape, .. } => {
                // Every rank is at this collective: its block is the
                // bytes of its own step here.
                let blocks = if matches!(shape, Shape::Linear | Shape::Gather) {
                    let recorded = (0..p).map(|j| {
                        let steps = &m.programs[j].steps;
                        match steps.get(pc[j] % steps.len().max(1)) {
                            Some(Step::Reduce { bytes, .. }) => *bytes,
                            _ => 0.0,
                        }
                    });
                    let b = collective::Blocks::new(m, recorded.collect());
                    if c.blocks.last() != Some(&b) {
                        c.blocks.push(b);
                    }
                    (c.blocks.len() - 1) as u32
                } else {
                    NONE
                };
                for pj in pc.iter_mut() {
                    *pj += 1;
                }
                pc[i] -= 1;
                Op::Reduce {
                    i: iu,
                    bytes: *bytes,
                    shape: *shape,
                    blocks,
                }
            }
            Step::Peek(_) => return None,
        };
        if !took.is_empty() {
            return None;
        }
        pc[i] += 1;
        // Ops that change nothing are left out: a stage's end without
        // I/O, and a wait for sends none of which waits for its receiver
        // (each completed when posted, so before the wait) where the
        // rank's stage compute is already cleared.
        let idle = match op {
            Op::StageEnd { .. } => m.io.is_none(),
            Op::WaitSends { from, to, .. } => {
                quiet
                    && (m.io.is_none() || cleared[i])
                    && c.waits[from as usize..to as usize]
                        .iter()
                        .all(|&g| g == NONE || !c.send_waits[g as usize])
            }
            _ => false,
        };
        if idle {
            continue;
        }
        cleared[i] = !matches!(
            op,
            Op::Compute { .. } | Op::StageEnd { .. } | Op::LapEnd { .. }
        );
        // A send right after a computation of fixed length on its rank
        // takes it in, in its place (one op fewer; the same additions in
        // the same order).
        if let Op::Send { i, g, msg, .. } = op
            && let Some(&at) = last.get(iu as usize)
            && let Some(Op::Compute {
                s, scaled: false, ..
            }) = c.ops.get(at)
        {
            let pre = m.cpu_factor(i as usize) * *s;
            c.ops[at] = Op::Send { i, g, msg, pre };
            continue;
        }
        last[i] = c.ops.len();
        c.ops.push(op);
    }
    schedule(&mut c, p);
    // Every receive took a message that a send of this log made.
    c.takes
        .iter()
        .all(|t| t.g == NONE || (t.g as usize) < c.sends)
        .then_some(c)
}

/// Puts the ops of `c` in an order that runs ops of one kind together,
/// so that the replay's dispatch is predicted: each op gets a level, one
/// more than the highest of the ops it reads from (its rank's previous
/// op; the send of each message it takes; the receive that completed
/// each send it waits for; a collective's completion reads every rank's
/// last op, and every rank's next op reads it), and the ops are sorted
/// by level, then kind. Ops of one level read nothing from each other,
/// and each op still comes after every op whose writes it reads, so the
/// replay computes the same figures, operation for operation.
fn schedule(c: &mut Compiled, p: usize) {
    let n = c.ops.len();
    let mut level = vec![0u32; n];
    let mut last = vec![0u32; p];
    let mut sent = vec![0u32; c.sends];
    let mut took = vec![0u32; c.sends];
    for (x, op) in c.ops.iter().enumerate() {
        let i = op.rank();
        let after = match *op {
            Op::Recv { from, to, .. } => (c.takes[from as usize..to as usize].iter())
                .filter(|t| t.g != NONE)
                .map(|t| sent[t.g as usize])
                .fold(last[i], u32::max),
            Op::WaitSends { from, to, .. } => (c.waits[from as usize..to as usize].iter())
                .filter(|&&g| g != NONE)
                .map(|&g| took[g as usize])
                .fold(last[i], u32::max),
            Op::Reduce { .. } => last.iter().copied().fold(0, u32::max),
            _ => last[i],
        };
        let l = after + 1;
        level[x] = l;
        match *op {
            Op::Send { g, .. } => sent[g as usize] = l,
            Op::Recv { from, to, .. } => {
                for t in &c.takes[from as usize..to as usize] {
                    if t.g != NONE {
                        took[t.g as usize] = l;
                    }
                }
            }
            Op::Reduce { .. } => last.fill(l),
            _ => {}
        }
        last[i] = l;
    }
    // A stable counting sort by (level, kind): levels are dense and
    // kinds few, so this is linear in the operations (a comparison sort
    // of the 280 000 operations at P = 16384 cost about as many
    // instructions as the interpreted replay it compiles).
    let Some(&any) = c.ops.first() else {
        return;
    };
    let key = |x: usize| level[x] as usize * KINDS + c.ops[x].kind() as usize;
    let keys = level.iter().max().map_or(0, |&l| (l as usize + 1) * KINDS);
    let mut start = vec![0u32; keys + 1];
    for x in 0..n {
        start[key(x) + 1] += 1;
    }
    for k in 0..keys {
        start[k + 1] += start[k];
    }
    let mut sorted = vec![any; n];
    for x in 0..n {
        let k = key(x);
        sorted[start[k] as usize] = c.ops[x];
        start[k] += 1;
    }
    c.ops = sorted;
}

/// The receives of `froms` by rank `i`, with the messages the log says
/// they took (drained from `took`).
fn recv_op(
    m: &Model,
    d: &Dist,
    i: usize,
    froms: &[crate::model::Peer],
    pay: bool,
    took: &mut Vec<u32>,
    c: &mut Compiled,
) -> Option<Op> {
    if took.len() != froms.len() {
        return None;
    }
    let active = d.0[i] > 0 || m.app.topology == mheta_trace::Topology::Fixed;
    let from = c.takes.len() as u32;
    for (f, &g) in froms.iter().zip(took.iter()) {
        let src = if active { m.route(d, i, f.rank) } else { None };
        let Some(j) = src else {
            if g != NONE {
                return None;
            }
            continue;
        };
        c.takes.push(Take {
            g,
            o: m.net.pair(j, i).o_recv() * m.cpu_factor(i),
            latency: m.net.pair(i, j).latency(),
        });
    }
    took.clear();
    Some(Op::Recv {
        i: i as u32,
        pay,
        from,
        to: c.takes.len() as u32,
    })
}
