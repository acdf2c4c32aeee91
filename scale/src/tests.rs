use super::*;

// Known coefficients: T_comp = 0.01 + 0.002·work, γ = 0.0005, α(np) =
// 0.003 + 0.0015·log2(np).
const A0: f64 = 0.01;
const B0: f64 = 0.002;
const G: f64 = 0.0005;
const C: f64 = 0.003;
const D: f64 = 0.0015;

fn truth(np: u32, w: f64) -> f64 {
    let comm = if np == 1 {
        0.0
    } else {
        C + D * f64::from(np).log2() + G * w
    };
    A0 + B0 * w + comm
}

fn synthetic() -> (Vec<Sample>, Vec<Sample>) {
    let s = |np: u32, w: f64| Sample {
        np,
        work_mb: w,
        time_s: truth(np, w),
    };
    (
        vec![s(1, 4.0), s(1, 8.0)],
        vec![s(2, 4.0), s(2, 8.0), s(4, 4.0), s(4, 8.0)],
    )
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-6)
}

#[test]
fn fit_recovers_known_coefficients() {
    let (single, par) = synthetic();
    let f = GroupFit::fit(&single, &par).expect("fit");
    assert!(close(f.comp.intercept, A0), "{:?}", f.comp);
    assert!(close(f.comp.slope, B0), "{:?}", f.comp);
    assert!(close(f.gamma, G), "{}", f.gamma);
    assert!(close(f.c, C) && close(f.d, D), "c {} d {}", f.c, f.d);
    assert_eq!(f.per_np.len(), 2);
    assert!(close(f.per_np[1].alpha, C + 2.0 * D));
}

#[test]
fn prediction_extrapolates_in_np_and_work() {
    let (single, par) = synthetic();
    let f = GroupFit::fit(&single, &par).expect("fit");
    for (np, w) in [(8, 16.0), (64, 3.0), (6, 5.5)] {
        let p = f.predict(np, w).expect("predict");
        assert!(close(p.total_s, truth(np, w)), "np {np} w {w}: {p:?}");
        assert!(close(p.comp_s + p.comm_s, p.total_s));
    }
    assert_eq!(f.predict(1, 4.0).expect("np 1").comm_s, 0.0);
}

#[test]
fn least_squares_averages_noisy_repeats() {
    let l = least_squares("t", &[1.0, 1.0, 2.0, 2.0], &[1.0, 3.0, 4.0, 6.0]).expect("line");
    assert!(close(l.slope, 3.0) && close(l.intercept, -1.0), "{l:?}");
}

#[test]
fn bad_inputs_are_named() {
    let e = least_squares("T_comp", &[2.0, 2.0], &[1.0, 2.0]).expect_err("one x");
    assert!(e.to_string().contains("T_comp"), "{e}");
    let e = least_squares("x", &[1.0, f64::NAN], &[1.0, 2.0]).expect_err("nan");
    assert!(e.to_string().contains("not a finite"), "{e}");
    let (single, mut par) = synthetic();
    par.retain(|s| s.np == 2);
    let e = GroupFit::fit(&single, &par).expect_err("one np0");
    assert!(e.to_string().contains("eq. 3"), "{e}");
    let e = GroupFit::fit(&par, &par).expect_err("np 2 as single");
    assert!(e.to_string().contains("np 2"), "{e}");
    assert!(parse_parts("a=0").is_err());
    let e = parse_parts("a4").expect_err("no =");
    assert!(e.to_string().contains("a4"), "{e}");
    assert_eq!(
        parse_parts("a=4, b=2").expect("parts"),
        vec![("a".to_string(), 4), ("b".to_string(), 2)]
    );
}

