//! Go duration strings (`30s`, `10m`, `1h30m`, `1.5h`), the format Terraform users know from
//! every other provider's `timeouts` block (Go's `time.ParseDuration`).

use std::time::Duration;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DurationError {
    #[error("{0:?} is not a duration: use a number with a unit, such as 30s, 10m or 1h30m")]
    Malformed(String),
    #[error("{0:?} is negative; a timeout must be positive")]
    Negative(String),
}

pub fn parse(text: &str) -> Result<Duration, DurationError> {
    let malformed = || DurationError::Malformed(text.to_owned());
    let s = text.trim();
    let s = match s.strip_prefix('-') {
        Some("0") => return Ok(Duration::ZERO),
        Some(_) => return Err(DurationError::Negative(text.to_owned())),
        None => s.strip_prefix('+').unwrap_or(s),
    };
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err(malformed());
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(malformed)?;
        let (num, tail) = rest.split_at(num_end);
        if num.is_empty() || num == "." {
            return Err(malformed());
        }
        let n: f64 = num.parse().map_err(|_| malformed())?;
        let unit_end = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_end);
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(malformed()),
        };
        total += n * seconds;
        rest = next;
    }
    Duration::try_from_secs_f64(total).map_err(|_| malformed())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_go_accepts() {
        assert_eq!(parse("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn refuses_what_go_refuses() {
        for bad in ["", "10", "m", "10 m", "1d", "ten minutes", "1h30", "."] {
            assert!(
                matches!(parse(bad), Err(DurationError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(parse("-5m"), Err(DurationError::Negative(_))));
    }
}
