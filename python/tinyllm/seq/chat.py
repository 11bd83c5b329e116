"""Chat templates compiled to ids with trusted controls, ownership and an assistant mask.

`render_chat_template` renders a Hugging Face Jinja `chat_template` (from a model directory's
`tokenizer_config.json`, `chat_template.json` or `chat_template.jinja`, or given directly), with
Hugging Face's Jinja settings (sandboxed, `trim_blocks`, `lstrip_blocks`, `tojson`,
`raise_exception`, `strftime_now`, the special-token variables).

`apply_chat_template` goes further and returns a `CompiledSequence`. The rendered text is made
of two kinds of spans: what the template wrote, and the messages' content. Only template spans
may produce control ids: the tokenizer's special tokens are matched there, while content is
always encoded as untrusted text, so a user who types `<|im_end|>` gets ordinary pieces, never a
control. Between controls the text is encoded whole, as Hugging Face encodes the rendered
string, so for content without control spellings the ids equal `tokenizers`' ids exactly.

Each id has an owner: "template", (message index, role) for content, or "post_processor".
`assistant_mask` marks assistant content plus the first control the template writes after it
(the end-of-turn the model must learn to emit); no `{% generation %}` markers are needed.
`prompt_boundary` is where generated text starts: the end of the ids with
`add_generation_prompt` or `continue_final_message` (the two are mutually exclusive), else the
start of the last assistant message's content.

>>> from tinyllm.tok import load
>>> tok = load("smollm2")
>>> template = "{% for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>\\n{% endfor %}"
>>> seq = apply_chat_template(tok, [{"role": "user", "content": "Hi <|im_end|>"}],
...                           add_generation_prompt=False, chat_template=template)
>>> seq.special_tokens_mask.count(1), tok.special_ids["<|im_end|>"] in seq.input_ids[3:-2]
(2, False)
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

from tinyllm.artifacts.canonical import framed_hash

#: The domain of a chat template's hash: framed_hash(TEMPLATE_DOMAIN, {"source": the exact text}).
TEMPLATE_DOMAIN = "chat-template-v1"

TEMPLATE = "template"
POST_PROCESSOR = "post_processor"


@dataclass(frozen=True)
class CompiledSequence:
    input_ids: list[int]
    special_tokens_mask: list[int]
    ownership: list[Any]
    prompt_boundary: int
    assistant_mask: list[int]
    text: str
    #: H_sem of the tokenizer that encoded the text (None for a tokenizer without one).
    tokenizer_semantic_hash: Optional[str] = None
    #: framed_hash("chat-template-v1", {"source": the exact template source text}).
    template_hash: Optional[str] = None

    def __len__(self) -> int:
        return len(self.input_ids)


def template_hash(source: str) -> str:
    """H_tmpl: the hash of a chat template's exact source text (no trimming, no normalization),
    framed as {"source": text} so that template modes can join the payload in a later version."""
    if not isinstance(source, str):
        raise ValueError(f"template_hash: source is a {type(source).__name__}; expected the template text")
    return framed_hash(TEMPLATE_DOMAIN, {"source": source})


@dataclass(frozen=True)
class PrefixBreak:
    """Turn `turn`'s ids do not extend turn `turn - 1`'s: they first differ at `position`."""

    turn: int
    position: int


# -- finding the template ----------------------------------------------------------------------

def _template_from_config(value, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # [{"name": "default", "template": ...}, ...]
        named = {t.get("name"): t.get("template") for t in value if isinstance(t, dict)}
        if isinstance(named.get("default"), str):
            return named["default"]
    raise ValueError(f"{where}: chat_template must be a string or a list with a \"default\" entry, found {value!r}")


def _read_json(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read it as JSON ({e})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return doc


def directory_template(directory: Path) -> tuple[Optional[str], dict]:
    """(template, tokenizer_config) of a model directory; the template may be None."""
    config_path = directory / "tokenizer_config.json"
    config = _read_json(config_path) if config_path.is_file() else {}
    if "chat_template" in config:
        return _template_from_config(config["chat_template"], f"{config_path}: chat_template"), config
    for sub in (directory, directory / "instruct"):
        if (sub / "chat_template.jinja").is_file():
            return (sub / "chat_template.jinja").read_text(encoding="utf-8"), config
        if (sub / "chat_template.json").is_file():
            doc = _read_json(sub / "chat_template.json")
            return _template_from_config(doc.get("chat_template"), f"{sub / 'chat_template.json'}"), config
    return None, config


def template_variables(config: dict) -> dict:
    """bos_token, eos_token, unk_token, pad_token as strings (config values may be AddedToken dicts)."""
    out = {}
    for key in ("bos_token", "eos_token", "unk_token", "pad_token"):
        value = config.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        out[key] = value if isinstance(value, str) else ""
    return out


@functools.lru_cache(maxsize=16)
def _load_cached(path: str, stamp: tuple):
    """A model directory's tokenizer, loaded once per version of its files (`stamp`)."""
    from tinyllm.tok import load

    return load(path)


