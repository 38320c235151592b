//! Per-client request rates: the limiter ([`Keyed`]), whom a request is counted against
//! ([`Client`]: a logged-in user by their verified email, anyone else by their address) and the
//! limits of one server ([`RequestLimits`]). Over the rate: 429 with Retry-After and a body
//! naming the limit. The middleware that counts every request is [`crate::middleware::limit`].

use std::{
    hash::Hash,
    net::{IpAddr, Ipv6Addr},
    num::NonZeroU32,
    sync::{Mutex, PoisonError},
    time::{Duration, Instant},
};

use governor::{
    RateLimiter,
    clock::{Clock, DefaultClock},
    middleware::NoOpMiddleware,
    state::keyed::DefaultKeyedStateStore,
};

use crate::{config::Limits, error::ApiError, rate::Rate};

/// How often idle keys (clients whose allowance is full again) are dropped, so a flood from
/// many addresses does not leave one entry per address behind for good.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// A rate limiter with one allowance per key.
pub struct Keyed<K: Hash + Eq + Clone, C: Clock + Clone = DefaultClock> {
    limiter: RateLimiter<K, DefaultKeyedStateStore<K>, C, NoOpMiddleware<C::Instant>>,
    clock: C,
    last_sweep: Mutex<Instant>,
}

impl<K: Hash + Eq + Clone> Keyed<K> {
    /// `None` when the rate is unlimited.
    pub fn new(rate: Rate, burst: Option<NonZeroU32>) -> Option<Keyed<K>> {
        Keyed::with_clock(rate, burst, DefaultClock::default())
    }
}

impl<K: Hash + Eq + Clone, C: Clock + Clone> Keyed<K, C> {
    pub fn with_clock(rate: Rate, burst: Option<NonZeroU32>, clock: C) -> Option<Keyed<K, C>> {
        let quota = rate.quota(burst)?;
        Some(Keyed {
            limiter: RateLimiter::dashmap_with_clock(quota, clock.clone()),
            clock,
            last_sweep: Mutex::new(Instant::now()),
        })
    }

