"""A tokenizer's vocabulary as one row per id, from its semantic components: what an id *is*.

`vocab_rows(components)` lists, for every id 0..V-1, the row's canonical description:

* `piece`: the model's token string (null for an id the model does not hold);
* `score` (Unigram: the exact decimal string) and `type` (SentencePiece piece type) where the
  model has them;
* `merges`: each BPE merge that produces this row, as [rank, left, right] in rank order (a
  `.tiktoken` file can produce one token by several merges);
* `added`: the added-token declaration at this id (content and flags), or absent;
* `role`: the special-token role of a character tokenizer's id.

`model_frame(components)` is everything else the ids depend on: the normalizer, pre-tokenizer,
post-processor, decoder and the model's options without its vocabulary. Two tokenizers whose
frames are equal and whose first V rows are equal give ids 0..V-1 the same meaning; that is what
`TokenizerBase.semantic_prefix(start, stop)` hashes (the rows of [start, stop)).

>>> from tinyllm.eval.seed_candidates import seed_candidates
>>> rows = vocab_rows(seed_candidates()[1].tokenizer.semantic_components())
>>> rows[268], rows[256]["added"]["content"]
({'piece': 'er', 'merges': [[4, 'e', 'r']]}, '<|reserved_0|>')
"""

from __future__ import annotations

from typing import Any

#: The framed-hash domain of `TokenizerBase.semantic_prefix`.
SEMANTIC_PREFIX_DOMAIN = "tokenizer-semantic-prefix-v1"

#: Model keys that hold the vocabulary (rows), not options (frame).
_VOCAB_KEYS = ("vocab", "merges", "pieces", "specials")


def _merged(left: str, right: str, prefix: Any) -> str:
    """The token a BPE merge makes: a continuing-subword prefix on the right part is dropped."""
    if prefix and right.startswith(prefix):
        right = right[len(prefix):]
    return left + right


def vocab_rows(components: dict) -> list[dict]:
    """One row per id (see the module docstring), for every id the tokenizer has."""
    model = components["model"]
    kind = model["type"]
    rows: list[dict]
    if kind == "Bytes":
        from tinyllm.tok.text.byte_alphabet import token_string

        rows = [{"piece": token_string(bytes([b]))} for b in range(256)]
    elif "pieces" in model:  # SentencePiece: [piece, score, type]
        rows = [{"piece": p, "score": s, "type": t} for p, s, t in model["pieces"]]
    elif kind == "Unigram":
        rows = [{"piece": p, "score": s} for p, s in model["vocab"]]
    else:
        rows = [{"piece": p} for p in model["vocab"]]
    if kind == "BPE":
        index = {row["piece"]: i for i, row in enumerate(rows) if row["piece"] is not None}
        prefix = model.get("continuing_subword_prefix")
        for rank, (left, right) in enumerate(model.get("merges", ())):
            i = index.get(_merged(left, right, prefix))
            if i is not None:
                rows[i].setdefault("merges", []).append([rank, left, right])
    for role, i in sorted((model.get("specials") or {}).items()):
        rows[i]["role"] = role
    for token in components.get("added_tokens", ()):
        i = token["id"]
        while len(rows) <= i:  # an added token past the model's ids
            rows.append({"piece": None})
        rows[i]["added"] = {k: v for k, v in token.items() if k != "id"}
    return rows


def model_frame(components: dict) -> dict:
    """The stages and the model's options: what the ids depend on besides their own rows."""
    model = {k: v for k, v in components["model"].items() if k not in _VOCAB_KEYS}
    return {"normalizer": components.get("normalizer"), "pre_tokenizer": components.get("pre_tokenizer"),
            "model": model, "post_processor": components.get("post_processor"),
            "decoder": components.get("decoder")}


def prefix_payload(components: dict, start: int, stop: int) -> dict:
    """What `semantic_prefix(start, stop)` frames: the frame and the rows of ids [start, stop).
    ValueError unless 0 <= start <= stop <= V."""
    rows = vocab_rows(components)
    for name, value in (("start", start), ("stop", stop)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"semantic_prefix: {name}: found {value!r}, expected an int")
    if not 0 <= start <= stop <= len(rows):
        raise ValueError(f"semantic_prefix: found start {start}, stop {stop}; expected "
                         f"0 <= start <= stop <= {len(rows)} (the vocabulary size)")
    return {"frame": model_frame(components), "start": start, "stop": stop, "rows": rows[start:stop]}
