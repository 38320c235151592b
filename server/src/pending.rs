//! Logins begun but not finished: the portal's `/login` is open to anyone, so what it keeps must
//! be bounded in size and in age, and every operation on it must stay cheap when it is full.
//!
//! Structure: a `HashMap` from the login's `state` to its entry, plus a `BTreeMap` from an
//! insertion sequence number to the `state`. Every entry lives for the same time, so insertion
//! order is also expiry order: the first key of the `BTreeMap` is at once the oldest entry (the
//! one to evict when full) and the next to expire. Insert, take, evict and expire are O(log n);
//! nothing ever walks the whole map. Why not a crate: no LRU crate (`lru`, `hashlink`) is in
//! Cargo.lock, and `indexmap`, which is, removes from the front in O(n) only; a `VecDeque` of
//! keys would be amortised O(1) but keeps stale keys of finished logins until they reach the
//! front, so it would need its own bound. Two std maps need neither.

use std::{
    collections::{BTreeMap, HashMap},
    num::NonZeroUsize,
    time::{Duration, Instant},
};

struct Entry<V> {
    seq: u64,
    created: Instant,
    value: V,
}

/// What an insert pushed out, for the metrics.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Dropped {
    /// Entries older than the time to live.
    pub expired: usize,
    /// Entries still valid, evicted (oldest first) because the map was full.
    pub evicted: usize,
}

/// At most `capacity` entries, none older than `ttl`. Time is passed in, so the rules are pure.
pub struct Pending<V> {
    capacity: NonZeroUsize,
    ttl: Duration,
    entries: HashMap<String, Entry<V>>,
    /// Insertion sequence → key; the first is the oldest.
    order: BTreeMap<u64, String>,
    next_seq: u64,
}

impl<V> Pending<V> {
    pub fn new(capacity: NonZeroUsize, ttl: Duration) -> Pending<V> {
        Pending {
            capacity,
            ttl,
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next_seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    fn expired(&self, created: Instant, now: Instant) -> bool {
        now.saturating_duration_since(created) >= self.ttl
    }

    /// Drops every expired entry: only ever the front of `order`, so O(log n) per entry dropped.
    pub fn expire(&mut self, now: Instant) -> usize {
        let mut dropped = 0;
        while let Some((_, key)) = self.order.first_key_value() {
            match self.entries.get(key) {
                Some(entry) if !self.expired(entry.created, now) => break,
                _ => {
                    self.pop_oldest();
                    dropped += 1;
                }
            }
        }
        dropped
    }

    fn pop_oldest(&mut self) {
        if let Some((_, key)) = self.order.pop_first() {
            self.entries.remove(&key);
        }
    }

    /// Adds an entry, first dropping the expired ones and then, when the map is still full, the
    /// oldest: a flood of new logins pushes out the oldest pending ones, never the newest.
    /// `now` never goes back between calls (the caller reads the clock under its lock), which
    /// is what makes insertion order the expiry order.
    pub fn insert(&mut self, key: String, value: V, now: Instant) -> Dropped {
        let expired = self.expire(now);
        // A key is random (256 bits), so a repeat is a bug or an attack: the new entry wins.
        if let Some(old) = self.entries.remove(&key) {
            self.order.remove(&old.seq);
        }
        let mut evicted = 0;
        while self.entries.len() >= self.capacity.get() {
            self.pop_oldest();
            evicted += 1;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, key.clone());
        self.entries.insert(
            key,
            Entry {
                seq,
                created: now,
                value,
            },
        );
        Dropped { expired, evicted }
    }

    /// Removes and returns the entry for `key` when it exists and has not expired. A login can
    /// be completed once only.
    pub fn take(&mut self, key: &str, now: Instant) -> Option<V> {
        let entry = self.entries.remove(key)?;
        self.order.remove(&entry.seq);
        (!self.expired(entry.created, now)).then_some(entry.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(capacity: usize, ttl_secs: u64) -> Pending<u32> {
        Pending::new(
            NonZeroUsize::new(capacity).unwrap(),
            Duration::from_secs(ttl_secs),
        )
    }

    /// The two maps agree: every key in one is in the other.
    fn consistent(p: &Pending<u32>) {
        assert_eq!(p.entries.len(), p.order.len());
        for (seq, key) in &p.order {
            assert_eq!(p.entries[key].seq, *seq);
        }
    }

    #[test]
    fn a_full_map_evicts_the_oldest_and_stays_at_its_bound() {
        let now = Instant::now();
        let mut p = pending(3, 300);
        for i in 0..3 {
            assert_eq!(
                p.insert(format!("k{i}"), i, now),
                Dropped::default(),
                "room for {i}"
            );
        }
        // A flood: every insert past the bound evicts exactly one, the oldest.
        for i in 3..1000 {
            let dropped = p.insert(format!("k{i}"), i, now);
            assert_eq!(dropped.evicted, 1, "insert {i}");
            assert_eq!(p.len(), 3);
        }
        consistent(&p);
        assert_eq!(p.take("k0", now), None, "the oldest went first");
        assert_eq!(p.take("k996", now), None, "and all but the newest three");
        assert_eq!(p.take("k997", now), Some(997));
        assert_eq!(p.take("k999", now), Some(999));
        assert_eq!(p.take("k998", now), Some(998));
        assert!(p.is_empty());
        consistent(&p);
    }

    #[test]
    fn a_finished_login_frees_its_place_and_cannot_be_finished_twice() {
        let now = Instant::now();
        let mut p = pending(2, 300);
        p.insert("a".into(), 1, now);
        p.insert("b".into(), 2, now);
        assert_eq!(p.take("a", now), Some(1));
        assert_eq!(p.take("a", now), None, "once only");
        // The place "a" held is free: "b" survives the next insert.
        assert_eq!(p.insert("c".into(), 3, now).evicted, 0);
        assert_eq!(p.take("b", now), Some(2));
        consistent(&p);
    }

    #[test]
    fn entries_expire_after_the_ttl() {
        let start = Instant::now();
        let later = start + Duration::from_secs(300);
        let mut p = pending(10, 300);
        p.insert("old".into(), 1, start);
        p.insert("newer".into(), 2, start + Duration::from_secs(200));
        // Exactly at the ttl an entry is expired: a sweep drops it, and only it.
        assert_eq!(p.expire(later), 1);
        assert_eq!(p.len(), 1);
        assert_eq!(p.take("newer", later), Some(2));
        // Take says "expired" even before a sweep.
        let mut p = pending(10, 300);
        p.insert("old".into(), 1, start);
        assert_eq!(p.take("old", later), None);
        assert!(p.is_empty());
        // An insert sweeps the expired ones before it counts the room.
        let mut p = pending(2, 300);
        p.insert("a".into(), 1, start);
        p.insert("b".into(), 2, start);
        let dropped = p.insert("c".into(), 3, later);
        assert_eq!(
            dropped,
            Dropped {
                expired: 2,
                evicted: 0
            }
        );
        assert_eq!(p.len(), 1);
        consistent(&p);
    }

    #[test]
    fn a_repeated_key_replaces_the_entry() {
        let now = Instant::now();
        let mut p = pending(2, 300);
        p.insert("a".into(), 1, now);
        p.insert("a".into(), 2, now);
        assert_eq!(p.len(), 1);
        consistent(&p);
        assert_eq!(p.take("a", now), Some(2));
    }
}
