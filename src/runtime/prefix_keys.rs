//! Prefix-cache block keys: each complete block of `block_size` ids gets a key that names the
//! whole prefix up to its end, through its parent's key (the reference is
//! `tinyllm.runtime.prefix_cache.reference_block_keys`):
//!
//! ```text
//! K_-1 = root
//! K_i  = framed_sha256("prefix-cache-block-v1",
//!            {"block": {"ids": block i's ids, "policy": policy, "state": state}, "parent": hex(K_i-1)})
//! ```
//!
//! `state` is the hex hash of the state-changing identity z, computed once by the caller, and
//! `policy` the versioned key policy (its key mode included). The payload is written here as the
//! canonical JSON bytes Python's `canonical_bytes` gives: keys sorted, no spaces, the strings
//! checked to need no escaping. The incomplete tail is not keyed.
//!
//! Why the block is nested: canonical JSON sorts keys, so `"block"` comes before `"parent"` and
//! everything but the last 66 payload bytes is known before the parent is. Each block's hasher
//! takes the frame and that part in parallel (about two thirds of the SHA-256 work), and only the
//! parent and the closing `"}` are hashed along the chain, which is sequential by construction.
//! The keys do not depend on the thread count.

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::framed::{framed_hasher, hex_bytes};
use crate::Error;

pub const DOMAIN: &str = "prefix-cache-block-v1";

/// Below this many blocks the chain runs on the calling thread alone: a pool's start-up would cost more.
const PARALLEL_BLOCKS: usize = 64;

/// What follows the parent's hex digits: the string's quote and the payload's brace.
const CLOSE: &[u8] = b"\"}";

fn field(name: &str, expected: &str, found: String) -> Error {
    Error::Field {
        field: name.to_string(),
        expected: expected.to_string(),
        found,
    }
}

fn check_hex(name: &str, value: &str) -> Result<[u8; 64], Error> {
    let ok = value.len() == 64
        && value
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let bad = || field(name, "64 lowercase hex digits", format!("{value:?}"));
    if !ok {
        return Err(bad());
    }
    value.as_bytes().try_into().map_err(|_| bad())
}

/// A policy string must be written into JSON verbatim: printable ASCII without `"` or `\`.
fn check_policy(policy: &str) -> Result<(), Error> {
    let ok = !policy.is_empty()
        && policy
            .bytes()
            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if ok {
        Ok(())
    } else {
        Err(field(
            "policy",
            "printable ASCII without '\"' or '\\'",
            format!("{policy:?}"),
        ))
    }
}

fn push_u32(out: &mut Vec<u8>, mut n: u32) {
    let mut digits = [0u8; 10];
    let mut k = digits.len();
    loop {
        k -= 1;
        digits[k] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[k..]);
}

/// A block's hasher after the frame and the payload up to the parent's digits:
/// `{"block":{"ids":[..],"policy":"..","state":".."},"parent":"`.
/// `head` is a buffer the caller reuses from block to block.
fn hasher_before_parent(
    head: &mut Vec<u8>,
    block: &[u32],
    policy: &str,
    state: &[u8; 64],
) -> Sha256 {
    head.clear();
    head.extend_from_slice(b"{\"block\":{\"ids\":[");
    for (k, &id) in block.iter().enumerate() {
        if k > 0 {
            head.push(b',');
        }
        push_u32(head, id);
    }
    head.extend_from_slice(b"],\"policy\":\"");
    head.extend_from_slice(policy.as_bytes());
    head.extend_from_slice(b"\",\"state\":\"");
    head.extend_from_slice(state);
    head.extend_from_slice(b"\"},\"parent\":\"");
    let mut h = framed_hasher(DOMAIN, head.len() + 64 + CLOSE.len());
    h.update(&*head);
    h
}

