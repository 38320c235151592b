//! How the benchmarks print a figure measured over several rounds: its median and its range.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median_range(vec![4.0, 1.0, 3.0, 2.0]), (2.5, 1.0, 4.0));
        assert_eq!(cell(vec![1.0, 3.0, 2.0], " s", 1), "2.0 s [1.0–3.0]");
    }
}
