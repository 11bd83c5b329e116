//! Counting the training corpus: pre-token (or word) counts gathered batch by batch, possibly from
//! several threads at once, and read back as a snapshot for a trainer.
//!
//! The counts are a multiset: the result does not depend on the batch order or the thread count.
//! A [`SharedCounts`] holds its lock only for pure-Rust work of bounded size (folding one batch in,
//! copying the map out) and never while running a trainer, so a caller that blocks on it (holding
//! Python's GIL, say) waits for a copy, never for a whole training run, and cannot deadlock with
//! one.
//!
//! ```
//! use tinyllm::train::counts::{Counts, SharedCounts};
//! let shared = SharedCounts::default();
//! let mut batch = Counts::default();
//! batch.insert(b" the".to_vec(), 2);
//! shared.absorb(batch).unwrap();
//! assert_eq!(shared.bpe_units().unwrap(), vec![(vec![32, 116, 104, 101], 2)]);
//! ```

use std::sync::{Mutex, MutexGuard};

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::Error;

/// Piece (bytes; UTF-8 for words) -> count.
pub type Counts = FxHashMap<Vec<u8>, u64>;

/// Count one occurrence of `piece` (allocates only for a new piece).
#[inline]
pub fn count_piece(counts: &mut Counts, piece: &[u8]) {
    match counts.get_mut(piece) {
        Some(n) => *n = n.saturating_add(1),
        None => {
            counts.insert(piece.to_vec(), 1);
        }
    }
}

/// The sum of two count maps (the smaller is folded into the larger). Counts saturate at
/// `u64::MAX` rather than wrap.
pub fn merge_counts(a: Counts, b: Counts) -> Counts {
    let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    for (piece, n) in small {
        let total = big.entry(piece).or_insert(0);
        *total = total.saturating_add(n);
    }
    big
}

/// The counts of a batch of texts, counted in parallel: `each(text, counts)` adds the pieces of
/// one text. The first error stops the batch (which is then not counted at all).
pub fn count_batch<F>(texts: &[&str], each: F) -> Result<Counts, Error>
where
    F: Fn(&str, &mut Counts) -> Result<(), Error> + Sync,
{
    texts
        .par_iter()
        .try_fold(Counts::default, |mut counts, text| {
            each(text, &mut counts)?;
            Ok::<_, Error>(counts)
        })
        .try_reduce(Counts::default, |a, b| Ok(merge_counts(a, b)))
}

/// A count map shared by concurrent callers (the Python counters' `add`, `len`, `train`).
///
/// Concurrency contract: each [`absorb`](Self::absorb) is atomic (a batch is in a snapshot
/// entirely or not at all); a snapshot ([`bpe_units`](Self::bpe_units), [`read`](Self::read))
/// sees every batch absorbed before it took the lock and none after; no method holds the lock
/// while doing anything but copying or merging counts.
#[derive(Default)]
pub struct SharedCounts(Mutex<Counts>);

