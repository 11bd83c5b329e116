//! A fixed table in memory the system hands out already zeroed ([`ZeroedTable`]): its pages are
//! committed when first written, so a word cache that has seen a few short texts holds a few
//! pages of its megabytes, and making it costs no pass over them.
//!
//! `vec![Line::default(); n]` wrote all 8 MiB of a shard's lines on its first insert: +9.6 MiB of
//! resident memory and about a millisecond after one short `encode`. Rust's `alloc_zeroed` clears
//! the memory itself when the alignment is above 16 bytes (the lines' is 64), so the table asks
//! for 16-byte alignment, which `calloc` serves (from fresh zero pages for a large block), and
//! aligns the start by hand. A table of at least 2 MiB that asks for huge pages is its own
//! mapping instead ([`crate::memory::huge_pages`]), committed 2 MiB at a time.

use std::alloc::{alloc_zeroed, dealloc, handle_alloc_error, Layout};
use std::ptr::NonNull;

use crate::memory::huge_pages::{self, Pages};

/// The alignment `calloc` serves without clearing the memory again.
const CALLOC_ALIGN: usize = 16;

pub struct ZeroedTable<T: Copy> {
    /// The first entry, aligned for `T`.
    first: NonNull<T>,
    len: usize,
    /// The memory as obtained (None for an empty table).
    block: Option<Block>,
}

#[derive(Clone, Copy)]
enum Block {
    /// From the allocator, with this layout.
    Heap(NonNull<u8>, Layout),
    /// From `huge_pages::map_zeroed` of this many bytes.
    Mapped(NonNull<u8>, usize),
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
    /// `len` entries, every one all zero bytes, in `pages` where the system gives them.
    ///
    /// # Safety
    /// All-zero bytes must be a valid `T`.
    pub unsafe fn new(len: usize, pages: Pages) -> Self {
        let size = std::mem::size_of::<T>();
        let align = std::mem::align_of::<T>();
        if len == 0 || size == 0 {
            return ZeroedTable::default();
        }
        let bytes = len.checked_mul(size);
        if let Some(bytes) = bytes.filter(|_| pages == Pages::Huge) {
            if let Some(region) = huge_pages::map_zeroed(bytes) {
                // 2 MiB alignment suits every T.
                return ZeroedTable {
                    first: region.cast::<T>(),
                    len,
                    block: Some(Block::Mapped(region, bytes)),
                };
            }
        }
        let Some(layout) = bytes
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
            block: Some(Block::Heap(base, layout)),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the first entry is (dangling in an empty table), for callers that view the
    /// entries as another type of the same layout.
    pub fn first(&self) -> NonNull<T> {
        self.first
    }

    #[inline(always)]
    pub fn get(&self, i: usize) -> Option<&T> {
        // SAFETY: in range, and the entries are valid and live as long as the table.
        (i < self.len).then(|| unsafe { &*self.first.as_ptr().add(i) })
    }

    /// Entry `i` without a bounds check.
    ///
    /// # Safety
    /// `i < self.len()`.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, i: usize) -> T {
        debug_assert!(i < self.len);
        *self.first.as_ptr().add(i)
    }

    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        // SAFETY: as in `get`, with the table borrowed mutably.
        (i < self.len).then(|| unsafe { &mut *self.first.as_ptr().add(i) })
    }
}

impl<T: Copy> Drop for ZeroedTable<T> {
    fn drop(&mut self) {
        // SAFETY: the memory was obtained as recorded; `Copy` entries need no drop.
        match self.block {
            Some(Block::Heap(base, layout)) => unsafe { dealloc(base.as_ptr(), layout) },
            Some(Block::Mapped(region, bytes)) => unsafe { huge_pages::unmap(region, bytes) },
            None => {}
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
        // 64 KB and 6.4 MB from the allocator, 6.4 MB in its own huge-page region (on Linux).
        for (len, pages) in [
            (1_000, Pages::Huge),
            (100_000, Pages::Small),
            (100_000, Pages::Huge),
        ] {
            // SAFETY: all-zero bytes are a valid `Wide`.
            let mut table = unsafe { ZeroedTable::<Wide>::new(len, pages) };
            assert_eq!(table.len(), len);
            assert_eq!(
                table.get(0).map(|w| w as *const Wide as usize % 64),
                Some(0)
            );
            assert!((0..len).step_by(97).all(|i| table.get(i).unwrap().a == 0));
            table.get_mut(len - 1).unwrap().a = 7;
            table.get_mut(3).unwrap().b[13] = 9;
            assert_eq!(table.get(len - 1).unwrap().a, 7);
            // SAFETY: 3 < len.
            assert_eq!(unsafe { table.get_unchecked(3) }.b[13], 9);
            assert!(table.get(len).is_none());
        }
        let empty = ZeroedTable::<Wide>::default();
        assert!(empty.is_empty() && empty.get(0).is_none());
    }
}
