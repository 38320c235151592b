//! Kubernetes quantities as exact values, so that validation matches the API server and
//! `"1"` vs `"1000m"` (or `"1Gi"` vs `"1073741824"`) is recognised as the same quota rather
//! than shown as drift after a refresh.

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QuantityError {
    #[error(
        "{0:?} is not a Kubernetes quantity: use a number with an optional suffix such as 500m, 8, 16Gi or 1T"
    )]
    Malformed(String),
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// A quantity in nano-units: exact for every suffix from `n` to `Ei`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Quantity(i128);

impl Quantity {
    pub fn is_positive(self) -> bool {
        self.0 > 0
    }
}

pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
    let malformed = || QuantityError::Malformed(text.to_owned());
    let too_large = || QuantityError::TooLarge(text.to_owned());
    let (negative, s) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(end);
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if (int.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(malformed());
    }
    let (multiplier, power): (i128, i32) = match suffix {
        "" => (1, 0),
        "n" => (1, -9),
        "u" => (1, -6),
        "m" => (1, -3),
        "k" => (1, 3),
        "M" => (1, 6),
        "G" => (1, 9),
        "T" => (1, 12),
        "P" => (1, 15),
        "E" => (1, 18),
        "Ki" => (1 << 10, 0),
        "Mi" => (1 << 20, 0),
        "Gi" => (1 << 30, 0),
        "Ti" => (1 << 40, 0),
        "Pi" => (1 << 50, 0),
        "Ei" => (1 << 60, 0),
        e if e.len() > 1 && e.starts_with(['e', 'E']) => {
            (1, e[1..].parse().map_err(|_| malformed())?)
        }
        _ => return Err(malformed()),
    };
    // digits * 10^(power + 9 - frac.len()) * multiplier, in nano-units.
    let digits: i128 = format!("{int}{frac}").parse().map_err(|_| too_large())?;
    let frac_len = i32::try_from(frac.len()).map_err(|_| too_large())?;
    let exp = power + 9 - frac_len;
    let mut nanos = digits.checked_mul(multiplier).ok_or_else(too_large)?;
    if exp >= 0 {
        let scale = 10i128
            .checked_pow(exp.unsigned_abs())
            .ok_or_else(too_large)?;
        nanos = nanos.checked_mul(scale).ok_or_else(too_large)?;
    } else {
        // Sub-nano precision: the API server rounds up; so do we.
        let scale = 10i128
            .checked_pow(exp.unsigned_abs())
            .ok_or_else(too_large)?;
        nanos = (nanos + scale - 1) / scale;
    }
    Ok(Quantity(if negative { -nanos } else { nanos }))
}

/// True when both are quantities of the same value, however written.
pub fn same(a: &str, b: &str) -> bool {
    a == b || matches!((parse(a), parse(b)), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_values_in_different_notations_are_the_same() {
        assert!(same("1", "1000m"));
        assert!(same("0.5", "500m"));
        assert!(same("1Gi", "1073741824"));
        assert!(same("1k", "1e3"));
        assert!(!same("1G", "1Gi"));
        assert!(!same("8", "eight"));
    }

    #[test]
    fn positivity_and_errors() {
        assert!(parse("500m").unwrap().is_positive());
        assert!(!parse("0").unwrap().is_positive());
        assert!(!parse("-1Gi").unwrap().is_positive());
        for bad in ["", "Gi", "1.2.3", "1 Gi", "1gi", "1e", "ten"] {
            assert_eq!(
                parse(bad),
                Err(QuantityError::Malformed(bad.into())),
                "{bad:?}"
            );
        }
        assert!(matches!(parse("1e40"), Err(QuantityError::TooLarge(_))));
    }
}
