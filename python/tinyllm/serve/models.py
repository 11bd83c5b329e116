"""The request bodies of the token service, as pydantic models (they make `/openapi.json`).

Types are strict: an id is a JSON integer (not `1.5`, not `"7"`, not `true`), a flag a JSON
boolean, and a field the model does not declare is refused, so a typo (`add_specials`) is an
error naming it rather than a silently ignored option.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

_STRICT = ConfigDict(extra="forbid")


class TokenizeRequest(BaseModel):
    """One text (`text`) or many (`texts`), encoded as user text: control tokens typed in the text
    stay text unless `allowed_special` lets them match ("all", or a list of their texts)."""

    model_config = _STRICT
    tokenizer: Optional[StrictStr] = Field(None, description="a served tokenizer's name (default: the first)")
    text: Optional[StrictStr] = None
    texts: Optional[list[StrictStr]] = None
    add_special: StrictBool = Field(False, description="add the tokenizer's BOS/EOS around the ids")
    allowed_special: Any = Field(default_factory=list, description='"all", or a list of special-token texts')
    return_pieces: StrictBool = False
    return_offsets: StrictBool = Field(False, description="[start, end) of each token in code points of the text")


class CountRequest(BaseModel):
    """Token counts of one text or many, without the ids."""

    model_config = _STRICT
    tokenizer: Optional[StrictStr] = None
    text: Optional[StrictStr] = None
    texts: Optional[list[StrictStr]] = None
    add_special: StrictBool = False
    allowed_special: Any = Field(default_factory=list, description='"all", or a list of special-token texts')


class DetokenizeRequest(BaseModel):
    model_config = _STRICT
    tokenizer: Optional[StrictStr] = None
    ids: list[StrictInt]
    skip_special: StrictBool = False


class StreamRequest(BaseModel):
    """Ids decoded one at a time, as a model would emit them, through the stop policy."""

    model_config = _STRICT
    tokenizer: Optional[StrictStr] = None
    ids: list[StrictInt]
    skip_special: StrictBool = False
    stop: list[StrictStr] = Field(default_factory=list, description="stop strings, matched on the output bytes")
    stop_ids: list[StrictInt] = Field(default_factory=list, description="ids that stop as soon as they come")
    max_tokens: Optional[StrictInt] = Field(None, description="a budget of ids (>= 1)")
    strip_stop: StrictBool = Field(True, description="leave the matched stop's text out")


class ChatCompileRequest(BaseModel):
    """Messages compiled with the tokenizer's chat template, bound to the served tokenizer and
    template (`tinyllm.runtime.compile_request`)."""

    model_config = _STRICT
    tokenizer: Optional[StrictStr] = None
    messages: list[Any] = Field(description='[{"role": ..., "content": ...}, ...]')
    mode: StrictStr = Field("generation", description="training, generation or prefill")


class CacheBlocksRequest(BaseModel):
    """Prefix-cache block keys of a compiled request (`tinyllm.runtime.cache_blocks`)."""

    model_config = _STRICT
    request: dict[str, Any] = Field(description="a compiled request, as /v1/chat/compile returns it")
    block_size: StrictInt = Field(description="ids a block (>= 1)")
    key_mode: StrictStr = Field("conservative", description="minimal or conservative")
    model_revision: StrictStr = Field(description="the model's revision, part of every key")
    adapter: Optional[StrictStr] = None
    position_policy: StrictStr = "absolute"
