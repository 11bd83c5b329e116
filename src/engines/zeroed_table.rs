//! A fixed table in memory the system hands out already zeroed ([`ZeroedTable`]): its pages are
//! committed when first written, so a word cache that has seen a few short texts holds a few
//! pages of its megabytes, and making it costs no pass over them.
//!
//! `vec![Line::default(); n]` wrote all 8 MiB of a shard's lines on its first insert: +9.6 MiB of
//! resident memory and about a millisecond after one short `encode`. Rust's `alloc_zeroed` clears
//! the memory itself when the alignment is above 16 bytes (the lines' is 64), so the table asks
//! for 16-byte alignment, which `calloc` serves (from fresh zero pages for a large block), and
//! aligns the start by hand.

use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

/// The alignment `calloc` serves without clearing the memory again.
const CALLOC_ALIGN: usize = 16;

pub struct ZeroedTable<T: Copy> {
    /// The first entry, aligned for `T`.
    first: NonNull<T>,
    len: usize,
    /// The block as allocated (None for an empty table).
    block: Option<(NonNull<u8>, Layout)>,
}

// SAFETY: the table owns its entries like a `Box<[T]>` does.
unsafe impl<T: Copy + Send> Send for ZeroedTable<T> {}
// SAFETY: shared access only reads entries, as through a `&[T]`.
unsafe impl<T: Copy + Sync> Sync for ZeroedTable<T> {}

impl<T: Copy> Default for ZeroedTable<T> {
    fn default() -> Self {
        ZeroedTable {
            first: NonNull::dangling(),
            len: 0,
            block: None,
        }
    }
}

impl<T: Copy> ZeroedTable<T> {
    /// `len` entries, every one all zero bytes.
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T`.
    pub unsafe fn new(len: usize) -> Self {
        let size = std::mem::size_of::<T>();
        let align = std::mem::align_of::<T>();
        if len == 0 || size == 0 {
            return ZeroedTable::default();
        }
        let Some(layout) = len
            .checked_mul(size)
            .and_then(|bytes| bytes.checked_add(align))
            .and_then(|bytes| Layout::from_size_align(bytes, CALLOC_ALIGN).ok())
        else {
            handle_alloc_error(Layout::new::<T>());
        };
        let Some(base) = NonNull::new(alloc_zeroed(layout)) else {
            handle_alloc_error(layout);
        };
        // The block has `align` spare bytes, so the aligned start leaves room for `len` entries.
        let first = base.add(base.as_ptr().align_offset(align)).cast::<T>();
        ZeroedTable {
            first,
            len,
            block: Some((base, layout)),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&T> {
        // SAFETY: in range, and the entries are valid and live as long as the table.
        (i < self.len).then(|| unsafe { &*self.first.as_ptr().add(i) })
    }

    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        // SAFETY: as in `get`, with the table borrowed mutably.
        (i < self.len).then(|| unsafe { &mut *self.first.as_ptr().add(i) })
    }
}

impl<T: Copy> Drop for ZeroedTable<T> {
    fn drop(&mut self) {
        if let Some((base, layout)) = self.block {
            // SAFETY: the block was allocated with this layout; `Copy` entries need no drop.
            unsafe { dealloc(base.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C, align(64))]
    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Wide {
        a: u64,
        b: [u32; 14],
    }

    #[test]
    fn entries_start_zeroed_aligned_and_keep_what_is_written() {
        // SAFETY: all-zero bytes are a valid `Wide`.
        let mut table = unsafe { ZeroedTable::<Wide>::new(100_000) };
        assert_eq!(table.len(), 100_000);
        assert_eq!(
            table.get(0).map(|w| w as *const Wide as usize % 64),
            Some(0)
        );
        assert!((0..100_000)
            .step_by(997)
            .all(|i| table.get(i).unwrap().a == 0));
        table.get_mut(99_999).unwrap().a = 7;
        table.get_mut(3).unwrap().b[13] = 9;
        assert_eq!(table.get(99_999).unwrap().a, 7);
        assert_eq!(table.get(3).unwrap().b[13], 9);
        assert!(table.get(100_000).is_none());
        let empty = ZeroedTable::<Wide>::default();
        assert!(empty.is_empty() && empty.get(0).is_none());
    }
}