fn file(link: Option<f64>) -> FitFile {
    let (single, par) = synthetic();
    let a = GroupFit::fit(&single, &par).expect("fit a");
    // Group b: half the CPU power, the same communication.
    let slow: Vec<Sample> = single
        .iter()
        .map(|s| Sample {
            time_s: 2.0 * s.time_s,
            ..*s
        })
        .collect();
    let par_b: Vec<Sample> = par
        .iter()
        .map(|s| Sample {
            time_s: s.time_s + A0 + B0 * s.work_mb,
            ..*s
        })
        .collect();
    let b = GroupFit::fit(&slow, &par_b).expect("fit b");
    FitFile {
        version: FIT_VERSION,
        app: "mg".into(),
        n: 1000,
        bytes_per_point: 1000.0,
        iters: 10,
        spec: "grid2.toml".into(),
        emulation: "quota".into(),
        groups: [("a".to_string(), a), ("b".to_string(), b)].into(),
        link_s: link,
        link_s_as_published: link,
        samples: vec![],
    }
}

#[test]
fn split_runs_take_the_slowest_part_plus_the_link() {
    let f = file(Some(0.004));
    // 800 rows over 8: 100 rows of 1000 points at 1000 B = 100 MB.
    assert!(close(f.work_of(800, 8), 100.0));
    let parts = parse_parts("a=4,b=4").expect("parts");
    let t = f.predict(&parts, 800).expect("split");
    let tb = f
        .group("b")
        .expect("b")
        .predict(4, 100.0)
        .expect("b")
        .total_s;
    assert!(close(t, tb + 0.004), "{t} vs {tb}");
    let e = file(None).predict(&parts, 800).expect_err("no link");
    assert!(matches!(e, ScaleError::NoLink));
    let e = f
        .predict(&parse_parts("c=2").expect("c"), 800)
        .expect_err("no c");
    assert!(e.to_string().contains("\"c\""), "{e}");
}

#[test]
fn link_fit_inverts_eq5() {
    let f = file(None);
    let parts = parse_parts("a=2,b=2").expect("parts");
    let tb = f.group("b").expect("b").predict(2, 8.0).expect("b").total_s;
    let run = Sample {
        np: 4,
        work_mb: 8.0,
        time_s: tb + 0.0123,
    };
    let l = fit_link(&f.groups, &[(parts, run)]).expect("link");
    assert!(close(l, 0.0123), "{l}");
    assert!(fit_link(&f.groups, &[]).is_err());
}

#[test]
fn scenarios_pick_fastest_and_largest() {
    let f = file(Some(0.004));
    let avail = parse_parts("a=4,b=4").expect("avail");
    let all = fastest(&f, 800, &avail).expect("fastest");
    assert_eq!(all.len(), 24, "4·4 splits + 4 + 4 single-group choices");
    assert!(all.windows(2).all(|w| w[0].predicted_s <= w[1].predicted_s));
    let direct = f.predict(&all[0].parts, 800).expect("best");
    assert!(close(all[0].predicted_s, direct));
    // Without a link term only single-group runs are candidates.
    assert_eq!(fastest(&file(None), 800, &avail).expect("no link").len(), 8);
    let mut big = file(Some(0.004));
    big.n = 2000;
    let fits = [f.clone(), big];
    let t_small = fastest(&fits[0], 1000, &avail).expect("s")[0].predicted_s;
    let t_big = fastest(&fits[1], 2000, &avail).expect("b")[0].predicted_s;
    assert!(t_big > t_small);
    let pick = |b: f64| {
        budget(&fits, &avail, 10, b)
            .expect("budget")
            .map(|c| c.rows)
    };
    assert_eq!(pick(10.0 * t_big * 1.01), Some(2000));
    assert_eq!(pick(10.0 * t_small * 1.01), Some(1000));
    assert_eq!(pick(10.0 * t_small * 0.5), None);
}

