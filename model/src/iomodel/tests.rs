use super::*;

const R: Line = Line {
    overhead_s: 1e-4,
    per_byte_s: 1e-8,
};

#[test]
fn eq1_sums_overheads_and_bytes_of_every_piece() {
    // Three ICLAs of 4096 bytes, read and written, no halo:
    // 3 * [(1e-4 + 4096e-8) + (1e-4 + 4096e-8)].
    let t = t_psi(&[4096, 4096, 4096], R, R, false);
    let want = 3.0 * 2.0 * (1e-4 + 4096e-8);
    assert!((t - want).abs() < 1e-15, "{t} vs {want}");
    // Read-only: half of it.
    let ro = t_psi(&[4096, 4096, 4096], R, Line::default(), false);
    assert!((ro - want / 2.0).abs() < 1e-15);
}

#[test]
fn eq2_masks_the_read_when_the_overlap_is_longer() {
    // N_L = 4 read-only pieces of 8192 bytes: T_r = 8192e-8 = 81.92 us.
    let pieces = [8192u64; 4];
    let t_r = 8192e-8;
    // T_A = compute / N_L = 1 ms >= T_r: T_s = 0; only the first read
    // and the four issue overheads remain.
    let masked = t_psi_prefetch(&pieces, R, Line::default(), false, 4e-3);
    assert!((masked - (4.0 * 1e-4 + t_r)).abs() < 1e-15, "{masked}");
    // T_A = 20 us < T_r: each later read costs T_r - T_A.
    let t_a = 20e-6;
    let part = t_psi_prefetch(&pieces, R, Line::default(), false, 4.0 * t_a);
    let want = 4.0 * 1e-4 + t_r + 3.0 * (t_r - t_a);
    assert!((part - want).abs() < 1e-15, "{part} vs {want}");
    // No overlap at all reduces eq. 2 to eq. 1.
    let none = t_psi_prefetch(&pieces, R, Line::default(), false, 0.0);
    let eq1 = t_psi(&pieces, R, Line::default(), false);
    assert!((none - eq1).abs() < 1e-15);
    // A written array's write-back shares the disk with the prefetch:
    // it hides no read, so without computation eq. 2 is still eq. 1.
    let w = Line {
        overhead_s: 5e-5,
        per_byte_s: 2e-8,
    };
    let none = t_psi_prefetch(&pieces, R, w, false, 0.0);
    let eq1 = t_psi(&pieces, R, w, false);
    assert!((none - eq1).abs() < 1e-15, "{none} vs {eq1}");
}

#[test]
fn eq2_lockstep_arrays_share_one_window_per_piece() {
    // u and f, 3 read-only pieces of 8192 bytes each (T_r = 81.92 us),
    // swept in lockstep; T_A = compute / 3 = 100 us.
    let pieces = [8192u64; 3];
    let t_r = 8192e-8;
    let t_a = 100e-6;
    let arr = Swept {
        pieces: &pieces,
        r: R,
        w: Line::default(),
        halo: false,
    };
    let t = t_psi_prefetch_lockstep([arr, arr].into_iter(), 3.0 * t_a);
    // Six issue overheads; u(0) and f(0) read at once, and u(1) too
    // (f(0) queues behind it); window 0 hides f(1) (81.92 <= 100 us);
    // window 1 holds u(2) + f(2) = 163.84 us and hides 100 of them.
    let want = 6.0 * 1e-4 + 3.0 * t_r + (2.0 * t_r - t_a);
    assert!((t - want).abs() < 1e-15, "{t} vs {want}");
    // Each array on its own window would hide both piece-2 reads.
    let apart = 2.0 * t_psi_prefetch(&pieces, R, Line::default(), false, 3.0 * t_a);
    assert!((apart - (6.0 * 1e-4 + 2.0 * t_r)).abs() < 1e-15, "{apart}");
    assert!(t > apart);
    // One array in lockstep is eq. 2 itself.
    let one = t_psi_prefetch_lockstep(std::iter::once(arr), 3.0 * t_a);
    let eq2 = t_psi_prefetch(&pieces, R, Line::default(), false, 3.0 * t_a);
    assert_eq!(one, eq2);
}

