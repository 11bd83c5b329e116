//! Runtime identity: what a serving stack needs from the token layer after the ids exist.
//!
//! - [`framed`]: the framed SHA-256 of the artifact hashes (`tinyllm.artifacts.canonical`);
//! - [`prefix_keys`]: parent-chained prefix-cache block keys (`tinyllm.runtime.prefix_cache`).

pub mod framed;
pub mod prefix_keys;
