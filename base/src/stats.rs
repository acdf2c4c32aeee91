//! Order statistics over samples.

/// The median of `v` (the mean of the middle two for an even count),
/// sorting `v` in place; `None` when `v` is empty. NaNs sort last
/// (`f64::total_cmp`); drop them first where they may occur.
pub fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    })
}

/// The median of the finite values of `v`; `None` when there are none.
pub fn finite_median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    median(&mut v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn odd_even_and_empty() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&mut []), None);
        assert_eq!(
            finite_median(vec![f64::NAN, 5.0, f64::INFINITY, 1.0]),
            Some(3.0)
        );
        assert_eq!(finite_median(vec![f64::NAN]), None);
    }
}
