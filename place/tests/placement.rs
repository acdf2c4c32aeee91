//! The paper's figure 1 / table 2, the greedy against the general max
//! flow, the simulator against closed forms, and bad input.

use mheta_place::rates::{Tree, tree};
use mheta_place::{Host, Inputs, PlaceError, choose, flow, place, select, sim};
use std::collections::HashMap;

/// Figure 1 of Shao et al., reconstructed so that all four rows of its
/// table 2 follow: A and B on Net1 (150 tasks/s), C and D on Net2 (100),
/// Net3 (50) between the two; W_SlaveCPU A 80, B 60, C 50, D 10;
/// W_MasterCPU A 200, B 150, C 60, D 90.
fn figure1() -> Tree {
    let mut between = HashMap::new();
    for (a, b) in [(0, 2), (0, 3), (1, 2), (1, 3)] {
        between.insert((a, b), vec![2]);
        between.insert((b, a), vec![2]);
    }
    Tree {
        names: ["A", "B", "C", "D"].map(String::from).to_vec(),
        w_slave: vec![80.0, 60.0, 50.0, 10.0],
        w_master: vec![200.0, 150.0, 60.0, 90.0],
        res_names: ["Net1", "Net2", "Net3"].map(String::from).to_vec(),
        caps: vec![150.0, 100.0, 50.0],
        own: vec![vec![0], vec![0], vec![1], vec![1]],
        between,
        cycle: None,
    }
}

#[test]
fn table2_every_row_and_master_b() {
    let t = figure1();
    // Rows of table 2: W_MasterCPU, SlaveRate(m, A..D), AppRate.
    let rows = [
        (200.0, [0.0, 60.0, 50.0, 0.0], 110.0),
        (150.0, [80.0, 0.0, 50.0, 0.0], 130.0),
        (60.0, [50.0, 0.0, 0.0, 10.0], 60.0),
        (90.0, [40.0, 0.0, 50.0, 0.0], 90.0),
    ];
    for (m, (wm, rates, app)) in rows.iter().enumerate() {
        assert_eq!(t.w_master[m], *wm);
        let sel = select::select(&t, m);
        assert!(
            (sel.rate - app).abs() < 1e-9,
            "master {}: AppRate {} ≠ {app}",
            t.names[m],
            sel.rate
        );
        for (s, want) in rates.iter().enumerate().filter(|(s, _)| *s != m) {
            let got = sel.slave_rates[&s];
            assert!(
                (got - want).abs() < 1e-9,
                "SlaveRate({}, {}) = {got} ≠ {want}",
                t.names[m],
                t.names[s]
            );
        }
        // The general max flow agrees on AppRate.
        let others: Vec<usize> = (0..4).filter(|&s| s != m).collect();
        assert!((flow::graph_flow(&t, m, &others).0 - app).abs() < 1e-9);
    }
    assert_eq!(t.names[select::best_master(&t)], "B");
    // With B the master, D adds nothing: the chosen workers are A and C.
    assert_eq!(select::select(&t, 1).workers, vec![0, 2]);
}

/// A small deterministic generator (xorshift) for random trees.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random_inputs(r: &mut Rng, n: usize) -> Inputs {
    let names: Vec<String> = (0..n).map(|i| format!("h{i}")).collect();
    let hosts = (0..n)
        .map(|i| Host {
            name: names[i].clone(),
            t_slave_s: 0.001 + 0.05 * r.next(),
            t_master_s: 0.0001 + 0.01 * r.next(),
            avail_cpu: 0.2 + 0.8 * r.next(),
            link_bps: (r.next() < 0.8).then(|| 1e7 + 1e9 * r.next()),
            latency_s: 0.0,
            to: if r.next() < 0.3 {
                [(names[(i + 1) % n].clone(), 5e6 + 5e8 * r.next())].into()
            } else {
                Default::default()
            },
            burst_bytes: 0.0,
        })
        .collect();
    Inputs {
        hosts,
        request_bytes: 8.0,
        result_bytes: 1000.0 + 6e4 * r.next(),
        tasks: 200,
        window: 1,
        startup_s: 0.0,
        unshaped_bps: 1e10,
    }
}

#[test]
fn greedy_reaches_the_general_max_flow() {
    let mut r = Rng(0x9e3779b97f4a7c15);
    for case in 0..200 {
        let inputs = random_inputs(&mut r, 2 + case % 9);
        let t = tree(&inputs);
        for m in 0..inputs.hosts.len() {
            let sel = select::select(&t, m);
            let others: Vec<usize> = (0..inputs.hosts.len()).filter(|&s| s != m).collect();
            let (g, _) = flow::graph_flow(&t, m, &others);
            assert!(
                (sel.rate - g).abs() <= 1e-9 * g.max(1.0),
                "case {case} master {m}: greedy {} ≠ max flow {g}",
                sel.rate
            );
            // The chosen workers alone reach the same rate.
            let (w, _) = flow::graph_flow(&t, m, &sel.workers);
            assert!((w - g).abs() <= 1e-9 * g.max(1.0));
        }
    }
}

fn two(t_slave: f64, t_master: f64, link: Option<f64>) -> Inputs {
    let h = |n: &str| Host {
        name: n.into(),
        t_slave_s: t_slave,
        t_master_s: t_master,
        avail_cpu: 1.0,
        link_bps: link,
        latency_s: 0.0,
        to: Default::default(),
        burst_bytes: 0.0,
    };
    Inputs {
        hosts: vec![h("m"), h("w")],
        request_bytes: 0.0,
        result_bytes: 0.0,
        tasks: 100,
        window: 1,
        startup_s: 0.5,
        unshaped_bps: 1e10,
    }
}

