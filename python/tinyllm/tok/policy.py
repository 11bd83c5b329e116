"""Special-token policy: which ids are BOS, EOS, PAD, UNK and EOT, and which ids stop generation.

The roles come from the model directory, next to the tokenizer file:

* `generation_config.json`: `bos_token_id`, `eos_token_id` (an int or a list of ints),
  `pad_token_id`;
* `tokenizer_config.json`: `bos_token`, `eos_token`, `pad_token`, `unk_token`, `eot_token`, each a
  token string or Hugging Face's `{"content": ...}` object, mapped through the vocabulary;
* the tokenizer's own file: the model's unknown token (`model.unk_token` / `unk_id`) and the roles
  of a `tinyllm_char.json`.

Rules (every one declared, none guessed):

* A role named by two sources must name the same id, else ValueError naming both files and the
  field. For EOS, a list in `generation_config.json` holds every id that ends a sequence; a single
  EOS named elsewhere must be one of them.
* `eos_id` is the single EOS (tokenizer_config.json or the tokenizer's own file), else the first
  id of `eos_token_id`; `eos_ids` is every EOS id, sorted.
* `stop_ids` is the sorted tuple of the EOS ids plus `eot_id`.
* `unk_id` here is the declared unknown token: the model's own when it has one (a config naming a
  different one is a conflict), else the one `tokenizer_config.json` names. The tokenizer's
  `unk_id` attribute keeps its protocol meaning (the id `encode` gives unknown input), so for a
  byte-level model without an unknown token it stays None even when the config names one;
  `tok.special_token_policy.unk_id` holds the declaration, and it is part of the semantic hash.
* A token in `tokenizer_config.json` that is not in the vocabulary, or an id outside it, is a
  ValueError naming the file and the field. Without either file every role is None and
  `stop_ids` is ().

>>> vocab = {"<s>": 0, "</s>": 1, "<pad>": 2}.get
>>> p = resolve_policy(vocab, 3, generation_config={"eos_token_id": [1, 2]},
...                    tokenizer_config={"bos_token": {"content": "<s>"}, "eos_token": "</s>"})
>>> p.bos_id, p.eos_id, p.eos_ids, p.stop_ids
(0, 1, (1, 2), (1, 2))
>>> resolve_policy(vocab, 3, generation_config={"bos_token_id": 1}, tokenizer_config={"bos_token": "<s>"})
Traceback (most recent call last):
...
ValueError: generation_config.json: bos_token_id = 1 conflicts with tokenizer_config.json: bos_token = '<s>' (id 0); expected the same id from both files
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping, Optional

from tinyllm._io import atomic_write_json, read_json_file
from tinyllm._record import record

GENERATION_CONFIG = "generation_config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"

#: tokenizer_config.json field -> role
CONFIG_TOKEN_FIELDS = {"bos_token": "bos", "eos_token": "eos", "pad_token": "pad", "unk_token": "unk",
                       "eot_token": "eot"}
#: generation_config.json field -> role
GENERATION_ID_FIELDS = {"bos_token_id": "bos", "eos_token_id": "eos", "pad_token_id": "pad"}


@record
class SpecialTokenPolicy:
    """The resolved roles (ids or None) and the ids that stop generation."""

    bos_id: Optional[int] = None
    eos_id: Optional[int] = None
    eos_ids: tuple = ()
    pad_id: Optional[int] = None
    unk_id: Optional[int] = None
    eot_id: Optional[int] = None

    @property
    def stop_ids(self) -> tuple:
        """The EOS ids plus EOT, sorted, each once."""
        ids = set(self.eos_ids)
        if self.eot_id is not None:
            ids.add(self.eot_id)
        return tuple(sorted(ids))

    def to_json(self) -> dict:
        """The policy in the canonical profile (every role explicit; lists sorted)."""
        return {"bos_id": self.bos_id, "eos_id": self.eos_id, "eos_ids": list(self.eos_ids),
                "pad_id": self.pad_id, "unk_id": self.unk_id, "eot_id": self.eot_id,
                "stop_ids": list(self.stop_ids)}


EMPTY_POLICY = SpecialTokenPolicy()


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_id(value: Any, vocab_size: int, where: str) -> int:
    if not _is_int(value):
        raise ValueError(f"{where} = {_show(value)}; expected an integer token id or null")
    if not 0 <= value < vocab_size:
        raise ValueError(f"{where} = {value} is out of range for a vocabulary of {vocab_size} ids "
                         f"(0..{vocab_size - 1})")
    return value


def _object(doc: Any, source: str) -> Mapping:
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise ValueError(f"{source}: expected a JSON object, found {type(doc).__name__}")
    return doc


def read_policy_files(directory: str | os.PathLike) -> tuple[Optional[dict], Optional[dict]]:
    """(generation_config, tokenizer_config) of a model directory, each None when absent."""
    out = []
    for name in (GENERATION_CONFIG, TOKENIZER_CONFIG):
        file = os.path.join(directory, name)
        out.append(read_json_file(file) if os.path.isfile(file) else None)
    return out[0], out[1]


def with_policy_files(directory: str | os.PathLike, build: Callable[..., Any]) -> Any:
    """`build(generation_config=..., tokenizer_config=...)` with `directory`'s config files (each
    None when absent); an error while the files are in play is prefixed with the directory."""
    generation_config, tokenizer_config = read_policy_files(directory)
    try:
        return build(generation_config=generation_config, tokenizer_config=tokenizer_config)
    except ValueError as e:
        if generation_config is None and tokenizer_config is None:
            raise
        raise ValueError(f"{directory}: {e}") from None


def write_policy_files(directory: str | os.PathLike, policy: SpecialTokenPolicy,
                       id_to_token: Callable[[int], str]) -> None:
    """Write `policy` into `directory`'s generation_config.json (ids) and tokenizer_config.json
    (token strings), so that `read_policy_files` + `resolve_policy` give it back. Fields of those
    files that are not roles (a chat template, `model_max_length`, ...) are kept; nothing is
    written for a policy without roles. Both writes are atomic."""
    if policy == EMPTY_POLICY:
        return
    ids = {"bos_token_id": policy.bos_id, "pad_token_id": policy.pad_id,
           "eos_token_id": list(policy.eos_ids) if len(policy.eos_ids) > 1 else policy.eos_id}
    tokens = {field: id_to_token(getattr(policy, f"{role}_id"))
              for field, role in CONFIG_TOKEN_FIELDS.items() if getattr(policy, f"{role}_id") is not None}
    for name, roles in ((GENERATION_CONFIG, ids), (TOKENIZER_CONFIG, tokens)):
        file = os.path.join(directory, name)
        doc = dict(_object(read_json_file(file), str(file))) if os.path.isfile(file) else {}
        doc.update({field: value for field, value in roles.items() if value is not None})
        atomic_write_json(file, doc, indent=2)


def resolve_policy(token_to_id: Callable[[str], Optional[int]], vocab_size: int, *,
                   generation_config: Optional[Mapping] = None, tokenizer_config: Optional[Mapping] = None,
                   own: Optional[Mapping[str, tuple[str, int]]] = None,
                   generation_source: str = GENERATION_CONFIG,
                   tokenizer_source: str = TOKENIZER_CONFIG) -> SpecialTokenPolicy:
    """Resolve the roles from the two configs and the tokenizer's `own` declarations
    (role -> (where, id), e.g. {"unk": ("tokenizer.json: model.unk_token", 0)}); see the module
    docstring for the rules. ValueError names the file and the field."""
    gen = _object(generation_config, generation_source)
    cfg = _object(tokenizer_config, tokenizer_source)
    # role -> [(where, id)] of the single-valued declarations, in order of precedence
    named: dict[str, list[tuple[str, int]]] = {role: [] for role in ("bos", "eos", "pad", "unk", "eot")}
    for role, (where, i) in (own or {}).items():
        named[role].append((where, i))
    for field, role in CONFIG_TOKEN_FIELDS.items():
        value = cfg.get(field)
        where = f"{tokenizer_source}: {field}"
        if value is None:
            continue
        if isinstance(value, Mapping):
            if "content" not in value:
                raise ValueError(f"{where}: {_show(value)} has no content; expected a token string or "
                                 "an object with a content string")
            value = value["content"]
        if not isinstance(value, str):
            raise ValueError(f"{where} = {_show(value)}; expected a token string or an object with a content string")
        i = token_to_id(value)
        if i is None:
            raise ValueError(f"{where} = {value!r} is not in the vocabulary; expected a token of the tokenizer")
        named[role].append((f"{where} = {value!r} (id {i})", i))
    listed: dict[str, tuple[str, list[int]]] = {}
    for field, role in GENERATION_ID_FIELDS.items():
        value = gen.get(field)
        where = f"{generation_source}: {field}"
        if value is None:
            continue
        if role == "eos" and isinstance(value, list):
            if not value:
                raise ValueError(f"{where} = []; expected an integer id or a non-empty list of ids")
            ids = [_check_id(v, vocab_size, f"{where}[{k}]") for k, v in enumerate(value)]
        else:
            ids = [_check_id(value, vocab_size, where)]
        listed[role] = (f"{where} = {_show(value)}", ids)

    resolved: dict[str, Optional[int]] = {}
    for role, declarations in named.items():
        first = declarations[0] if declarations else None
        for where, i in declarations[1:]:
            if i != first[1]:
                raise ValueError(f"{first[0]} conflicts with {where}; expected the same id from both files")
        resolved[role] = first[1] if first else None
    eos_ids: tuple = ()
    for role, (where, ids) in listed.items():
        single = named[role][0] if named[role] else None
        if single is not None and single[1] not in ids:
            relation = "conflicts with" if len(ids) == 1 else "does not contain the id of"
            raise ValueError(f"{where} {relation} {single[0]}; expected the same id from both files")
        if resolved[role] is None:
            resolved[role] = ids[0]
        if role == "eos":
            eos_ids = tuple(sorted(set(ids)))
    if resolved["eos"] is not None:
        eos_ids = tuple(sorted(set(eos_ids) | {resolved["eos"]}))
    return SpecialTokenPolicy(bos_id=resolved["bos"], eos_id=resolved["eos"], eos_ids=eos_ids,
                              pad_id=resolved["pad"], unk_id=resolved["unk"], eot_id=resolved["eot"])