/// Two ranks; rank 0 read only `f` while recorded (stage 0, two call
/// sizes, 2e-8 s/B after 1e-4 s a call), rank 1 did no I/O. `u` was on
/// no rank's disk: the declaration says stages 0 and 2 read and write
/// it.
fn two_arrays(stage_access: bool) -> IoModel {
    use mheta_profile::{DiskCost, NodeCost};
    use mheta_trace::StageAccess;
    let mut app = AppDecl::new("t", 100, vec![50, 50]);
    app.arrays = vec![
        ArrayDecl::rows("u", 8192, false, true),
        ArrayDecl::rows("f", 8192, true, true),
    ];
    app.memory = Some(MemoryDecl {
        budget: vec![Some(1 << 20), None],
        fixed_bytes: 0,
        fixed_per_row: 0,
        prefetch: false,
    });
    let acc = |file: &str, write: bool| StageAccess {
        file: file.into(),
        read: true,
        write,
    };
    if stage_access {
        app.stage_access = Some(vec![
            vec![acc("u", true), acc("f", false)],
            vec![],
            vec![acc("u", true)],
        ]);
    }
    let files = vec![vec!["/s/f.00000".to_string()], vec![]];
    let call = |bytes: u64| IoObs {
        stage: Some(0),
        file: 0,
        write: false,
        bytes,
        secs: 1e-4 + 2e-8 * bytes as f64,
    };
    let obs = vec![vec![call(1 << 16), call(4096), call(1 << 16)], vec![]];
    let mut prof = ClusterProfile::new(2, vec![String::new(); 2], "test");
    for rank in 0..2 {
        prof.nodes.push(NodeCost {
            // The real disk: ten times faster than rank 0's recorded
            // reads, writes half as fast as reads.
            disk: Some(DiskCost {
                dir: String::new(),
                method: String::new(),
                read_overhead_s: 1e-5,
                read_per_byte_s: 2e-9,
                write_overhead_s: 2e-5,
                write_per_byte_s: 4e-9,
                read: vec![],
                write: vec![],
            }),
            ..NodeCost::bare(rank, "")
        });
    }
    IoModel::new(&app, &files, &obs, &prof).unwrap()
}

#[test]
fn an_array_never_on_disk_is_swept_where_declared_and_priced_from_the_node() {
    let m = two_arrays(true);
    let (u, f) = (0, 1);
    let rw = Touch {
        read: true,
        write: true,
    };
    assert_eq!(m.touches[0][u], rw);
    assert_eq!(m.touches[1][u], Touch::default());
    assert_eq!(m.touches[2][u], rw);
    assert_eq!(
        m.touches[0][f],
        Touch {
            read: true,
            write: false
        }
    );
    // Rank 0 reads u at the fit of its reads of f ...
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1e-12);
    assert!(close(m.read[0][u].per_byte_s, 2e-8), "{:?}", m.read[0][u]);
    assert!(close(m.read[0][u].overhead_s, 1e-4), "{:?}", m.read[0][u]);
    // ... and writes it at the profile's line scaled by how much slower
    // than the profile its reads ran (10x).
    assert!(close(m.write[0][u].per_byte_s, 4e-8), "{:?}", m.write[0][u]);
    assert!(close(m.write[0][u].overhead_s, 2e-4), "{:?}", m.write[0][u]);
    // Rank 1 recorded nothing: the profile as it is.
    assert!(close(m.read[1][u].per_byte_s, 2e-9));
    assert!(close(m.write[1][u].per_byte_s, 4e-9));
    // Without the declaration: read and written once, in stage 0.
    let m = two_arrays(false);
    assert_eq!(m.touches[0][u], rw);
    assert!(m.touches.iter().skip(1).all(|t| t[u] == Touch::default()));
}

#[test]
fn file_stems_name_the_array() {
    assert_eq!(stem("/scratch/run/u.00003"), "u");
    assert_eq!(stem("a.00000"), "a");
    assert_eq!(stem("/x/y/data.bin"), "data.bin");
}
