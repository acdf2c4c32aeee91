use super::*;
use std::os::fd::AsRawFd;

/// A file of `n` bytes of a known pattern, opened for reading and
/// writing, and its path.
fn file(tag: &str, n: usize) -> (std::fs::File, std::path::PathBuf, Vec<u8>) {
    let path = std::env::temp_dir().join(format!("mheta-pace-{tag}-{}", std::process::id()));
    let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &data).expect("write the file");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .expect("open it");
    (f, path, data)
}

#[test]
fn a_spread_read_and_write_move_every_byte_in_their_paced_time() {
    // 1 MiB and a tail: 10.5 ms at 10 ns a byte, in pieces of 0.5 ms.
    let n = (1 << 20) + 123;
    let (f, path, data) = file("rw", n);
    let fd = f.as_raw_fd();
    register(fd, 1e-8);
    let want = n as f64 * 1e-8;
    let mut buf = vec![0u8; n];
    let t = Instant::now();
    // SAFETY: buf holds n bytes; fd is open.
    let r = unsafe { pread(fd, buf.as_mut_ptr().cast(), n, 0) };
    let read_s = t.elapsed().as_secs_f64();
    assert_eq!(r, n as ssize_t);
    assert!(buf == data, "the spread read gave other bytes");
    let back: Vec<u8> = data.iter().map(|b| b ^ 0x5a).collect();
    let t = Instant::now();
    // SAFETY: back holds n bytes; fd is open for writing.
    let w = unsafe { pwrite(fd, back.as_ptr().cast(), n, 0) };
    let write_s = t.elapsed().as_secs_f64();
    unregister(fd);
    assert_eq!(w, n as ssize_t);
    assert!(
        std::fs::read(&path).expect("read back") == back,
        "the spread write landed otherwise"
    );
    std::fs::remove_file(&path).ok();
    // At least the paced time, and not a piece's worth of sleeps more
    // (each piece starts at its own time, so late ones do not add up).
    for (what, s) in [("read", read_s), ("write", write_s)] {
        assert!(
            s >= want && s < want + 3e-3,
            "{what} of {n} bytes took {s} s, paced {want} s"
        );
    }
}

#[test]
fn a_short_read_at_the_end_of_the_file_is_paced_for_its_bytes() {
    let n = 300 * 1024;
    let (f, path, data) = file("eof", n);
    let fd = f.as_raw_fd();
    register(fd, 1e-8);
    // Ask for twice the file from its middle: half of it comes back.
    let mut buf = vec![0u8; n];
    let t = Instant::now();
    // SAFETY: buf holds n bytes; fd is open.
    let r = unsafe { pread(fd, buf.as_mut_ptr().cast(), n, (n / 2) as off_t) };
    let s = t.elapsed().as_secs_f64();
    unregister(fd);
    std::fs::remove_file(&path).ok();
    assert_eq!(r, (n - n / 2) as ssize_t);
    assert!(buf[..n - n / 2] == data[n / 2..]);
    let want = (n - n / 2) as f64 * 1e-8;
    assert!(s >= want && s < 2.0 * want, "took {s} s, paced {want} s");
}
