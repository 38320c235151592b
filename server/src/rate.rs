//! A rate as a platform team writes it on the command line: `50/s`, `10/min`, `100/h`, or
//! `unlimited`. One type for every rate flag, so they read alike and parse alike.

use std::{fmt, num::NonZeroU32, str::FromStr, time::Duration};

use governor::Quota;

/// Above this a rate is no limit at all, and the period per request would round to nothing.
const MAX_COUNT: u32 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Per {
    Second,
    Minute,
    Hour,
}

impl Per {
    pub fn duration(self) -> Duration {
        match self {
            Per::Second => Duration::from_secs(1),
            Per::Minute => Duration::from_secs(60),
            Per::Hour => Duration::from_secs(3600),
        }
    }

    fn short(self) -> &'static str {
        match self {
            Per::Second => "s",
            Per::Minute => "min",
            Per::Hour => "h",
        }
    }

    fn word(self) -> &'static str {
        match self {
            Per::Second => "second",
            Per::Minute => "minute",
            Per::Hour => "hour",
        }
    }
}

/// `count` requests per `per`, or no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    Unlimited,
    Every { count: NonZeroU32, per: Per },
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{0:?} is not a rate: write COUNT/UNIT with COUNT from 1 to {MAX_COUNT} and UNIT s, min or h \
     (e.g. 50/s, 10/min), or unlimited"
)]
pub struct RateError(String);

impl Rate {
    /// `count` per `per` (for constants: a zero count is no limit).
    pub const fn new(count: u32, per: Per) -> Rate {
        match NonZeroU32::new(count) {
            Some(count) => Rate::Every { count, per },
            None => Rate::Unlimited,
        }
    }

    /// The governor quota: one request replenished every `per / count`, and at most `burst`
    /// (`count` when not given) at once. `None` when unlimited.
    pub fn quota(self, burst: Option<NonZeroU32>) -> Option<Quota> {
        match self {
            Rate::Unlimited => None,
            Rate::Every { count, per } => Quota::with_period(per.duration() / count.get())
                .map(|q| q.allow_burst(burst.unwrap_or(count))),
        }
    }

    /// For messages: "50 per second", "unlimited".
    pub fn describe(self) -> String {
        match self {
            Rate::Unlimited => "unlimited".into(),
            Rate::Every { count, per } => format!("{count} per {}", per.word()),
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rate::Unlimited => f.write_str("unlimited"),
            Rate::Every { count, per } => write!(f, "{count}/{}", per.short()),
        }
    }
}

impl FromStr for Rate {
    type Err = RateError;

    fn from_str(text: &str) -> Result<Rate, RateError> {
        let bad = || RateError(text.to_owned());
        let s = text.trim();
        if s.eq_ignore_ascii_case("unlimited") {
            return Ok(Rate::Unlimited);
        }
        let (count, unit) = s.split_once('/').ok_or_else(bad)?;
        let count: u32 = count.trim().parse().map_err(|_| bad())?;
        let count = NonZeroU32::new(count)
            .filter(|c| c.get() <= MAX_COUNT)
            .ok_or_else(bad)?;
        let per = match unit.trim() {
            "s" | "sec" | "second" => Per::Second,
            "m" | "min" | "minute" => Per::Minute,
            "h" | "hour" => Per::Hour,
            _ => return Err(bad()),
        };
        Ok(Rate::Every { count, per })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_display_and_round_trip() {
        for (text, shown) in [
            ("50/s", "50/s"),
            ("10/min", "10/min"),
            (" 10 / minute ", "10/min"),
            ("100/h", "100/h"),
            ("5/m", "5/min"),
            ("UNLIMITED", "unlimited"),
        ] {
            let rate: Rate = text.parse().unwrap();
            assert_eq!(rate.to_string(), shown, "{text}");
            assert_eq!(shown.parse::<Rate>(), Ok(rate), "{shown} round-trips");
        }
        for bad in [
            "",
            "50",
            "0/s",
            "-1/s",
            "50/day",
            "x/s",
            "2000000/s",
            "50/s/s",
        ] {
            assert!(bad.parse::<Rate>().is_err(), "{bad:?} is refused");
        }
        let e = "50/day".parse::<Rate>().unwrap_err().to_string();
        assert!(
            e.contains("e.g. 50/s, 10/min"),
            "the error shows the form: {e}"
        );
    }

    #[test]
    fn the_quota_spreads_the_count_over_the_period_and_bursts_to_the_count_or_more() {
        let ten_a_minute: Rate = "10/min".parse().unwrap();
        let q = ten_a_minute.quota(None).unwrap();
        assert_eq!(q.replenish_interval(), Duration::from_secs(6));
        assert_eq!(q.burst_size().get(), 10);
        let q = Rate::new(50, Per::Second)
            .quota(NonZeroU32::new(500))
            .unwrap();
        assert_eq!(q.replenish_interval(), Duration::from_millis(20));
        assert_eq!(q.burst_size().get(), 500);
        assert!(Rate::Unlimited.quota(None).is_none());
        assert_eq!(Rate::new(0, Per::Second), Rate::Unlimited);
        assert_eq!(ten_a_minute.describe(), "10 per minute");
    }
}
