//! A double-array trie (Aoe 1989; sentencepiece uses darts-clone): the children of every node in
//! one array, found by one read and one compare per byte, with no hashing and no search among a
//! node's edges. Shared by the Unigram model (over its code units) and WordPiece (over bytes).
//!
//! Cell `t` is the child of node `s` by byte `c` exactly when `t == base(s) + c` and
//! `check(t) == s`. A node that ends a key has the TERMINAL bit in its base; the key's payload
//! (Unigram: its score) is in a side array read beside the walk, and its id, needed only for the
//! chosen match, in another. The array is always at least `max(base) + 256` long, so
//! `base + byte` is in bounds for every node, leaves included.
//!
//! Example: keys `a` (id 0) and `ab` (id 1). The root is cell 0; its child by `a` (97) takes
//! the first free cell from 97, so the root's base is 0; `a`'s child by `b` (98) takes cell 98,
//! checked 97. `prefixes("abc", 0)` reports (1, cell 97) and (2, cell 98), then stops at `c`:
//! cell 99 is not checked 98.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::Error;

const NONE: u32 = u32::MAX;
const TERMINAL: u32 = 1 << 31;

/// A cell of the array: what a walk reads, 8 bytes a step.
#[derive(Debug, Clone, Copy)]
struct Cell {
    base: u32,
    check: u32,
}

/// A free cell: nobody's child.
const EMPTY: Cell = Cell {
    base: 0,
    check: NONE,
};

#[derive(Debug, Clone)]
pub struct DoubleArray<P> {
    cells: Vec<Cell>,
    /// The payload of each terminal cell, apart from the cells: a walk's chain of reads stays
    /// in an array half the size (Unigram's f64 scores made a cell 16 bytes), and a match's
    /// payload is read beside the chain, not on it.
    payloads: Vec<P>,
    /// The key id of each terminal cell (NONE elsewhere).
    ids: Vec<u32>,
}

impl<P: Copy + Default> DoubleArray<P> {
    /// The trie of `keys` (sorted, distinct, none empty). A key's cell carries `payload(id)`.
    /// Nodes are placed in the `order` given (see [`Order`]); the layout is the same on every
    /// build.
    pub fn build(
        keys: &[(&[u8], u32)],
        payload: impl Fn(u32) -> P,
        mut order: impl Order,
    ) -> Result<Self, Error> {
        let mut b = Builder::new();
        b.occupy(0); // the root: its check stays NONE, it is nobody's child
        let (mut ids, mut payloads) = (Vec::new(), Vec::new());
        // Nodes whose children are still to be placed: (node, keys[lo..hi] under it, depth).
        // The order is given only their index, and a leaf is finished where it is placed:
        // queueing every node with its key range, leaves included, was most of a BERT
        // vocabulary's build.
        let mut pending: Vec<(usize, usize, usize, usize)> = vec![(0, 0, keys.len(), 0)];
        order.push(0, keys);
        let mut children: Vec<(u8, usize, usize)> = Vec::new();
        while let Some(index) = order.pop() {
            let (node, lo, hi, depth) = pending[index as usize];
            children.clear();
            for (k, (key, _)) in keys.iter().enumerate().take(hi).skip(lo) {
                match children.last_mut() {
                    Some(last) if last.0 == key[depth] => last.2 = k + 1,
                    _ => children.push((key[depth], k, k + 1)),
                }
            }
            if children.is_empty() {
                continue;
            }
            let base = b.find_base(&children);
            if base + 256 >= TERMINAL as usize {
                return Err(Error::Invalid(
                    "vocab: too many key bytes for the trie".into(),
                ));
            }
            b.cells[node].base |= base as u32;
            for &(byte, first, chi) in &children {
                let t = base + byte as usize;
                b.occupy(t);
                b.cells[t].check = node as u32;
                let mut clo = first;
                // Sorted keys: the one that ends here, if any, comes first.
                if keys[clo].0.len() == depth + 1 {
                    let id = keys[clo].1;
                    b.cells[t].base |= TERMINAL;
                    if ids.len() <= t {
                        ids.resize(t + 1, NONE);
                        payloads.resize(t + 1, P::default());
                    }
                    ids[t] = id;
                    payloads[t] = payload(id);
                    clo += 1;
                }
                if clo < chi {
                    let index = u32::try_from(pending.len()).map_err(|_| {
                        Error::Invalid("vocab: too many key bytes for the trie".into())
                    })?;
                    pending.push((t, clo, chi, depth + 1));
                    order.push(index, &keys[first..chi]);
                }
            }
        }
        let mut cells = b.cells;
        let max_base = (cells.iter())
            .map(|c| (c.base & !TERMINAL) as usize)
            .max()
            .unwrap_or(0);
        cells.resize(cells.len().max(max_base + 256), EMPTY);
        cells.shrink_to_fit();
        ids.resize(cells.len(), NONE);
        ids.shrink_to_fit();
        payloads.resize(cells.len(), P::default());
        payloads.shrink_to_fit();
        Ok(DoubleArray {
            cells,
            payloads,
            ids,
        })
    }

