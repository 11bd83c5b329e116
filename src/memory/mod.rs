//! Memory for the large tables that are probed at random (word cache lines, BPE pair tables):
//! [`huge_pages`] maps regions of 2 MiB pages, so a probe does not also miss the TLB, and
//! [`zeroed_table`] is a fixed table in zeroed memory committed as it is written. Below the
//! pipeline: models and engines use it, it uses nothing of theirs.

pub mod huge_pages;
pub mod zeroed_table;
