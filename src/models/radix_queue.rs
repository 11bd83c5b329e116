//! A radix heap: a priority queue of `u64` keys that pops the smallest, for a caller whose keys
//! never go below the last key popped (a monotone queue). The long-word merge pops pairs by
//! `rank << 32 | position`, and in a vocabulary whose merges come after the merges of their parts
//! every pair a merge makes ranks above it, so its keys only climb.
//!
//! Bucket `i` (1 to 64) holds the keys whose highest bit differing from the last key popped is bit
//! `i - 1`; bucket 0 holds keys equal to it. A pop takes bucket 0 if it has a key, else empties the
//! first non-empty bucket into the lower ones around that bucket's smallest key, which becomes the
//! last key. A key moves down at most 64 times, and every move is an append, where a binary heap
//! of millions of entries pays a cache miss at each of its lower levels per push and pop. GPT-2,
//! one `encode` of 16 MB of one repeated character: 5.3 s through a binary heap (5.0x the 4 MB
//! call), 2.5-2.7 s through this queue (4.3-4.5x); of 16 MB of random letters, 11.7 s and 3.3-3.5
//! s.
//!
//! ```
//! use tinyllm::models::radix_queue::RadixQueue;
//! let mut q = RadixQueue::default();
//! for key in [7, 3, 9] {
//!     assert!(q.push(key));
//! }
//! assert_eq!(q.pop(), Some(3));
//! assert!(!q.push(2)); // below the last key popped: refused, the caller falls back
//! assert!(q.push(4));
//! assert_eq!((q.pop(), q.pop(), q.pop(), q.pop()), (Some(4), Some(7), Some(9), None));
//! ```

/// Keys of 64 bits: bucket 0 and one bucket per bit.
const BUCKETS: usize = 65;
/// A bucket emptied into the lower ones keeps its memory up to this many keys.
const KEPT_CAPACITY: usize = 4096;

#[derive(Debug)]
pub struct RadixQueue {
    last: u64,
    buckets: [Vec<u64>; BUCKETS],
}

impl Default for RadixQueue {
    fn default() -> Self {
        RadixQueue {
            last: 0,
            buckets: std::array::from_fn(|_| Vec::new()),
        }
    }
}

impl RadixQueue {
    /// Empty the queue (keeping its memory) and let it take any key again.
    pub fn clear(&mut self) {
        self.last = 0;
        self.buckets.iter_mut().for_each(Vec::clear);
    }

    #[inline]
    fn bucket(last: u64, key: u64) -> usize {
        (u64::BITS - (key ^ last).leading_zeros()) as usize
    }

    /// Add `key`, unless it is below the last key popped: then nothing is added and the answer
    /// is false.
    #[inline]
    pub fn push(&mut self, key: u64) -> bool {
        if key < self.last {
            return false;
        }
        self.buckets[Self::bucket(self.last, key)].push(key);
        true
    }

    /// Take the smallest key.
    pub fn pop(&mut self) -> Option<u64> {
        if self.buckets[0].is_empty() {
            let i = (1..BUCKETS).find(|&i| !self.buckets[i].is_empty())?;
            let mut moved = std::mem::take(&mut self.buckets[i]);
            self.last = moved.iter().copied().min()?;
            // Every key of bucket i agrees with the new last key above bit i - 1 and differs from
            // it below: each lands in a lower bucket, and bucket i is left empty.
            for &key in &moved {
                self.buckets[Self::bucket(self.last, key)].push(key);
            }
            // A large bucket's memory is freed, not kept: its keys now sit in the lower
            // buckets, and a queue that kept every bucket's largest size would hold the keys of a
            // long word several times over.
            if moved.capacity() <= KEPT_CAPACITY {
                moved.clear();
                self.buckets[i] = moved;
            }
        }
        self.buckets[0].pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::random::SplitMix64;

    #[test]
    fn pops_in_order_while_keys_climb_and_refuses_lower_ones() {
        let mut rng = SplitMix64::new(7);
        for round in 0..200 {
            let mut q = RadixQueue::default();
            let mut held: Vec<u64> = Vec::new();
            let mut last = 0u64;
            for _ in 0..(round % 50) * 20 {
                let draw = rng.next_u64();
                if draw % 3 == 0 {
                    // Pop: the smallest held key, the same as a sorted list gives.
                    let expected = held.iter().copied().min();
                    assert_eq!(q.pop(), expected);
                    if let Some(k) = expected {
                        let at = held.iter().position(|&h| h == k).unwrap();
                        held.swap_remove(at);
                        last = k;
                    }
                } else {
                    // Keys near the last popped one, equal keys included, some below it.
                    let key = (last + (draw >> 40) % 1000).saturating_sub(100);
                    let taken = q.push(key);
                    assert_eq!(taken, key >= last, "key {key} after {last}");
                    if taken {
                        held.push(key);
                    }
                }
            }
            held.sort_unstable();
            let rest: Vec<u64> = std::iter::from_fn(|| q.pop()).collect();
            assert_eq!(rest, held);
            q.clear();
            assert!(q.push(0) && q.pop() == Some(0) && q.pop().is_none());
        }
    }

    #[test]
    fn wide_keys_use_every_bucket() {
        let mut q = RadixQueue::default();
        let keys: Vec<u64> = (0..64).map(|b| 1u64 << b).chain([0, u64::MAX]).collect();
        for &k in keys.iter().rev() {
            assert!(q.push(k));
        }
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        let popped: Vec<u64> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(popped, sorted);
    }
}
