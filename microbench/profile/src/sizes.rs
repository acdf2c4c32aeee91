//! Message sizes as the command lines take them (OSU's `-m`,
//! `mheta bench --max-size`).

/// A message size as OSU's `-m` and `mheta bench --max-size` take it:
/// bytes, or a number with `K`, `M` or `G` (binary: `128M` is 128 MiB;
/// `KiB`, `MiB`, `GiB` too).
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

/// `mheta bench --max-size` (the microbench's too): a size by
/// [`parse_bytes`] from 64 KiB to 1 GiB.
pub fn parse_max_size(s: &str) -> Result<u64, String> {
    let b = parse_bytes(s)?;
    if !(64 << 10..=1 << 30).contains(&b) {
        return Err(format!("{s}: must be from 64K to 1G"));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_osu_m_takes_them() {
        assert_eq!(parse_bytes("4194304"), Ok(4 << 20));
        assert_eq!(parse_bytes("128M"), Ok(128 << 20));
        assert_eq!(parse_bytes("64KiB"), Ok(64 << 10));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        for bad in ["", "M", "12Q", "-4", "1.5M", "99999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad:?} parsed");
        }
        assert_eq!(parse_max_size("64K"), Ok(64 << 10));
        assert!(parse_max_size("32K").is_err() && parse_max_size("2G").is_err());
    }
}
