//! Message sizes as the command lines take them (OSU's `-m`,
//! `mheta bench --max-size`).

/// `mheta bench --max-size` (the microbench's too): a size by
/// [`mheta_base::parse_bytes`] from 64 KiB to 1 GiB.
pub fn parse_max_size(s: &str) -> Result<u64, String> {
    let b = mheta_base::parse_bytes(s)?;
    if !(64 << 10..=1 << 30).contains(&b) {
        return Err(format!("{s}: must be from 64K to 1G"));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_size_is_from_64k_to_1g() {
        assert_eq!(parse_max_size("64K"), Ok(64 << 10));
        assert_eq!(parse_max_size("1G"), Ok(1 << 30));
        assert!(parse_max_size("32K").is_err() && parse_max_size("2G").is_err());
        assert!(parse_max_size("64Q").is_err());
    }
}
