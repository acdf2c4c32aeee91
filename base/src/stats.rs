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

/// The `q` quantile of sorted `v`, interpolated between order statistics
/// (`v` must not be empty).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let x = q * (v.len() - 1) as f64;
    let (i, f) = (x.floor() as usize, x - x.floor());
    match v.get(i + 1) {
        Some(&next) if f > 0.0 => v[i] + f * (next - v[i]),
        _ => v[i],
    }
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
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 5.0], 0.5), 2.5);
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 5.0], 1.0), 5.0);
        assert_eq!(quantile(&[7.0], 0.025), 7.0);
    }
}

/// An `f64` ordered by `f64::total_cmp`, so that it can key a heap or a
/// sort (times and costs; NaNs order after +inf).
#[derive(Clone, Copy, Debug)]
pub struct Total(pub f64);

impl PartialEq for Total {
    fn eq(&self, other: &Total) -> bool {
        self.0.total_cmp(&other.0).is_eq()
    }
}

impl Eq for Total {}

impl PartialOrd for Total {
    fn partial_cmp(&self, other: &Total) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Total {
    fn cmp(&self, other: &Total) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
