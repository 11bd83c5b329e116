//! Zeroed memory in 2 MiB pages for the tables that are probed at random ([`map_zeroed`]).
//!
//! A word cache shard is 8 MiB of lines, one of which each piece of text touches, at random. In
//! 4 KiB pages that is 2,048 pages, more than the CPU's first-level TLB maps by far, so nearly
//! every probe also walked the page tables: on unseen English with a Llama-3-style file half of
//! the pre-tokenizer's time samples sat on the prefetch of the piece's cache line, which waits
//! for that walk. Linux backs a region with 2 MiB pages only when it is asked to
//! (`madvise(MADV_HUGEPAGE)`, the usual `transparent_hugepage=madvise` policy) and only where a
//! whole aligned 2 MiB of the region lies, so the region is mapped on its own, aligned by hand,
//! and advised before anything touches it.
//!
//! Memory is still committed when first written, but 2 MiB at a time. Where the system has no
//! such pages (or refuses the advice) the region is ordinary zero pages. With
//! `TINYLLM_HUGE_PAGES=0` in the environment when a table is made, nothing is advised:
//! [`map_zeroed`] then leaves the table to the allocator, and [`TableAlloc`] maps plain pages.

use std::alloc::Layout;
use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator, Global};

/// The size of a huge page, and the smallest region worth mapping this way.
pub const HUGE_PAGE: usize = 2 << 20;

/// Which pages a table asks for. Huge pages commit memory 2 MiB at a time: worth it beside a
/// BPE vocabulary's tables (megabytes, probed by every first-seen word), not for a WordPiece or
/// Unigram engine, whose whole process is 20-36 MB and whose cache would add 8 MiB at its first
/// `encode` (BERT: 21 -> 29 MB peak, against Hugging Face's 25).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pages {
    /// The allocator's (4 KiB, committed page by page).
    #[default]
    Small,
    /// Huge pages for a table of at least [`HUGE_PAGE`] bytes ([`map_zeroed`]).
    Huge,
}

/// A fresh zeroed region of at least `bytes` bytes (rounded up to whole 2 MiB pages), aligned
/// to 2 MiB and advised for huge pages; None when `bytes` is under one huge page, off Linux, or
/// when the system refuses the mapping. Free it with [`unmap`] and the same `bytes`.
pub fn map_zeroed(bytes: usize) -> Option<NonNull<u8>> {
    if !wanted() {
        return None;
    }
    map_region(bytes, true)
}

/// A region as [`map_zeroed`] maps it, advised for huge pages only when `advise` is true.
fn map_region(bytes: usize, advise: bool) -> Option<NonNull<u8>> {
    if !cfg!(target_os = "linux") || bytes < HUGE_PAGE {
        return None;
    }
    map_aligned(bytes.checked_next_multiple_of(HUGE_PAGE)?, advise)
}

/// False when the environment says `TINYLLM_HUGE_PAGES=0` (read at each table's making, which
/// is rare: an engine's first use of a cache shard, a model's load).
fn wanted() -> bool {
    std::env::var_os("TINYLLM_HUGE_PAGES").is_none_or(|v| v != "0")
}

#[cfg(target_os = "linux")]
fn map_aligned(size: usize, advise: bool) -> Option<NonNull<u8>> {
    // One page more than asked for, so that an aligned start exists; the slack is given back.
    let span = size.checked_add(HUGE_PAGE)?;
    // SAFETY: a new private anonymous mapping, which no other memory aliases.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let base = base as usize;
    let start = base.next_multiple_of(HUGE_PAGE);
    let end = start + size;
    // SAFETY: the head and tail given back lie inside the mapping just made, outside
    // [start, end); the advice only concerns that range, which nothing has touched yet. A
    // failure of either costs address space or huge pages, never correctness.
    unsafe {
        if start > base {
            libc::munmap(base as *mut libc::c_void, start - base);
        }
        if base + span > end {
            libc::munmap(end as *mut libc::c_void, base + span - end);
        }
        if advise {
            libc::madvise(start as *mut libc::c_void, size, libc::MADV_HUGEPAGE);
        }
    }
    NonNull::new(start as *mut u8)
}