#[test]
fn simulator_matches_closed_forms() {
    // One worker, no bytes: the master sends the next task before it
    // absorbs a result, so the slower of compute and absorb sets the pace.
    let run = sim::simulate(&two(0.01, 0.002, None), 0, &[1]).unwrap();
    assert!(
        (run.elapsed_s - (0.5 + 100.0 * 0.01 + 0.002)).abs() < 1e-9,
        "{}",
        run.elapsed_s
    );
    let run = sim::simulate(&two(0.002, 0.01, None), 0, &[1]).unwrap();
    assert!(
        (run.elapsed_s - (0.5 + 0.002 + 100.0 * 0.01)).abs() < 1e-9,
        "{}",
        run.elapsed_s
    );
    // Two workers, 100 tasks, each takes every other one: 50 × T_SlaveCPU,
    // then the master absorbs the last two results one after the other.
    let mut w2 = two(0.01, 0.001, None);
    let mut third = w2.hosts[1].clone();
    third.name = "v".into();
    w2.hosts.push(third);
    let run = sim::simulate(&w2, 0, &[1, 2]).unwrap();
    assert!(
        (run.elapsed_s - (0.5 + 50.0 * 0.01 + 0.002)).abs() < 1e-6,
        "{}",
        run.elapsed_s
    );
    assert_eq!(run.tasks, vec![50, 50]);
    // Transfer-bound: 100 kB results on an 8 Mbit/s master link.
    let mut net = two(1e-6, 1e-6, Some(8e6));
    net.result_bytes = 1e5;
    net.startup_s = 0.0;
    let run = sim::simulate(&net, 0, &[1]).unwrap();
    let per = 1e5 / (1e6 * mheta_place::rates::PAYLOAD_FRACTION);
    assert!(
        (run.elapsed_s / (100.0 * per) - 1.0).abs() < 0.01,
        "{} vs {}",
        run.elapsed_s,
        100.0 * per
    );
    assert_eq!(run.tasks, vec![100]);
    // Above the eager limit a result moves only when the master receives
    // it and the worker waits in its send: each task is compute then
    // transfer; the absorb overlaps the next compute.
    let mut rv = two(0.01, 0.002, Some(8e6));
    rv.result_bytes = 1e5;
    rv.startup_s = 0.0;
    rv.window = 2;
    assert!(rv.result_bytes > sim::EAGER_LIMIT_BYTES);
    let run = sim::simulate(&rv, 0, &[1]).unwrap();
    // The model charges the master the transfer too (weighted eq. 3).
    let t = tree(&rv);
    assert!((t.master_time(1, 0) - (0.002 + per)).abs() < 1e-12);
    assert!((select::select(&t, 0).rate - 1.0 / (0.002 + per)).abs() < 1e-9);
    let want = 100.0 * (0.01 + per) + 0.002;
    assert!(
        (run.elapsed_s / want - 1.0).abs() < 1e-6,
        "{} vs {want}",
        run.elapsed_s
    );
    // Emulated links whose shapers let 16 KiB through at once after they
    // idled (the worker's 20 KiB, the master's 16 KiB: the smaller
    // counts): each transfer is that much shorter.
    rv.hosts[0].burst_bytes = 16384.0;
    rv.hosts[1].burst_bytes = 20480.0;
    let run = sim::simulate(&rv, 0, &[1]).unwrap();
    let per_burst = per - 16384.0 / (1e6 * mheta_place::rates::PAYLOAD_FRACTION);
    let want = 100.0 * (0.01 + per_burst) + 0.002;
    assert!(
        (run.elapsed_s / want - 1.0).abs() < 1e-6,
        "{} vs {want}",
        run.elapsed_s
    );
}

#[test]
fn shared_master_link_makes_workers_add_nothing() {
    // Three fast workers behind a master link that carries 10 tasks/s;
    // one worker alone already fills it.
    let mut i = random_inputs(&mut Rng(7), 4);
    for h in &mut i.hosts {
        h.t_slave_s = 0.01;
        h.t_master_s = 1e-4;
        h.avail_cpu = 1.0;
        h.link_bps = Some(1e9);
        h.to.clear();
    }
    i.result_bytes = 6e4;
    i.window = 2;
    i.hosts[0].link_bps = Some(10.0 * 8.0 * 6e4 / mheta_place::rates::PAYLOAD_FRACTION);
    let rows = place(&i).unwrap();
    let m0 = rows.iter().find(|r| r.master == "h0").unwrap();
    assert!((m0.rate - 10.0).abs() < 1e-6);
    // A worker holding two tasks computes one while the other's result
    // crosses the link, so one worker fills it; the others add nothing.
    assert_eq!(m0.workers.len(), 1, "{m0:?}");
    assert!(
        (m0.simulated_s / m0.simulated_all_s - 1.0).abs() < 0.05,
        "{} vs {}",
        m0.simulated_s,
        m0.simulated_all_s
    );
    let p = choose(&i).unwrap();
    assert_ne!(p.master, "h0");
    assert!(p.rate > 10.0);
}

#[test]
fn bad_input_names_the_culprit() {
    let mut i = two(0.01, 0.001, None);
    i.hosts[1].t_slave_s = 0.0;
    assert_eq!(
        choose(&i).unwrap_err(),
        PlaceError::Host {
            host: "w".into(),
            detail: "task times must be > 0 seconds".into()
        }
    );
    let mut i = two(0.01, 0.001, None);
    i.hosts[0].to.insert("nowhere".into(), 1e6);
    assert!(matches!(choose(&i), Err(PlaceError::Host { host, .. }) if host == "m"));
    let mut i = two(0.01, 0.001, None);
    i.hosts.pop();
    assert!(matches!(place(&i), Err(PlaceError::Input(_))));
    assert!(sim::simulate(&two(0.01, 0.001, None), 0, &[0]).is_err());
}