def _stamp(path: Path) -> tuple:
    files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else []
    return tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files)


def _resolve(model, chat_template: Optional[str]):
    """(tokenizer, template source, special-token variables)."""
    config: dict = {}
    template = None
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        tok = _load_cached(os.fspath(path.resolve()) if path.exists() else os.fspath(model), _stamp(path))
        if path.is_dir():
            template, config = directory_template(path)
        elif path.is_file() and (path.parent / "tokenizer_config.json").is_file():
            template, config = directory_template(path.parent)
        else:
            from tinyllm.tok.load import preset_directory

            directory = preset_directory(os.fspath(model))
            if directory is not None:
                template, config = directory_template(directory)
    else:
        tok = model
        if not callable(getattr(tok, "encode", None)):
            raise ValueError(f"model: expected a model directory, a preset name or a tokenizer, "
                             f"found {type(model).__name__}")
    if chat_template is not None:
        if not isinstance(chat_template, str):
            raise ValueError(f"chat_template: expected a Jinja template string, found {type(chat_template).__name__}")
        template = chat_template
    if template is None:
        raise ValueError("chat_template: the model has no chat template (tokenizer_config.json, chat_template.json "
                         "or chat_template.jinja) and none was given; pass chat_template=")
    return tok, template, template_variables(config)


# -- rendering --------------------------------------------------------------------------------

def _environment():
    import datetime

    from jinja2.exceptions import TemplateError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def _check_messages(messages) -> list[dict]:
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise ValueError(f"messages: expected a list of {{'role': ..., 'content': ...}}, found {type(messages).__name__}")
    out = []
    for k, m in enumerate(messages):
        if not isinstance(m, dict):
            raise ValueError(f"messages[{k}]: expected a dict, found {type(m).__name__}")
        if not isinstance(m.get("role"), str):
            raise ValueError(f"messages[{k}].role: expected a string, found {m.get('role')!r}")
        content = m.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"messages[{k}].content: expected a string or None, found {type(content).__name__}")
        out.append(m)
    return out


@functools.lru_cache(maxsize=32)
def _compiled(template: str):
    return _environment().from_string(template)


def render_template_text(template: str, messages: list[dict], variables: dict, add_generation_prompt: bool,
                         **extra) -> str:
    """The text a Jinja chat template renders for `messages` (Hugging Face's settings), with
    `variables` (see `template_variables`); a template error is a ValueError."""
    from jinja2.exceptions import TemplateError

    try:
        compiled = _compiled(template)
        return compiled.render(messages=messages, add_generation_prompt=add_generation_prompt, **variables, **extra)
    except TemplateError as e:
        raise ValueError(f"chat_template: {type(e).__name__}: {e}") from None


def _check_modes(add_generation_prompt, continue_final_message, messages) -> None:
    if not isinstance(add_generation_prompt, bool):
        raise ValueError(f"add_generation_prompt: expected a bool, found {add_generation_prompt!r}")
    if not isinstance(continue_final_message, bool):
        raise ValueError(f"continue_final_message: expected a bool, found {continue_final_message!r}")
    if add_generation_prompt and continue_final_message:
        raise ValueError("add_generation_prompt and continue_final_message are mutually exclusive: the first opens "
                         "a new assistant message, the second continues the last one")
    if continue_final_message and (not messages or not messages[-1].get("content")):
        raise ValueError("continue_final_message: the last message has no content to continue")


_SENTINEL = "\ue000tinyllm:{}\ue001"