    /// Cells in the array.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// The id of the key in terminal cell `cell` (as [`Self::prefixes`] reports it).
    #[inline(always)]
    pub fn id(&self, cell: u32) -> u32 {
        self.ids[cell as usize]
    }

    /// The id of the key spelled exactly by `key`.
    pub fn get(&self, key: &[u8]) -> Option<u32> {
        let mut node = 0usize;
        for &byte in key {
            let t = (self.cells[node].base & !TERMINAL) as usize + byte as usize;
            if self.cells[t].check != node as u32 {
                return None;
            }
            node = t;
        }
        let id = self.ids[node];
        (id != NONE && !key.is_empty()).then_some(id)
    }

    /// Calls `f(end, cell, payload)` for every key that is a prefix of `text[start..]`, shortest
    /// first; [`Self::id`] of `cell` is its id.
    #[inline(always)]
    pub fn prefixes(&self, text: &[u8], start: usize, mut f: impl FnMut(usize, u32, P)) {
        // `base` is carried from the cell just read, keeping one load per step on the chain.
        let mut node = 0u32;
        let mut base = self.cells[0].base & !TERMINAL;
        for (k, &byte) in text[start..].iter().enumerate() {
            let t = base as usize + byte as usize;
            let cell = self.cells[t];
            if cell.check != node {
                return;
            }
            node = t as u32;
            base = cell.base & !TERMINAL;
            if cell.base & TERMINAL != 0 {
                f(start + k + 1, node, self.payloads[t]);
            }
        }
    }
}

/// The order in which [`DoubleArray::build`] places the nodes' children: it is told of each node
/// (numbered in the order found, with the keys under it) and asked for the next to place.
pub trait Order {
    fn push(&mut self, index: u32, under: &[(&[u8], u32)]);
    fn pop(&mut self) -> Option<u32>;
}

/// Breadth first: the nodes in the order they are found, shallow ones first, with no queue to
/// keep (BERT's tries: 6.5 ms over the old edge-list trie's build, against 9 with a heap).
#[derive(Default)]
pub struct BreadthFirst {
    next: u32,
    found: u32,
}

impl Order for BreadthFirst {
    fn push(&mut self, index: u32, _: &[(&[u8], u32)]) {
        self.found = index + 1;
    }

    fn pop(&mut self) -> Option<u32> {
        (self.next < self.found).then(|| {
            self.next += 1;
            self.next - 1
        })
    }
}

/// Hottest first: a max-heap on `heat` of the keys under each node (a proxy for how often a walk
/// enters it), so the cells frequent walks touch sit together at the front of the array; ties in
/// the order found.
pub struct Hottest<H, F> {
    heap: BinaryHeap<(H, Reverse<u32>)>,
    heat: F,
}

impl<H: Ord, F: Fn(&[(&[u8], u32)]) -> H> Hottest<H, F> {
    pub fn new(heat: F) -> Self {
        Hottest {
            heap: BinaryHeap::new(),
            heat,
        }
    }
}

impl<H: Ord, F: Fn(&[(&[u8], u32)]) -> H> Order for Hottest<H, F> {
    fn push(&mut self, index: u32, under: &[(&[u8], u32)]) {
        self.heap.push(((self.heat)(under), Reverse(index)));
    }

    fn pop(&mut self) -> Option<u32> {
        self.heap.pop().map(|(_, Reverse(index))| index)
    }
}

/// Places children by first fit. `next_free` is a union-find "next free cell at or after i"
/// chain, so occupied stretches are skipped in near-constant time.
struct Builder {
    cells: Vec<Cell>,
    next_free: Vec<u32>,
    /// Where the search for a node of [`WIDE`] children or more starts: where the last one fit.
    wide_from: usize,
}

/// A node with this many children rarely fits among the scattered free cells that the nodes
/// before it left behind; trying each of them again for every such node made the build
/// quadratic in practice (BERT's tries: 6.5 -> 3.7 ms over the old edge-list trie's build).
const WIDE: usize = 2;

impl Builder {
    fn new() -> Self {
        let mut b = Builder {
            cells: Vec::new(),
            next_free: Vec::new(),
            wide_from: 0,
        };
        b.grow(1024);
        b
    }

    fn grow(&mut self, len: usize) {
        while self.cells.len() < len {
            self.next_free.push(self.cells.len() as u32);
            self.cells.push(EMPTY);
        }
    }

    fn free_from(&mut self, i: usize) -> usize {
        self.grow(i + 2);
        let mut r = i;
        while self.next_free[r] as usize != r {
            r = self.next_free[r] as usize;
            self.grow(r + 2);
        }
        let mut k = i;
        while k != r {
            let next = self.next_free[k] as usize;
            self.next_free[k] = r as u32;
            k = next;
        }
        r
    }

