"""Runtime identity: requests compiled against a checkpoint, and prefix-cache block keys.

`compile_request` turns messages into a `CompiledRequest` only when the tokenizer and template
are the ones the `Checkpoint` declares; `cache_blocks` keys its complete blocks under a
`ModelState` and a key mode, and `match_prefix` counts the leading blocks a cache holds.
"""

from tinyllm.runtime.prefix_cache import KEY_MODES, KEY_POLICY, ModelState, cache_blocks, match_prefix
from tinyllm.runtime.request import Checkpoint, CompiledRequest, RequestRefused, compile_request

__all__ = ["KEY_MODES", "KEY_POLICY", "Checkpoint", "CompiledRequest", "ModelState", "RequestRefused",
           "cache_blocks", "compile_request", "match_prefix"]