def _spans(template: str, messages: list[dict], variables: dict, add_generation_prompt: bool,
           continue_final_message: bool, extra: dict) -> tuple[str, list[tuple[int, int, Any]]]:
    """The rendered text and its content spans (start, end, (index, role)), in text order."""
    real = render_template_text(template, messages, variables, add_generation_prompt, **extra)
    marked_messages = [dict(m, content=_SENTINEL.format(k)) if isinstance(m.get("content"), str) else m
                       for k, m in enumerate(messages)]
    marked = render_template_text(template, marked_messages, variables, add_generation_prompt, **extra)
    pieces = re.split("\ue000tinyllm:(\\d+)\ue001", marked)
    text, spans = [], []
    at = 0
    for j, piece in enumerate(pieces):
        if j % 2 == 0:
            text.append(piece)
            at += len(piece)
        else:
            k = int(piece)
            content = messages[k]["content"]
            spans.append((at, at + len(content), (k, messages[k]["role"])))
            text.append(content)
            at += len(content)
    rebuilt = "".join(text)
    if rebuilt != real:
        spans = _search_spans(real, messages)  # the template transforms content (trims it, say)
    if continue_final_message:
        last = [s for s in spans if s[2][0] == len(messages) - 1]
        if not last:
            raise ValueError("continue_final_message: the template does not write the last message's content")
        real = real[: last[-1][1]]
        spans = [s for s in spans if s[1] <= len(real)]
    return real, spans


def _search_spans(rendered: str, messages: list[dict]) -> list[tuple[int, int, Any]]:
    spans, cursor = [], 0
    for k, m in enumerate(messages):
        content = m.get("content")
        if not isinstance(content, str) or not content:
            continue
        for candidate in (content, content.strip()):
            at = rendered.find(candidate, cursor) if candidate else -1
            if at >= 0:
                spans.append((at, at + len(candidate), (k, m["role"])))
                cursor = at + len(candidate)
                break
        else:
            raise ValueError(f"messages[{k}].content: the template changes it beyond trimming, so its tokens "
                             "cannot be told apart from the template's")
    return spans


def render_chat_template(model, messages, *, add_generation_prompt: bool = False,
                         continue_final_message: bool = False, chat_template: Optional[str] = None, **extra) -> str:
    """The rendered prompt text (cut after the last message's content with continue_final_message)."""
    messages = _check_messages(messages)
    _check_modes(add_generation_prompt, continue_final_message, messages)
    _, template, variables = _resolve(model, chat_template)
    return _spans(template, messages, variables, add_generation_prompt, continue_final_message, extra)[0]


# -- compiling --------------------------------------------------------------------------------

def _owner_at(spans, position: int):
    for start, end, owner in spans:
        if start <= position < end:
            return owner
    return TEMPLATE


def _encode_by_bytes(tok, text: str, base: int, spans):
    """The fast path: ids from `encode`, each token's start from the running total of its bytes.
    Exact whenever the tokens' bytes spell the text's bytes (byte-level BPE without a
    normalizer); None otherwise, and the offset-tracking encoder decides."""
    token_bytes = getattr(tok, "token_bytes", None)
    if token_bytes is None or getattr(tok, "normalizer", None) is not None \
            or getattr(tok, "decode_depends_on_position", False):
        return None
    raw = text.encode("utf-8", "surrogatepass")
    ids = tok.encode(text)
    starts, at = [], 0
    for i in ids:
        starts.append(at)
        at += len(token_bytes(i))
    if at != len(raw):
        return None  # a byte without a token was dropped, or a piece was rewritten
    char_at = [0] * (len(raw) + 1)  # byte position -> index of the character containing it
    k = 0
    for c, ch in enumerate(text):
        width = len(ch.encode("utf-8", "surrogatepass"))
        char_at[k:k + width] = [c] * width
        k += width
    return [(i, _owner_at(spans, base + char_at[s])) for i, s in zip(ids, starts, strict=True)]


def _encode_stretch(tok, text: str, base: int, spans) -> list[tuple[int, Any]]:
    """(id, owner) for ordinary text: encoded whole, untrusted; owner by each token's first byte."""
    if not text:
        return []
    fast = _encode_by_bytes(tok, text, base, spans)
    if fast is not None:
        return fast
    structured = getattr(tok, "encode_structured", None)
    if structured is None:
        # Tokenizers without offsets: encode each owner's run on its own.
        out, cut = [], sorted({0, len(text), *(max(0, min(len(text), p - base)) for s in spans for p in s[:2])})
        for a, b in itertools.pairwise(cut):
            out += [(i, _owner_at(spans, base + a)) for i in tok.encode(text[a:b])]
        return out
    encoded = structured(text, offset_coordinate="raw_codepoints")
    return [(i, _owner_at(spans, base + start)) for i, (start, _) in zip(encoded.ids, encoded.offsets, strict=True)]


