//! How the benchmarks sum up what they measured: a figure over several rounds as its median and
//! its range, a distribution as its percentiles.

/// The median, the minimum and the maximum of `values` (not empty).
pub fn median_range(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

/// `median<unit> [min–max]`, each with `precision` decimals.
pub fn cell(values: Vec<f64>, unit: &str, precision: usize) -> String {
    let (m, lo, hi) = median_range(values);
    format!("{m:.precision$}{unit} [{lo:.precision$}–{hi:.precision$}]")
}

/// The `p`th percentile (nearest rank) of `values`: seconds, milliseconds or durations alike;
/// the default (zero) for none.
pub fn percentile<T: Copy + PartialOrd + Default>(values: &[T], p: f64) -> T {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted.get(rank - 1).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn nearest_rank() {
        let d = |s| Duration::from_secs(s);
        let v = [d(5), d(1), d(3), d(2), d(4)];
        assert_eq!(percentile(&v, 50.0), d(3));
        assert_eq!(percentile(&v, 99.0), d(5));
        assert_eq!(percentile::<Duration>(&[], 50.0), Duration::ZERO);
        assert_eq!(percentile(&[2.5, 0.5, 1.5], 50.0), 1.5);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median_range(vec![4.0, 1.0, 3.0, 2.0]), (2.5, 1.0, 4.0));
        assert_eq!(cell(vec![1.0, 3.0, 2.0], " s", 1), "2.0 s [1.0–3.0]");
    }
}