#[test]
fn fit_file_round_trips_and_refuses_other_versions() {
    let dir = std::env::temp_dir().join(format!("mheta-scale-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let p = dir.join("fit.json");
    let f = file(Some(0.004));
    f.save(&p).expect("save");
    let back = FitFile::load(&p).expect("load");
    assert_eq!((back.n, back.link_s, back.groups.len()), (f.n, f.link_s, 2));
    let (x, y) = (back.group("b").expect("b"), f.group("b").expect("b"));
    assert!(close(x.gamma, y.gamma) && close(x.c, y.c) && close(x.comp.slope, y.comp.slope));
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
    v["version"] = 99.into();
    std::fs::write(&p, v.to_string()).expect("write");
    let e = FitFile::load(&p).expect_err("v99").to_string();
    assert!(e.contains("fit.json") && e.contains("version 99"), "{e}");
    std::fs::write(&p, "{}").expect("write");
    let e = FitFile::load(&p).expect_err("no version").to_string();
    assert!(e.contains("no \"version\""), "{e}");
    let e = FitFile::load(&dir.join("absent.json"))
        .expect_err("absent")
        .to_string();
    assert!(e.contains("absent.json"), "{e}");
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

#[test]
fn joint_fit_is_the_least_squares_solution_on_noisy_samples() {
    // Samples at np0 2, 4 and 6 with errors of -0.3 to +0.4 ms: γ(np0)
    // per np0 differs from one np0 to the next, the joint (c, d, γ) must
    // leave residuals orthogonal to each regressor (the normal equations).
    let (single, _) = synthetic();
    let mut par = Vec::new();
    let mut noise = [4e-4, -2e-4, -2e-4, 4e-4, 4e-4, -3e-4].into_iter();
    for np in [2u32, 4, 6] {
        for w in [4.0, 8.0] {
            let noise = noise.next().expect("six errors");
            par.push(Sample {
                np,
                work_mb: w,
                time_s: truth(np, w) + noise,
            });
        }
    }
    let f = GroupFit::fit(&single, &par).expect("fit");
    let gammas: Vec<f64> = f.per_np.iter().map(|p| p.gamma).collect();
    assert!(
        gammas.windows(2).any(|w| (w[0] - w[1]).abs() > 1e-5),
        "the per-np0 γ should differ here: {gammas:?}"
    );
    let mut dots = [0.0f64; 3];
    for s in &par {
        let r = s.time_s
            - f.comp.at(s.work_mb)
            - eq2_comm(eq3_alpha(f.c, f.d, s.np), f.gamma, s.work_mb);
        let x = [1.0, f64::from(s.np).log2(), s.work_mb];
        for i in 0..3 {
            dots[i] += r * x[i];
        }
    }
    assert!(
        dots.iter().all(|d| d.abs() < 1e-12),
        "residuals not orthogonal: {dots:?}"
    );
    // And it is not the paper's γ of the largest np0 alone.
    assert!(
        (f.gamma - gammas[2]).abs() > 1e-6,
        "γ {} vs γ(6) {}",
        f.gamma,
        gammas[2]
    );
}

#[test]
fn joint_fit_needs_two_np0_and_two_sizes() {
    let one_size = [
        ([1.0, 1.0, 4.0], 1.0),
        ([1.0, 2.0, 4.0], 2.0),
        ([1.0, 3.0, 4.0], 3.0),
    ];
    let e = eqs2to4_joint(&one_size).expect_err("one work size");
    assert!(e.to_string().contains("two work sizes"), "{e}");
    let nan = [([1.0, 1.0, 4.0], f64::NAN)];
    assert!(
        eqs2to4_joint(&nan)
            .expect_err("nan")
            .to_string()
            .contains("not a finite")
    );
}

#[test]
fn the_published_fit_is_kept_beside_the_joint_one() {
    // Exact samples: both fits recover the truth. Old files without the
    // published fit still load and predict with the joint one alone.
    let f = file(Some(0.004));
    let p = f.as_published().expect("kept");
    let parts = parse_parts("a=8").expect("parts");
    let (x, y) = (
        f.predict(&parts, 800).expect("joint"),
        p.predict(&parts, 800).expect("paper"),
    );
    assert!(close(x, y), "{x} vs {y}");
    let mut v: serde_json::Value = serde_json::to_value(&f).expect("json");
    for g in v["groups"].as_object_mut().expect("groups").values_mut() {
        g.as_object_mut().expect("group").remove("as_published");
    }
    let old: FitFile = serde_json::from_value(v).expect("an older fit file");
    assert!(old.as_published().is_none());
    assert!(close(old.predict(&parts, 800).expect("joint"), x));
}