def apply_chat_template(model, messages, *, add_generation_prompt: bool = False, continue_final_message: bool = False,
                        chat_template: Optional[str] = None, add_special: bool = False, **extra) -> CompiledSequence:
    """Render and encode `messages`; see the module docstring.

    With `add_special`, the tokenizer's post-processor also runs, but a control it would add that
    the template already wrote (a BOS, say) is not added again: every control has one owner.
    """
    messages = _check_messages(messages)
    _check_modes(add_generation_prompt, continue_final_message, messages)
    tok, template, variables = _resolve(model, chat_template)
    return _compile(tok, template, variables, messages, add_generation_prompt, continue_final_message, add_special,
                    extra)


def _compile(tok, template: str, variables: dict, messages: list[dict], add_generation_prompt: bool,
             continue_final_message: bool, add_special: bool, extra: dict) -> CompiledSequence:
    from tinyllm.tok.stages.special_policy import find_all

    text, spans = _spans(template, messages, variables, add_generation_prompt, continue_final_message, extra)
    specials = dict(getattr(tok, "special_ids", {}) or {})
    # Controls are matched only where the template wrote the text.
    controls = [(s, e) for s, e in find_all(text, frozenset(specials)) if _owner_at(spans, s) == TEMPLATE
                and all(not (cs < e and s < ce) for cs, ce, _ in spans)]
    ids: list[int] = []
    owners: list[Any] = []
    special_mask: list[int] = []
    cursor = 0
    for start, end in [*controls, (len(text), len(text))]:
        for i, owner in _encode_stretch(tok, text[cursor:start], cursor, spans):
            ids.append(i)
            owners.append(owner)
            special_mask.append(0)
        if end > start:
            ids.append(specials[text[start:end]])
            owners.append(TEMPLATE)
            special_mask.append(1)
        cursor = end
    if add_special:
        ids, owners, special_mask = _post_process_once(tok, ids, owners, special_mask)
    assistant = _assistant_mask(owners, special_mask)
    boundary = len(ids)
    if not (add_generation_prompt or continue_final_message):
        last = [k for k, m in enumerate(messages) if m["role"] == "assistant"]
        if last:
            boundary = next((t for t, o in enumerate(owners) if o == (last[-1], "assistant")), len(ids))
    semantic = getattr(tok, "semantic_hash", None)
    return CompiledSequence(ids, special_mask, owners, boundary, assistant, text,
                            tokenizer_semantic_hash=semantic if isinstance(semantic, str) else None,
                            template_hash=template_hash(template))


#: The entry modes of a conversation: "training" closes every turn, "generation" opens an
#: assistant turn after the last message (Hugging Face's add_generation_prompt), "prefill" leaves
#: the last message open so generation continues it (continue_final_message).
MODES = ("training", "generation", "prefill")


def check_mode(mode) -> str:
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {', '.join(MODES)}, found {mode!r}")
    return mode


class ChatTemplate:
    """A chat template pinned by its exact source text.

    `hash` is H_tmpl, `framed_hash("chat-template-v1", {"source": source})`: any change to the
    text, whitespace included, is a different template. `compile(messages, mode, tokenizer)` is
    `apply_chat_template` in one of the three `MODES`. The special-token variables (`bos_token`,
    ...) come from `variables` when given (`from_dir` reads them from tokenizer_config.json),
    else from the tokenizer's own roles.

    >>> from tinyllm.tok import load
    >>> t = ChatTemplate("{% for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>\\n"
    ...                  "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\\n{% endif %}")
    >>> seq = t.compile([{"role": "user", "content": "Hi"}], "generation", load("smollm2"))
    >>> seq.prompt_boundary == len(seq.input_ids), seq.template_hash == t.hash
    (True, True)
    """

    def __init__(self, source: str, variables: Optional[dict] = None) -> None:
        if not isinstance(source, str) or not source:
            raise ValueError(f"ChatTemplate: source is {source!r}; expected the template's Jinja text")
        if variables is not None and not isinstance(variables, dict):
            raise ValueError(f"ChatTemplate: variables is a {type(variables).__name__}; expected a dict or None")
        self.source = source
        self.variables = variables
        self.hash = template_hash(source)

    @classmethod
    def from_dir(cls, path) -> "ChatTemplate":
        """The template of a model directory (tokenizer_config.json, chat_template.jinja or
        chat_template.json) with its special-token variables."""
        directory = Path(path)
        if not directory.is_dir():
            raise ValueError(f"ChatTemplate.from_dir: {str(directory)!r} is not a directory")
        source, config = directory_template(directory)
        if source is None:
            raise ValueError(f"ChatTemplate.from_dir: {directory} has no chat template (tokenizer_config.json "
                             "chat_template, chat_template.jinja or chat_template.json)")
        return cls(source, template_variables(config))

    def _variables(self, tok) -> dict:
        if self.variables is not None:
            return template_variables(self.variables)
        out = {}
        for name in ("bos", "eos", "unk", "pad"):
            i = getattr(tok, f"{name}_id", None)
            out[f"{name}_token"] = tok.id_to_token(i) if isinstance(i, int) else ""
        return out

    def compile(self, messages, mode: str = "training", tokenizer=None, *, add_special: bool = False,
                **extra) -> CompiledSequence:
        """The `CompiledSequence` of `messages` in `mode` (see `MODES`), encoded by `tokenizer`."""
        check_mode(mode)
        if tokenizer is None or not callable(getattr(tokenizer, "encode", None)):
            raise ValueError(f"tokenizer: expected a tokenizer, found {type(tokenizer).__name__}")
        messages = _check_messages(messages)
        generation, prefill = mode == "generation", mode == "prefill"
        _check_modes(generation, prefill, messages)
        return _compile(tokenizer, self.source, self._variables(tokenizer), messages, generation, prefill,
                        add_special, extra)

    def __repr__(self) -> str:
        return f"ChatTemplate(hash={self.hash[:12]}..., {len(self.source)} characters)"