impl SharedCounts {
    fn lock(&self) -> Result<MutexGuard<'_, Counts>, Error> {
        self.0
            .lock()
            .map_err(|_| Error::Invalid("counter: poisoned by an earlier panic".into()))
    }

    /// Add a batch's counts.
    pub fn absorb(&self, batch: Counts) -> Result<(), Error> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut counts = self.lock()?;
        let current = std::mem::take(&mut *counts);
        *counts = merge_counts(current, batch);
        Ok(())
    }

    /// The number of distinct pieces so far.
    pub fn len(&self) -> Result<usize, Error> {
        Ok(self.lock()?.len())
    }

    pub fn is_empty(&self) -> Result<bool, Error> {
        Ok(self.lock()?.is_empty())
    }

    /// Run `f` on the counts with the lock held: `f` must only read or copy.
    pub fn read<T>(&self, f: impl FnOnce(&Counts) -> T) -> Result<T, Error> {
        let counts = self.lock()?;
        Ok(f(&counts))
    }

    /// A snapshot as BPE training units: each piece's bytes as symbols 0..=255, with its count,
    /// sorted (so the trainer's input does not depend on hash order). Only the copy is made under
    /// the lock; the sort runs after it is released.
    pub fn bpe_units(&self) -> Result<Vec<(Vec<u32>, u64)>, Error> {
        let mut units: Vec<(Vec<u32>, u64)> = self.read(|counts| {
            counts
                .iter()
                .map(|(piece, &n)| (piece.iter().map(|&b| b as u32).collect(), n))
                .collect()
        })?;
        units.sort_unstable();
        Ok(units)
    }

    /// A snapshot of the words (UTF-8 pieces) with their counts, in code point order.
    pub fn words(&self) -> Result<Vec<(String, u64)>, Error> {
        let mut words: Vec<(Vec<u8>, u64)> =
            self.read(|counts| counts.iter().map(|(w, &n)| (w.clone(), n)).collect())?;
        // UTF-8 byte order is code point order.
        words.sort_unstable();
        words
            .into_iter()
            .map(|(w, n)| {
                String::from_utf8(w)
                    .map(|s| (s, n))
                    .map_err(|_| Error::Invalid("WordCounter: a word is not UTF-8".into()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn count_batch_counts_every_text_and_stops_at_the_first_error() {
        let texts = ["a b", "b", "c b"];
        let words = |text: &str, counts: &mut Counts| {
            text.split(' ')
                .for_each(|w| count_piece(counts, w.as_bytes()));
            Ok(())
        };
        let counts = count_batch(&texts, words).unwrap();
        assert_eq!(counts, batch(&["a", "b", "b", "b", "c"]));
        let failing = |text: &str, _: &mut Counts| match text {
            "b" => Err(Error::Invalid("no b".into())),
            _ => Ok(()),
        };
        assert!(count_batch(&texts, failing).is_err());
    }

    fn batch(pieces: &[&str]) -> Counts {
        let mut counts = Counts::default();
        for p in pieces {
            count_piece(&mut counts, p.as_bytes());
        }
        counts
    }

    #[test]
    fn counts_are_a_multiset_whatever_the_batch_order() {
        let (a, b) = (batch(&["x", "y", "x"]), batch(&["y", "z"]));
        let one = SharedCounts::default();
        one.absorb(a.clone()).unwrap();
        one.absorb(b.clone()).unwrap();
        let other = SharedCounts::default();
        other.absorb(b).unwrap();
        other.absorb(a).unwrap();
        assert_eq!(one.words().unwrap(), other.words().unwrap());
        assert_eq!(
            one.words().unwrap(),
            [
                ("x".to_string(), 2),
                ("y".to_string(), 2),
                ("z".to_string(), 1)
            ]
        );
        assert_eq!(one.len().unwrap(), 3);
    }

    #[test]
    fn merged_counts_saturate_instead_of_overflowing() {
        let mut a = Counts::default();
        a.insert(b"x".to_vec(), u64::MAX - 1);
        let mut b = Counts::default();
        b.insert(b"x".to_vec(), 5);
        assert_eq!(merge_counts(a, b)[&b"x".to_vec()], u64::MAX);
    }

    #[test]
    fn a_snapshot_does_not_hold_the_lock_while_its_owner_works() {
        // Take a snapshot, then "train" for a while; absorbing and len() meanwhile must not wait.
        let shared = Arc::new(SharedCounts::default());
        shared.absorb(batch(&["a", "b"])).unwrap();
        let units = shared.bpe_units().unwrap();
        let other = shared.clone();
        let adder = std::thread::spawn(move || {
            other.absorb(batch(&["c"])).unwrap();
            other.len().unwrap()
        });
        // The adder finishes while the snapshot's owner is still "training".
        assert_eq!(adder.join().unwrap(), 3);
        assert_eq!(units, vec![(vec![97], 1), (vec![98], 1)]);
        assert_eq!(shared.bpe_units().unwrap().len(), 3);
    }
}