    fn is_free(&self, t: usize) -> bool {
        t >= self.cells.len() || self.next_free[t] as usize == t
    }

    fn occupy(&mut self, t: usize) {
        self.grow(t + 2);
        self.next_free[t] = t as u32 + 1;
    }

    fn find_base(&mut self, children: &[(u8, usize, usize)]) -> usize {
        let first = children[0].0 as usize;
        let wide = children.len() >= WIDE;
        let from = if wide {
            self.wide_from.max(first)
        } else {
            first
        };
        let mut slot = self.free_from(from.max(1));
        loop {
            let base = slot - first;
            if (children.iter()).all(|&(c, _, _)| self.is_free(base + c as usize)) {
                self.grow(base + 258);
                if wide {
                    self.wide_from = slot;
                }
                return base;
            }
            slot = self.free_from(slot + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::random::SplitMix64;

    /// Random keys over a small alphabet (so that they share prefixes), sorted and distinct.
    fn random_keys(rng: &mut SplitMix64, count: usize) -> Vec<Vec<u8>> {
        let alphabet = [b'a', b'b', b'c', 0x00, 0xFF, 0xC3];
        let mut keys: Vec<Vec<u8>> = (0..count)
            .map(|_| {
                let len = 1 + (rng.next_u64() % 6) as usize;
                (0..len)
                    .map(|_| alphabet[(rng.next_u64() % alphabet.len() as u64) as usize])
                    .collect()
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    #[test]
    fn prefixes_and_get_answer_as_a_scan_of_the_keys_does() {
        let mut rng = SplitMix64::new(11);
        for round in 0..40 {
            let keys = random_keys(&mut rng, 1 + round * 5);
            let listed: Vec<(&[u8], u32)> = (keys.iter().enumerate())
                .map(|(id, k)| (k.as_slice(), id as u32 * 3))
                .collect();
            // The payload is the id plus one, the heat the smallest id under a node (reversed).
            let heat = |ks: &[(&[u8], u32)]| Reverse(ks.iter().map(|k| k.1).min());
            let hottest = DoubleArray::build(&listed, |id| id as u64 + 1, Hottest::new(heat));
            let breadth = DoubleArray::build(&listed, |id| id as u64 + 1, BreadthFirst::default());
            for trie in [hottest.unwrap(), breadth.unwrap()] {
                for _ in 0..50 {
                    let text = &random_keys(&mut rng, 1)[0];
                    let text = [text.as_slice(), b"ab", text.as_slice()].concat();
                    for start in 0..text.len() {
                        let mut got = Vec::new();
                        trie.prefixes(&text, start, |end, slot, payload| {
                            got.push((end, trie.id(slot), payload))
                        });
                        let want: Vec<(usize, u32, u64)> = (start + 1..=text.len())
                            .filter_map(|end| {
                                let at = listed.iter().find(|k| k.0 == &text[start..end])?;
                                Some((end, at.1, at.1 as u64 + 1))
                            })
                            .collect();
                        assert_eq!(got, want, "{listed:?} on {text:?} from {start}");
                    }
                    for (key, id) in &listed {
                        assert_eq!(trie.get(key), Some(*id));
                    }
                    let absent = [text.as_slice(), &[0x01]].concat();
                    assert_eq!(trie.get(&absent), None);
                    assert_eq!(trie.get(b""), None);
                }
            }
        }
    }

    #[test]
    fn the_module_example_is_the_layout() {
        let keys: [(&[u8], u32); 2] = [(b"a", 0), (b"ab", 1)];
        let trie = DoubleArray::build(&keys, |_| (), BreadthFirst::default()).unwrap();
        assert_eq!(trie.cells[0].base & !TERMINAL, 0);
        assert_eq!((trie.cells[97].check, trie.cells[98].check), (0, 97));
        assert_eq!((trie.id(97), trie.id(98)), (0, 1));
        let mut found = Vec::new();
        trie.prefixes(b"abc", 0, |end, cell, ()| found.push((end, cell)));
        assert_eq!(found, [(1, 97), (2, 98)]);
    }

    #[test]
    fn the_layout_is_the_same_on_every_build() {
        let mut rng = SplitMix64::new(5);
        let keys = random_keys(&mut rng, 300);
        let listed: Vec<(&[u8], u32)> = (keys.iter().enumerate())
            .map(|(id, k)| (k.as_slice(), id as u32))
            .collect();
        let build = || {
            let t = DoubleArray::build(&listed, |_| (), Hottest::new(|ks: &[_]| ks.len())).unwrap();
            (
                t.cells
                    .iter()
                    .map(|s| (s.base, s.check))
                    .collect::<Vec<_>>(),
                t.ids,
            )
        };
        assert_eq!(build(), build());
    }
}