def _post_process_once(tok, ids, owners, special_mask):
    processor = getattr(tok, "post_processor", None)
    if processor is None:
        return ids, owners, special_mask
    wrapped, inserted = processor.apply(list(ids))
    k = inserted.index(False) if False in inserted else len(wrapped)
    prefix = wrapped[:k]
    suffix = wrapped[k + len(ids):] if ids else []
    if prefix and ids[: len(prefix)] == prefix:
        prefix = []  # the template already wrote it
    if suffix and ids[len(ids) - len(suffix):] == suffix:
        suffix = []
    return (prefix + ids + suffix, [POST_PROCESSOR] * len(prefix) + owners + [POST_PROCESSOR] * len(suffix),
            [1] * len(prefix) + special_mask + [1] * len(suffix))


def _assistant_mask(owners, special_mask) -> list[int]:
    mask = [0] * len(owners)
    closing = False
    for t, owner in enumerate(owners):
        if isinstance(owner, tuple) and owner[1] == "assistant":
            mask[t] = 1
            closing = True
        elif closing and owner == TEMPLATE and special_mask[t] == 1:
            mask[t] = 1  # the end-of-turn control that closes the assistant message
            closing = False
        elif isinstance(owner, tuple):
            closing = False
    return mask


def check_prefix_stable(turns, model=None, *, chat_template: Optional[str] = None, **extra) -> list[PrefixBreak]:
    """The turns whose ids do not start with the previous turn's ids (so a KV cache built for
    turn N cannot be reused for turn N + 1); empty when every turn extends the last.

    `turns` holds successive states of one conversation: id lists, `CompiledSequence`s, or message
    lists (compiled with `model` and `chat_template`, without a generation prompt).

    >>> check_prefix_stable([[1, 2], [1, 2, 3], [1, 5, 3, 4]])
    [PrefixBreak(turn=2, position=1)]
    """
    if isinstance(turns, (str, dict)) or not isinstance(turns, Sequence):
        raise ValueError(f"turns: expected a list of id lists or message lists, found {type(turns).__name__}")
    compiled = []
    for k, turn in enumerate(turns):
        if isinstance(turn, CompiledSequence):
            compiled.append(list(turn.input_ids))
        elif isinstance(turn, Sequence) and all(isinstance(i, int) and not isinstance(i, bool) for i in turn):
            compiled.append(list(turn))
        elif model is None:
            raise ValueError(f"turns[{k}]: a message list needs model= to be compiled")
        else:
            compiled.append(apply_chat_template(model, turn, chat_template=chat_template, **extra).input_ids)
    breaks = []
    for k in range(1, len(compiled)):
        before, now = compiled[k - 1], compiled[k]
        # The common prefix: zip stops at the shorter list on purpose (no strict=True here).
        n = next((p for p, (a, b) in enumerate(zip(before, now)) if a != b), min(len(before), len(now)))
        if n < len(before):
            breaks.append(PrefixBreak(k, n))
    return breaks
