"""Compiled requests bound to a checkpoint: the sequence compiler's side of runtime identity.

A model checkpoint was trained with one tokenizer and one chat template. A request compiled with
another tokenizer or template gives ids the model never learned, and nothing downstream can tell:
the ids are still integers below the vocabulary size. So the binding is checked when the request
is compiled, not hoped for:

    compile_request(messages, mode, tokenizer, template, checkpoint) -> CompiledRequest

refuses (raises `RequestRefused`, a ValueError naming the requirement and both values)

* `tokenizer_semantic_hash`: the tokenizer's H_sem differs from the checkpoint's;
* `template_hash`: the template's H_tmpl differs from the checkpoint's;
* `aligned_metadata`: the special-token mask or the ownership has another length than the ids,
  or the prompt boundary lies outside them;
* `prompt_boundary`: in "generation" or "prefill" mode the prompt does not end at the last id
  (the model would be asked to continue from the middle of its own prompt);
* `vocab_size`: an id is not below the checkpoint's vocabulary size.

Seed 003's runtime example is the assistant prefill of its conversation example, on byte ids with
the grammar's controls from 256 and a model of 266 rows: sixty ids, the prompt ends at 60.

>>> from tinyllm.seq.grammar import SEED_CONTROLS, ConversationGrammar, Message
>>> from tinyllm.tok import ByteTokenizer
>>> grammar, tok = ConversationGrammar(ByteTokenizer(), SEED_CONTROLS), ByteTokenizer()
>>> checkpoint = Checkpoint(tok.semantic_hash, grammar.hash, vocab_size=266)
>>> messages = [Message("user", "What is 2 + 2? Reply in JSON"), Message("assistant", '{answer:"')]
>>> request = compile_request(messages, "prefill", tok, grammar, checkpoint)
>>> len(request.input_ids), request.prompt_boundary, request.sequence_ownership[-1]
(60, 60, 'messages[1]:assistant')
>>> compile_request(messages, "prefill", tok, grammar, Checkpoint(tok.semantic_hash, grammar.hash, vocab_size=256))
Traceback (most recent call last):
tinyllm.runtime.request.RequestRefused: compile_request: vocab_size: input_ids[0] = 256, expected every id below 256 (the checkpoint's vocab_size)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from tinyllm.runtime.prefix_cache import ModelState, check_state_fields
from tinyllm.seq.chat import POST_PROCESSOR, TEMPLATE, CompiledSequence, check_mode

#: Ids travel as unsigned 32-bit integers into the cache-key core; no vocabulary comes near.
MAX_ID = 2**32 - 1


class RequestRefused(ValueError):
    """A request that cannot run on the checkpoint: `.requirement` names the broken rule,
    `.found` and `.expected` the two values."""

    def __init__(self, requirement: str, found: Any, expected: Any, detail: str = "") -> None:
        self.requirement = requirement
        self.found = found
        self.expected = expected
        super().__init__(f"compile_request: {requirement}: {detail or f'found {found!r}, expected {expected!r}'}")


def _hex_hash(value, where: str) -> str:
    if not (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
        raise ValueError(f"{where}: expected a hash of 64 lowercase hex digits, found {value!r}")
    return value


def owner_label(owner) -> str:
    """An owner of `CompiledSequence.ownership` as a string: "template", "post_processor" or
    "messages[k]:role"."""
    if owner in (TEMPLATE, POST_PROCESSOR):
        return owner
    if isinstance(owner, tuple) and len(owner) == 2:
        return f"messages[{owner[0]}]:{owner[1]}"
    return str(owner)


@dataclass(frozen=True)
class CompiledRequest:
    """The exact sequence a runtime runs: ids, where the prompt ends, per-id metadata, and the
    identities of the tokenizer and template that made it. Validated on creation."""

    input_ids: tuple[int, ...]
    prompt_boundary: int
    special_tokens_mask: tuple[int, ...]
    sequence_ownership: tuple[str, ...]
    tokenizer_semantic_hash: str
    template_hash: str

    def __post_init__(self) -> None:
        ids = tuple(self.input_ids)
        for k, i in enumerate(ids):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i <= MAX_ID:
                raise ValueError(f"CompiledRequest.input_ids[{k}]: expected an id in 0..2**32-1, found {i!r}")
        mask = tuple(int(m) for m in self.special_tokens_mask)
        owners = tuple(self.sequence_ownership)
        for name, values in (("special_tokens_mask", mask), ("sequence_ownership", owners)):
            if len(values) != len(ids):
                raise ValueError(f"CompiledRequest.{name}: {len(values)} entries, expected {len(ids)} (one per id)")
        if any(m not in (0, 1) for m in mask):
            raise ValueError(f"CompiledRequest.special_tokens_mask: expected 0 or 1 per id, found {mask!r}")
        if any(not isinstance(o, str) for o in owners):
            raise ValueError("CompiledRequest.sequence_ownership: expected a string per id")
        b = self.prompt_boundary
        if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b <= len(ids):
            raise ValueError(f"CompiledRequest.prompt_boundary: expected 0 <= boundary <= {len(ids)}, found {b!r}")
        _hex_hash(self.tokenizer_semantic_hash, "CompiledRequest.tokenizer_semantic_hash")
        _hex_hash(self.template_hash, "CompiledRequest.template_hash")
        object.__setattr__(self, "input_ids", ids)
        object.__setattr__(self, "special_tokens_mask", mask)
        object.__setattr__(self, "sequence_ownership", owners)

    @classmethod
    def from_sequence(cls, seq: CompiledSequence, tokenizer_semantic_hash: Optional[str] = None,
                      template_hash: Optional[str] = None) -> "CompiledRequest":
        """The request of a compiled sequence; a hash given here must equal the one the sequence
        recorded (a sequence without one needs it given)."""
        hashes = []
        for name, given in (("tokenizer_semantic_hash", tokenizer_semantic_hash), ("template_hash", template_hash)):
            recorded = getattr(seq, name, None)
            if given is not None and recorded is not None and given != recorded:
                raise ValueError(f"CompiledRequest.from_sequence: {name}: the sequence recorded {recorded}, "
                                 f"found {given} given")
            if given is None and recorded is None:
                raise ValueError(f"CompiledRequest.from_sequence: {name}: the sequence records none; pass it")
            hashes.append(given if given is not None else recorded)
        return cls(tuple(seq.input_ids), seq.prompt_boundary, tuple(seq.special_tokens_mask),
                   tuple(owner_label(o) for o in seq.ownership), *hashes)

    def __len__(self) -> int:
        return len(self.input_ids)


@dataclass(frozen=True)
class Checkpoint:
    """What a model checkpoint declares about its inputs: the tokenizer and template it was
    trained with, its vocabulary size (embedding rows), and what else changes its state."""

    tokenizer_semantic_hash: str
    template_hash: str
    vocab_size: int
    model_revision: Optional[str] = None
    adapter: Optional[str] = None
    position_policy: str = "absolute"
    extra_inputs: Any = None

    def __post_init__(self) -> None:
        _hex_hash(self.tokenizer_semantic_hash, "Checkpoint.tokenizer_semantic_hash")
        _hex_hash(self.template_hash, "Checkpoint.template_hash")
        v = self.vocab_size
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"Checkpoint.vocab_size: expected an integer >= 1, found {v!r}")
        if self.model_revision is not None and not isinstance(self.model_revision, str):
            raise ValueError(f"Checkpoint.model_revision: expected a string or None, found {self.model_revision!r}")
        check_state_fields("Checkpoint", self.adapter, self.position_policy, self.extra_inputs)

    def model_state(self) -> ModelState:
        """The state-changing identity z of this checkpoint, for `cache_blocks` (it needs the
        model revision)."""
        if not self.model_revision:
            raise ValueError("Checkpoint.model_revision: None; expected the model's revision to key its cache")
        return ModelState(self.model_revision, self.adapter, self.position_policy, self.extra_inputs)

    @classmethod
    def from_bundle(cls, bundle: dict, **state) -> "Checkpoint":
        """The checkpoint of a bundle (`tinyllm.artifacts.bundle`): its `checkpoint.tokenizer_hash`,
        `checkpoint.template_hash` and `checkpoint.input_embedding_rows`; `state` sets the
        optional fields (model_revision=..., adapter=...). Run `reconcile` first to prove the
        bundle holds together; this reads the declarations only."""
        checkpoint = bundle.get("checkpoint") if isinstance(bundle, dict) else None
        if not isinstance(checkpoint, dict):
            raise ValueError(f"Checkpoint.from_bundle: checkpoint: expected an object, found {checkpoint!r}")
        values = []
        for key in ("tokenizer_hash", "template_hash", "input_embedding_rows"):
            if key not in checkpoint:
                raise ValueError(f"Checkpoint.from_bundle: checkpoint.{key}: missing")
            values.append(checkpoint[key])
        return cls(*values, **state)

    @classmethod
    def from_config(cls, config, manifest, template, **state) -> "Checkpoint":
        """A checkpoint from a model's `config.json` (its `vocab_size`), a tokenizer manifest
        (`tinyllm manifest`; its `semantic_hash`) and the template (a `ChatTemplate`, a template
        hash, or None to read `template_hash` from the manifest). `config` and `manifest` are
        dicts or paths to the JSON files."""
        config = _json_object(config, "config")
        manifest = _json_object(manifest, "manifest")
        if "vocab_size" not in config:
            raise ValueError("Checkpoint.from_config: config.vocab_size: missing; expected the model's vocabulary size")
        if "semantic_hash" not in manifest:
            raise ValueError("Checkpoint.from_config: manifest.semantic_hash: missing; expected a tinyllm manifest")
        if template is None:
            if "template_hash" not in manifest:
                raise ValueError("Checkpoint.from_config: template: None and manifest.template_hash is missing; "
                                 "pass the ChatTemplate or its hash")
            template_hash = manifest["template_hash"]
        else:
            template_hash = template if isinstance(template, str) else getattr(template, "hash", None)
        return cls(manifest["semantic_hash"], template_hash, config["vocab_size"], **state)

    @classmethod
    def from_model_dir(cls, path, **state) -> "Checkpoint":
        """A model directory's checkpoint: `config.json`, the manifest of its tokenizer files
        (computed) and its chat template."""
        from tinyllm.artifacts.manifest import manifest
        from tinyllm.seq.chat import ChatTemplate

        directory = Path(path)
        if not (directory / "config.json").is_file():
            raise ValueError(f"Checkpoint.from_model_dir: {directory}: no config.json; expected a model directory")
        return cls.from_config(directory / "config.json", manifest(directory), ChatTemplate.from_dir(directory),
                               **state)


def _json_object(value, name: str) -> dict:
    if isinstance(value, (str, os.PathLike)):
        try:
            value = json.loads(Path(value).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"Checkpoint: {name}: cannot read {os.fspath(value)!r} as JSON ({e})") from None
    if not isinstance(value, dict):
        raise ValueError(f"Checkpoint: {name}: expected a JSON object or a path to one, found {type(value).__name__}")
    return value


def _require(condition: bool, requirement: str, found, expected, detail: str = "") -> None:
    if not condition:
        raise RequestRefused(requirement, found, expected, detail)


def compile_request(messages, mode: str, tokenizer, template, checkpoint: Checkpoint) -> CompiledRequest:
    """Compile `messages` in `mode` with `template` (a `ChatTemplate` or `ConversationGrammar`:
    anything with `.hash` and `.compile(messages, mode, tokenizer)`) and `tokenizer`, bound to
    `checkpoint`; see the module docstring for what is refused."""
    check_mode(mode)
    if not isinstance(checkpoint, Checkpoint):
        raise ValueError(f"checkpoint: expected a Checkpoint, found {type(checkpoint).__name__}")
    semantic = getattr(tokenizer, "semantic_hash", None)
    _require(semantic == checkpoint.tokenizer_semantic_hash, "tokenizer_semantic_hash", semantic,
             checkpoint.tokenizer_semantic_hash)
    template_hash = getattr(template, "hash", None)
    _require(template_hash == checkpoint.template_hash, "template_hash", template_hash, checkpoint.template_hash)

    compiled = template.compile(messages, mode, tokenizer)
    n = len(compiled.input_ids)
    for name in ("special_tokens_mask", "ownership"):
        size = len(getattr(compiled, name))
        _require(size == n, "aligned_metadata", size, n, f"{name} has {size} entries, expected {n} (one per id)")
    boundary = compiled.prompt_boundary
    _require(isinstance(boundary, int) and 0 <= boundary <= n, "aligned_metadata", boundary, f"0..{n}",
             f"prompt_boundary = {boundary!r}, expected 0 <= boundary <= {n}")
    if mode in ("generation", "prefill"):
        _require(boundary == n, "prompt_boundary", boundary, n,
                 f"prompt_boundary = {boundary}, expected {n} = len(input_ids) in {mode} mode")
    for k, i in enumerate(compiled.input_ids):
        _require(0 <= i < checkpoint.vocab_size, "vocab_size", i, checkpoint.vocab_size,
                 f"input_ids[{k}] = {i}, expected every id below {checkpoint.vocab_size} (the checkpoint's vocab_size)")
    return CompiledRequest.from_sequence(compiled, semantic, template_hash)