/// The keys of the complete blocks of `ids` (the tail of `ids.len() % block_size` ids gets none).
pub fn block_keys(
    ids: &[u32],
    block_size: usize,
    policy: &str,
    state: &str,
    root: &str,
) -> Result<Vec<[u8; 32]>, Error> {
    if block_size == 0 {
        return Err(field("block_size", "an integer >= 1", "0".to_string()));
    }
    check_policy(policy)?;
    let state = check_hex("state", state)?;
    let mut parent = check_hex("root", root)?;
    let blocks: Vec<&[u32]> = ids.chunks_exact(block_size).collect();
    let capacity = block_size
        .saturating_mul(11)
        .saturating_add(policy.len() + 120)
        .min(1 << 20);
    let heads: Vec<Sha256> = if blocks.len() < PARALLEL_BLOCKS {
        let mut head = Vec::with_capacity(capacity);
        blocks
            .iter()
            .map(|b| hasher_before_parent(&mut head, b, policy, &state))
            .collect()
    } else {
        blocks
            .par_iter()
            .map_init(
                || Vec::with_capacity(capacity),
                |head, b| hasher_before_parent(head, b, policy, &state),
            )
            .collect()
    };
    let mut keys = Vec::with_capacity(heads.len());
    for mut h in heads {
        h.update(parent);
        h.update(CLOSE);
        let key: [u8; 32] = h.finalize().into();
        parent = hex_bytes(&key);
        keys.push(key);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::framed::{framed_sha256, hex};

    const ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    fn keys(ids: &[u32], b: usize) -> Vec<String> {
        block_keys(ids, b, "tinyllm-prefix-cache-v1/minimal", ZERO, ZERO)
            .unwrap()
            .iter()
            .map(hex)
            .collect()
    }

    #[test]
    fn sixty_ids_in_blocks_of_eight_give_seven_keys() {
        let ids: Vec<u32> = (0..60).collect();
        assert_eq!(keys(&ids, 8).len(), 7);
        assert_eq!(keys(&ids[..7], 8).len(), 0);
    }

    #[test]
    fn a_changed_id_changes_its_block_and_every_later_key_only() {
        let ids: Vec<u32> = (0..60).collect();
        let mut changed = ids.clone();
        changed[18] = 999;
        let (a, b) = (keys(&ids, 8), keys(&changed, 8));
        let same: Vec<bool> = a.iter().zip(&b).map(|(x, y)| x == y).collect();
        assert_eq!(same, [true, true, false, false, false, false, false]);
    }

    #[test]
    fn the_payload_is_the_canonical_json_python_writes() {
        // canonical_bytes({"block": {"ids": [7, 0, 4294967295], "policy": "p", "state": ZERO}, "parent": ZERO})
        let payload =
            format!("{{\"block\":{{\"ids\":[7,0,4294967295],\"policy\":\"p\",\"state\":\"{ZERO}\"}},\"parent\":\"{ZERO}\"}}");
        let expected = framed_sha256(DOMAIN, payload.as_bytes());
        assert_eq!(
            block_keys(&[7, 0, u32::MAX], 3, "p", ZERO, ZERO).unwrap(),
            vec![expected]
        );
    }

    #[test]
    fn the_parallel_heads_give_the_keys_of_one_payload_hashed_whole() {
        // Enough blocks for the parallel path; each key recomputed from its whole payload.
        let ids: Vec<u32> = (0..1000u32).map(|i| i.wrapping_mul(2654435761)).collect();
        let got = block_keys(&ids, 4, "p", ZERO, ZERO).unwrap();
        assert!(got.len() >= PARALLEL_BLOCKS);
        let mut parent = ZERO.to_string();
        for (block, key) in ids.chunks_exact(4).zip(&got) {
            let list: Vec<String> = block.iter().map(u32::to_string).collect();
            let payload = format!(
                "{{\"block\":{{\"ids\":[{}],\"policy\":\"p\",\"state\":\"{ZERO}\"}},\"parent\":\"{parent}\"}}",
                list.join(",")
            );
            assert_eq!(&framed_sha256(DOMAIN, payload.as_bytes()), key);
            parent = hex(key);
        }
    }

    #[test]
    fn bad_arguments_are_errors_naming_the_field() {
        let err = block_keys(&[1], 0, "p", ZERO, ZERO)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("block_size:"), "{err}");
        let err = block_keys(&[1], 1, "a\"b", ZERO, ZERO)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("policy:"), "{err}");
        let err = block_keys(&[1], 1, "p", "ABC", ZERO)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("state:"), "{err}");
        let err = block_keys(&[1], 1, "p", ZERO, "0").unwrap_err().to_string();
        assert!(err.starts_with("root:"), "{err}");
    }
}