    /// Counts one request of `key`: Ok, or how long until the next one would be allowed.
    pub fn check(&self, key: &K) -> Result<(), Duration> {
        self.sweep();
        self.limiter
            .check_key(key)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    /// Keys being tracked (the state this limiter holds).
    pub fn len(&self) -> usize {
        self.limiter.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Drops the keys whose allowance is full again, at most once per [`SWEEP_EVERY`].
    fn sweep(&self) {
        let mut last = self
            .last_sweep
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if last.elapsed() >= SWEEP_EVERY {
            *last = Instant::now();
            drop(last);
            self.forget_idle();
        }
    }

    /// Drops every key whose allowance is full again: it is indistinguishable from a new one.
    pub fn forget_idle(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

/// Whom a request is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Client {
    User(String),
    Address(IpAddr),
}

/// The address a client is counted by: an IPv6 client by its /64, the smallest network one
/// subscriber is usually given (counting single addresses would give them 2^64 allowances);
/// an IPv4-mapped IPv6 address as the IPv4 address it is.
pub fn client_address(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// The request limits of one server.
pub struct RequestLimits {
    users: Option<Keyed<String>>,
    addresses: Option<Keyed<IpAddr>>,
    user_rate: (Rate, u32),
    address_rate: (Rate, u32),
}

impl RequestLimits {
    pub fn new(limits: &Limits) -> RequestLimits {
        RequestLimits {
            users: Keyed::new(limits.rate_limit, NonZeroU32::new(limits.rate_limit_burst)),
            addresses: Keyed::new(
                limits.anonymous_rate_limit,
                NonZeroU32::new(limits.anonymous_rate_limit_burst),
            ),
            user_rate: (limits.rate_limit, limits.rate_limit_burst),
            address_rate: (
                limits.anonymous_rate_limit,
                limits.anonymous_rate_limit_burst,
            ),
        }
    }

    /// Counts one request of `client`; the refusal names the limit and what to do.
    pub fn check(&self, client: &Client) -> Result<(), ApiError> {
        let outcome = match client {
            Client::User(email) => self.users.as_ref().map(|l| l.check(email)),
            Client::Address(ip) => self.addresses.as_ref().map(|l| l.check(ip)),
        };
        let Some(Err(wait)) = outcome else {
            return Ok(());
        };
        let retry_after = retry_after_secs(wait);
        let message = match client {
            Client::User(_) => format!(
                "too many requests: the limit is {} (bursts of {}) per user; retry in {retry_after} \
                 s. The server's operators set it (--rate-limit, --rate-limit-burst)",
                self.user_rate.0.describe(),
                self.user_rate.1
            ),
            Client::Address(_) => format!(
                "too many requests from your address without a login: the limit is {} (bursts of \
                 {}) per address; retry in {retry_after} s, or log in (each user has an allowance \
                 of their own). The server's operators set it (--anonymous-rate-limit, \
                 --anonymous-rate-limit-burst)",
                self.address_rate.0.describe(),
                self.address_rate.1
            ),
        };
        Err(ApiError::TooMany {
            message,
            retry_after: Some(retry_after),
        })
    }
}

/// Whole seconds to wait, rounded up, at least one (Retry-After has no fractions).
pub fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use governor::clock::FakeRelativeClock;

    use super::*;
    use crate::rate::Per;

    #[test]
    fn each_key_has_its_own_allowance_and_is_told_when_it_comes_back() {
        let clock = FakeRelativeClock::default();
        let limiter: Keyed<String, _> = Keyed::with_clock(
            Rate::new(10, Per::Second),
            NonZeroU32::new(3),
            clock.clone(),
        )
        .unwrap();
        let (alice, bob) = ("alice".to_owned(), "bob".to_owned());
        for _ in 0..3 {
            assert_eq!(limiter.check(&alice), Ok(()));
        }
        // The burst is spent: the next is refused, with the time until one is replenished.
        assert_eq!(limiter.check(&alice), Err(Duration::from_millis(100)));
        // Bob is not affected by alice.
        assert_eq!(limiter.check(&bob), Ok(()));
        clock.advance(Duration::from_millis(100));
        assert_eq!(limiter.check(&alice), Ok(()));
        assert!(limiter.check(&alice).is_err());
        // Once idle long enough to be full again, a key is forgotten.
        assert_eq!(limiter.len(), 2);
        clock.advance(Duration::from_secs(1));
        limiter.forget_idle();
        assert!(limiter.is_empty());
        assert!(Keyed::<String>::new(Rate::Unlimited, None).is_none());
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:1:2:3".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_address(a), client_address(b));
        assert_ne!(client_address(a), client_address(other));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(
            client_address(mapped),
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7))
        );
        let v4 = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 8));
        assert_eq!(client_address(v4), v4);
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(20)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(6)), 6);
        assert_eq!(retry_after_secs(Duration::from_millis(6001)), 7);
    }

    #[test]
    fn refusals_name_the_limit_the_wait_and_who_sets_it() {
        let limits = Limits {
            rate_limit: Rate::new(2, Per::Second),
            rate_limit_burst: 2,
            anonymous_rate_limit: Rate::new(1, Per::Minute),
            anonymous_rate_limit_burst: 1,
            ..Limits::default()
        };
        let l = RequestLimits::new(&limits);
        let user = Client::User("alice@example.com".into());
        let addr = Client::Address(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(l.check(&user).is_ok() && l.check(&user).is_ok());
        let ApiError::TooMany {
            message,
            retry_after,
        } = l.check(&user).unwrap_err()
        else {
            panic!("not a 429")
        };
        assert_eq!(retry_after, Some(1));
        assert!(
            message.contains("2 per second (bursts of 2) per user"),
            "{message}"
        );
        assert!(message.contains("--rate-limit"), "{message}");
        assert!(l.check(&addr).is_ok());
        let refusal = l.check(&addr).unwrap_err();
        assert_eq!(refusal.status().as_u16(), 429);
        let text = refusal.to_string();
        assert!(
            text.contains("1 per minute (bursts of 1) per address"),
            "{text}"
        );
        assert!(text.contains("retry in 60 s"), "{text}");
        assert!(text.contains("log in"), "{text}");
    }
}