#[cfg(not(target_os = "linux"))]
fn map_aligned(_size: usize, _advise: bool) -> Option<NonNull<u8>> {
    None
}

/// Give back a region from [`map_zeroed`] (or [`TableAlloc`]).
///
/// # Safety
/// `region` was mapped here for this `bytes`, and nothing uses it any more.
pub unsafe fn unmap(region: NonNull<u8>, bytes: usize) {
    #[cfg(target_os = "linux")]
    libc::munmap(
        region.as_ptr() as *mut libc::c_void,
        bytes.next_multiple_of(HUGE_PAGE),
    );
    #[cfg(not(target_os = "linux"))]
    let _ = (region, bytes);
}

/// An allocator for a hash table that grows past a huge page: each block of at least
/// [`HUGE_PAGE`] bytes is its own aligned region, mapped and advised as by [`map_zeroed`];
/// smaller ones come from the global allocator. Which block is which is told by its size alone,
/// so on Linux a large block never comes from the global allocator: a refused mapping is an
/// allocation failure, as the global allocator's own `mmap` would be.
#[derive(Clone, Copy, Debug, Default)]
pub struct TableAlloc;

impl TableAlloc {
    fn mapped(layout: Layout) -> bool {
        cfg!(target_os = "linux") && layout.size() >= HUGE_PAGE && layout.align() <= HUGE_PAGE
    }
}

// SAFETY: blocks are valid for their layout until deallocated: mapped ones are aligned to 2 MiB
// (at least the layout's alignment) and hold `size` rounded up to whole huge pages; the others
// are the global allocator's own.
unsafe impl Allocator for TableAlloc {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if !Self::mapped(layout) {
            return Global.allocate(layout);
        }
        let region = map_region(layout.size(), wanted()).ok_or(AllocError)?;
        Ok(NonNull::slice_from_raw_parts(region, layout.size()))
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if Self::mapped(layout) {
            unmap(ptr, layout.size());
        } else {
            Global.deallocate(ptr, layout);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_are_aligned_zeroed_and_writable() {
        assert!(map_zeroed(HUGE_PAGE - 1).is_none());
        for bytes in [HUGE_PAGE, 3 * HUGE_PAGE + 5] {
            // map_region: what map_zeroed maps, whatever TINYLLM_HUGE_PAGES says.
            let region = map_region(bytes, true);
            if !cfg!(target_os = "linux") {
                assert!(region.is_none());
                continue;
            }
            let region = region.expect("a mapping of a few MiB");
            assert_eq!(region.as_ptr() as usize % HUGE_PAGE, 0);
            // SAFETY: the region holds `bytes` bytes and is ours until unmapped.
            unsafe {
                let all = std::slice::from_raw_parts_mut(region.as_ptr(), bytes);
                assert!(all.iter().step_by(4093).all(|&b| b == 0) && all[bytes - 1] == 0);
                all[bytes - 1] = 7;
                all[0] = 9;
                assert_eq!((all[0], all[bytes - 1]), (9, 7));
                unmap(region, bytes);
            }
        }
    }

    #[test]
    fn tables_in_the_allocator_keep_their_entries_through_growth() {
        // Grows from a few buckets (global allocator) past 2 MiB of buckets (mapped regions).
        let mut map: hashbrown::HashMap<u64, u64, rustc_hash::FxBuildHasher, TableAlloc> =
            hashbrown::HashMap::with_hasher_in(rustc_hash::FxBuildHasher, TableAlloc);
        for k in 0..300_000u64 {
            map.insert(k * 7919, k);
        }
        assert!((0..300_000u64)
            .step_by(97)
            .all(|k| map.get(&(k * 7919)) == Some(&k)));
        assert_eq!(map.get(&1), None);
        let copy = map.clone();
        drop(map);
        assert_eq!(copy.len(), 300_000);
        assert_eq!(copy.get(&(299_999 * 7919)), Some(&299_999));
    }
}
