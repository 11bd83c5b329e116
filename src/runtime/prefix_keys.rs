//! Prefix-cache block keys: each complete block of `block_size` ids gets a key that names the
//! whole prefix up to its end, through its parent's key (the reference is
//! `tinyllm.runtime.prefix_cache.reference_block_keys`):
//!
//! ```text
//! K_-1 = root
//! K_i  = framed_sha256("prefix-cache-block-v1",
//!            {"ids": block i's ids, "parent": hex(K_i-1), "policy": policy, "state": state})
//! ```
//!
//! `state` is the hex hash of the state-changing identity z, computed once by the caller, and
//! `policy` the versioned key policy (its key mode included). The payload is written here as the
//! canonical JSON bytes Python's `canonical_bytes` gives: keys sorted, no spaces, the strings
//! checked to need no escaping. The incomplete tail is not keyed.
//!
//! The chain is sequential by construction (each key hashes its parent), so the speed comes from
//! writing each payload into one reused buffer and from SHA-256 itself.

use super::framed::{framed_sha256, hex_bytes};
use crate::Error;

pub const DOMAIN: &str = "prefix-cache-block-v1";

fn field(name: &str, expected: &str, found: String) -> Error {
    Error::Field { field: name.to_string(), expected: expected.to_string(), found }
}

fn check_hex(name: &str, value: &str) -> Result<(), Error> {
    let ok = value.len() == 64 && value.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok { Ok(()) } else { Err(field(name, "64 lowercase hex digits", format!("{value:?}"))) }
}

/// A policy string must be written into JSON verbatim: printable ASCII without `"` or `\`.
fn check_policy(policy: &str) -> Result<(), Error> {
    let ok = !policy.is_empty() && policy.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if ok { Ok(()) } else { Err(field("policy", "printable ASCII without '\"' or '\\'", format!("{policy:?}"))) }
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

/// The keys of the complete blocks of `ids` (the tail of `ids.len() % block_size` ids gets none).
pub fn block_keys(ids: &[u32], block_size: usize, policy: &str, state: &str, root: &str) -> Result<Vec<[u8; 32]>, Error> {
    if block_size == 0 {
        return Err(field("block_size", "an integer >= 1", "0".to_string()));
    }
    check_policy(policy)?;
    check_hex("state", state)?;
    check_hex("root", root)?;
    let mut keys = Vec::with_capacity(ids.len() / block_size);
    let mut parent: [u8; 64] = root.as_bytes().try_into().map_err(|_| field("root", "64 hex digits", root.to_string()))?;
    let mut payload = Vec::with_capacity(block_size * 11 + policy.len() + 180);
    for block in ids.chunks_exact(block_size) {
        payload.clear();
        payload.extend_from_slice(b"{\"ids\":[");
        for (k, &id) in block.iter().enumerate() {
            if k > 0 {
                payload.push(b',');
            }
            push_u32(&mut payload, id);
        }
        payload.extend_from_slice(b"],\"parent\":\"");
        payload.extend_from_slice(&parent);
        payload.extend_from_slice(b"\",\"policy\":\"");
        payload.extend_from_slice(policy.as_bytes());
        payload.extend_from_slice(b"\",\"state\":\"");
        payload.extend_from_slice(state.as_bytes());
        payload.extend_from_slice(b"\"}");
        let key = framed_sha256(DOMAIN, &payload);
        parent = hex_bytes(&key);
        keys.push(key);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::framed::hex;

    const ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";

    fn keys(ids: &[u32], b: usize) -> Vec<String> {
        block_keys(ids, b, "tinyllm-prefix-cache-v1/minimal", ZERO, ZERO).unwrap().iter().map(hex).collect()
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
        // canonical_bytes({"ids": [7, 0, 4294967295], "parent": ZERO, "policy": "p", "state": ZERO})
        let payload = format!("{{\"ids\":[7,0,4294967295],\"parent\":\"{ZERO}\",\"policy\":\"p\",\"state\":\"{ZERO}\"}}");
        let expected = framed_sha256(DOMAIN, payload.as_bytes());
        assert_eq!(block_keys(&[7, 0, u32::MAX], 3, "p", ZERO, ZERO).unwrap(), vec![expected]);
    }

    #[test]
    fn bad_arguments_are_errors_naming_the_field() {
        let err = block_keys(&[1], 0, "p", ZERO, ZERO).unwrap_err().to_string();
        assert!(err.starts_with("block_size:"), "{err}");
        let err = block_keys(&[1], 1, "a\"b", ZERO, ZERO).unwrap_err().to_string();
        assert!(err.starts_with("policy:"), "{err}");
        let err = block_keys(&[1], 1, "p", "ABC", ZERO).unwrap_err().to_string();
        assert!(err.starts_with("state:"), "{err}");
    }
}
