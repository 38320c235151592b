//! Kubernetes quantities as exact numbers, so that `"0.5"` and `"500m"`, or `"1Gi"` and
//! `"1073741824"`, compare equal. The API server canonicalises quantities it stores; comparing
//! strings would see drift where there is none and write on every resync.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum QuantityError {
    #[error(
        "{0:?} is not a Kubernetes quantity (expected a number with an optional suffix such as m, k, M, G, Ki, Mi, Gi)"
    )]
    Malformed(String),
    #[error("{0:?} is too large")]
    TooLarge(String),
}

/// A quantity in billionths (nano-units): exact for every suffix from `n` to `Ei`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Nanos(pub i128);

const NANO: i128 = 1_000_000_000;

/// Parses a Kubernetes quantity (`<sign><digits>[.<digits>][suffix]`, suffix binary `Ki..Ei`,
/// decimal `n u m k M G T P E`, or an exponent `e<int>`/`E<int>`).
pub fn parse(text: &str) -> Result<Nanos, QuantityError> {
    let malformed = || QuantityError::Malformed(text.to_owned());
    let too_large = || QuantityError::TooLarge(text.to_owned());
    let s = text.trim();
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let number_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(number_end);
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return Err(malformed());
    }
    if frac_part.contains('.') {
        return Err(malformed());
    }
    // (multiplier, power of ten): value = number * multiplier * 10^power
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
        exp if exp.starts_with(['e', 'E']) => {
            let e: i32 = exp[1..].parse().map_err(|_| malformed())?;
            (1, e)
        }
        _ => return Err(malformed()),
    };
    // digits as one integer, with the decimal point moved into the power of ten
    let digits = format!("{int_part}{frac_part}");
    let mantissa: i128 = digits.parse().map_err(|_| too_large())?;
    let power = power + 9 - frac_part.len() as i32; // + 9: the result is in nanos
    let scaled = if power >= 0 {
        let factor = 10i128.checked_pow(power as u32).ok_or_else(too_large)?;
        mantissa.checked_mul(factor).ok_or_else(too_large)?
    } else {
        // Kubernetes rounds sub-nano fractions up; so do we.
        let divisor = 10i128.checked_pow((-power) as u32).ok_or_else(too_large)?;
        (mantissa + divisor - 1) / divisor
    };
    let value = scaled.checked_mul(multiplier).ok_or_else(too_large)?;
    Ok(Nanos(if negative { -value } else { value }))
}

impl Nanos {
    pub fn is_positive(self) -> bool {
        self.0 > 0
    }

    /// Whole units, rounded up (as `Quantity.Value()` does).
    pub fn ceil_units(self) -> i128 {
        (self.0 + NANO - 1).div_euclid(NANO)
    }
}

/// True when both strings are quantities of the same value, or are the same string.
pub fn same(a: &str, b: &str) -> bool {
    a == b || matches!((parse(a), parse(b)), (Ok(x), Ok(y)) if x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_suffixed_values() {
        assert_eq!(parse("8").unwrap(), Nanos(8 * NANO));
        assert_eq!(parse("500m").unwrap(), Nanos(NANO / 2));
        assert_eq!(parse("0.5").unwrap(), Nanos(NANO / 2));
        assert_eq!(parse("16Gi").unwrap(), Nanos(16 * (1 << 30) * NANO));
        assert_eq!(parse("1k").unwrap(), Nanos(1000 * NANO));
        assert_eq!(parse("1e3").unwrap(), parse("1k").unwrap());
        assert_eq!(parse("1.5Gi").unwrap(), parse("1536Mi").unwrap());
        assert_eq!(parse("-2").unwrap(), Nanos(-2 * NANO));
        assert_eq!(parse("1Ei").unwrap(), Nanos((1i128 << 60) * NANO));
    }

    #[test]
    fn canonical_forms_compare_equal() {
        assert!(same("0.5", "500m"));
        assert!(same("1Gi", "1073741824"));
        assert!(same("16Gi", "16Gi"));
        assert!(!same("8", "12"));
        assert!(!same("1G", "1Gi"));
        // not quantities: only equal strings are the same
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
    }

    #[test]
    fn malformed_input_is_refused_with_the_input_named() {
        for bad in ["", "abc", "1.2.3", "12x", "Gi", "1e", "--1", "."] {
            let err = parse(bad).unwrap_err();
            assert!(
                err.to_string().contains(&format!("{bad:?}")),
                "{bad}: {err}"
            );
        }
        assert!(matches!(
            parse("99999999999999999999999999Ei"),
            Err(QuantityError::TooLarge(_))
        ));
    }

    #[test]
    fn positivity_and_rounding() {
        assert!(parse("1m").unwrap().is_positive());
        assert!(!parse("0").unwrap().is_positive());
        assert!(!parse("-1").unwrap().is_positive());
        assert_eq!(parse("1.2").unwrap().ceil_units(), 2);
        assert_eq!(parse("1n").unwrap(), Nanos(1));
        assert_eq!(parse("0.1n").unwrap(), Nanos(1));
    }
}
