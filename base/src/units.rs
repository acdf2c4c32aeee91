//! Sizes as command lines write them.

/// A size in bytes as mheta's command lines take it (and OSU's `-m`):
/// bytes, or a whole number with `K`, `M` or `G`, any case (binary:
/// `128M` is 128 MiB; `KB`, `KiB` and the like too). The error names the
/// input.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(digits);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{s:?}: not a size (bytes, or a number with K, M or G)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use K, M or G)")),
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))
}

#[cfg(test)]
mod tests {
    use super::parse_bytes;

    #[test]
    fn sizes_parse_as_osu_m_takes_them() {
        assert_eq!(parse_bytes("4194304"), Ok(4 << 20));
        assert_eq!(parse_bytes("128M"), Ok(128 << 20));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("2kB"), Ok(2 << 10));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        for bad in ["", "K", "M", "12Q", "-4", "1.5M", "99999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} parsed");
        }
    }
}
