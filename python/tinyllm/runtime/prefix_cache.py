"""Prefix-cache block keys: which cached model state a request may reuse.

A cache of model state (keys and values of attention) is keyed by blocks of `block_size` ids.
A block's key must name everything that decides the state at its end: the ids of the block,
every id before it, and the state-changing identity z of the model (revision, adapter, position
policy, extra inputs). Never decoded text: two id sequences can decode to the same text.

    K_-1 = ROOT
    K_i  = framed_hash("prefix-cache-block-v1",
                       {"block": {"ids": the ids of block i, "policy": KEY_POLICY + "/" + key_mode,
                                  "state": H(z)},
                        "parent": K_i-1})

The parent makes the key a prefix key: change block j and K_j changes, and through the chain
every later key. Only complete blocks are keyed; the tail (len % block_size ids) stays with the
request. z is hashed once per request (`state_hash`), so each block hashes a few hundred bytes.
The block is nested so that its canonical JSON comes before the parent's: the Rust core hashes
that part of every block in parallel and only the parent along the chain.

Two key modes (seed 003, 0x0D):

* "minimal": z is the model state only, so requests from a new tokenizer or template release
  that provably give the same ids reuse the cache;
* "conservative": z also holds the tokenizer's semantic hash and the template hash, so a release
  never shares state with another (simpler isolation and rollback, fewer hits).

The policy string is part of every key: a new key policy can never hit an old entry.

>>> from tinyllm.runtime.request import CompiledRequest
>>> r = CompiledRequest(tuple(range(60)), 60, (0,) * 60, ("template",) * 60, "a" * 64, "b" * 64)
>>> blocks, tail = cache_blocks(r, 8, "minimal", ModelState("model@1"))
>>> len(blocks), tail, blocks[2][1]
(7, (56, 57, 58, 59), (16, 17, 18, 19, 20, 21, 22, 23))
>>> match_prefix({key for _, _, key in blocks[:3]}, blocks)
3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tinyllm import _native
from tinyllm.artifacts.canonical import canonical_bytes, framed_hash

#: The hash domain of a block key and of the state it hangs from.
BLOCK_DOMAIN = "prefix-cache-block-v1"
STATE_DOMAIN = "prefix-cache-state-v1"
#: The versioned key policy; with the key mode it is part of every key.
KEY_POLICY = "tinyllm-prefix-cache-v1"
KEY_MODES = ("minimal", "conservative")
#: The parent of block 0.
ROOT = "0" * 64


@dataclass(frozen=True)
class ModelState:
    """The state-changing identity z of a model: anything that changes the cached state for the
    same ids. `extra_inputs` is any canonical-JSON value naming extra model inputs (the hash of
    an image, say), None without them."""

    model_revision: str
    adapter: Optional[str] = None
    position_policy: str = "absolute"
    extra_inputs: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.model_revision, str) or not self.model_revision:
            raise ValueError(f"ModelState.model_revision: expected a non-empty string, found {self.model_revision!r}")
        check_state_fields("ModelState", self.adapter, self.position_policy, self.extra_inputs)

    def fields(self) -> dict:
        return {"model_revision": self.model_revision, "adapter": self.adapter,
                "position_policy": self.position_policy, "extra_inputs": self.extra_inputs}


def check_state_fields(owner: str, adapter, position_policy, extra_inputs) -> None:
    """The optional state fields a `ModelState` and a `Checkpoint` share; ValueError names them."""
    if adapter is not None and not isinstance(adapter, str):
        raise ValueError(f"{owner}.adapter: expected a string or None, found {adapter!r}")
    if not isinstance(position_policy, str) or not position_policy:
        raise ValueError(f"{owner}.position_policy: expected a non-empty string, found {position_policy!r}")
    try:
        canonical_bytes(extra_inputs)
    except ValueError as e:
        raise ValueError(f"{owner}.extra_inputs: {e}") from None


def state_identity(request, key_mode: str, model_state: ModelState) -> dict:
    """z for `key_mode`: the model state, plus the release identity when conservative."""
    if key_mode not in KEY_MODES:
        raise ValueError(f"key_mode: expected one of {', '.join(KEY_MODES)}, found {key_mode!r}")
    if not isinstance(model_state, ModelState):
        raise ValueError(f"model_state: expected a ModelState, found {type(model_state).__name__}")
    z = {"model": model_state.fields()}
    if key_mode == "conservative":
        z["tokenizer_semantic_hash"] = request.tokenizer_semantic_hash
        z["template_hash"] = request.template_hash
    return z


def state_hash(z: dict) -> str:
    return framed_hash(STATE_DOMAIN, z)


def reference_block_keys(ids, block_size: int, policy: str, state: str, root: str = ROOT) -> list[str]:
    """The keys of the complete blocks of `ids`, one framed hash each (the readable reference of
    the Rust `prefix_block_keys`)."""
    keys, parent = [], root
    for start in range(0, len(ids) - block_size + 1, block_size):
        block = {"ids": list(ids[start:start + block_size]), "policy": policy, "state": state}
        payload = {"block": block, "parent": parent}
        parent = framed_hash(BLOCK_DOMAIN, payload)
        keys.append(parent)
    return keys


def block_keys(ids, block_size: int, policy: str, state: str, root: str = ROOT) -> list[str]:
    """`reference_block_keys`, computed by the Rust core when it is built."""
    if _native.core is None:
        return reference_block_keys(ids, block_size, policy, state, root)
    return _native.core.prefix_block_keys(ids, block_size, policy, state, root)


def cache_blocks(request, block_size: int, key_mode: str, model_state: ModelState) -> tuple[list, tuple]:
    """(blocks, tail) of a `CompiledRequest`: blocks are (index, ids, key) for each complete block
    of `block_size` ids, the tail the ids after the last one (never admitted to the cache)."""
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size: expected an integer >= 1, found {block_size!r}")
    ids = getattr(request, "input_ids", None)
    if not isinstance(ids, tuple):
        raise ValueError(f"request: expected a CompiledRequest, found {type(request).__name__}")
    policy = f"{KEY_POLICY}/{key_mode}"
    keys = block_keys(ids, block_size, policy, state_hash(state_identity(request, key_mode, model_state)))
    # zip(*[iter(ids)] * B) cuts the complete blocks in C: a third faster than slicing per block.
    blocks = list(zip(range(len(keys)), zip(*[iter(ids)] * block_size), keys))
    return blocks, ids[len(keys) * block_size:]


def match_prefix(cached_keys, blocks) -> int:
    """How many leading blocks have their key in `cached_keys` (a set, or any container)."""
    n = 0
    for _, _, key in blocks:
        if key not in cached_keys:
            break
        n += 1
    return n
