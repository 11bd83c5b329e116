"""The house stays in order: the public names import, and no module imports itself in a circle.

Imports are read from the source with `ast`, function-level ones included: a lazy import that hides
a circle is still a circle.
"""

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "tinyllm"

PUBLIC = {
    "tinyllm.tok": ["load", "BPETokenizer", "WordPieceTokenizer", "UnigramTokenizer", "CharTokenizer",
                    "IncrementalDecoder", "ByteTokenizer", "Tokenizer", "check_ids", "encode_chunked",
                    "split_whitespace_or_nonwhitespace"],
    "tinyllm.tok.base": ["Tokenizer", "check_ids", "ByteTokenizer"],
    "tinyllm.tok.char": ["CharTokenizer"],
    "tinyllm.tok.stream": ["IncrementalDecoder", "IllFormedUtf8Error"],
    "tinyllm.tok.long_inputs": ["split_whitespace_or_nonwhitespace", "encode_chunked", "cut_rule"],
    "tinyllm.seq.chat": ["apply_chat_template", "render_chat_template", "check_prefix_stable", "CompiledSequence",
                         "ChatTemplate"],
    "tinyllm.seq.stop": ["StopPolicy", "OutputStream", "OutputResult"],
    "tinyllm.seq.collate": ["Record", "collate_padded", "collate_packed"],
    "tinyllm.seq.grammar": ["ConversationGrammar", "Controls", "Message", "FixedGrammarExceedsContext"],
    "tinyllm.seq.stream_encode": ["StreamEncoder"],
    "tinyllm.seq.encoded": ["EncodedSequence"],
    "tinyllm.runtime": ["compile_request", "CompiledRequest", "Checkpoint", "RequestRefused", "ModelState",
                        "cache_blocks", "match_prefix"],
    "tinyllm.eval": ["evaluate", "Report", "Record", "validate_split_manifest", "read_manifest", "write_manifest",
                     "vocab_cost", "positions", "prefix_stable", "select", "Selection", "Gates", "exposure",
                     "reachable"],
    "tinyllm.migrate": ["classify_transition", "Transition", "check_append_only", "AppendOnlyError", "resize_plan",
                        "Plan", "RowInit", "apply_plan", "Applied", "ReleaseBundle", "CanarySlice", "Admission",
                        "admit_candidate", "mechanical_checks", "ReleaseStore"],
    "tinyllm.corpus": ["encode_dataset", "verify_dataset", "load_dataset", "Document", "EncodedDocument",
                       "encode_document", "join_encoded", "read_documents", "split_by_group", "source_mix",
                       "source_stats", "exact_dedup_key", "shingles", "jaccard", "MinHasher", "LSH", "dedup"],
    "tinyllm.serve": ["create_app", "Limits", "DEFAULT_TOKENIZERS", "RequestError"],
    "tinyllm.cli": ["main"],
}


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_still_import(module):
    loaded = importlib.import_module(module)
    missing = [name for name in PUBLIC[module] if not hasattr(loaded, name)]
    assert missing == []


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The package modules `path` imports, at any depth of its code. `from pkg import name`
    counts as an import of `pkg.name` when that is a module, else of `pkg`."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in modules else base)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules it imports; package faces (`__init__`) are left out, as they only
    re-export what their modules define."""
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {m: imported_modules(p, modules) - {n for n, q in paths.items() if q.name == "__init__.py"}
            for m, p in paths.items() if p.name != "__init__.py"}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles_counting_function_level_imports():
    graph = import_graph()
    assert len(graph) > 30  # the graph really was read
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_test_helpers_are_not_shipped():
    shipped = {p.stem for p in PACKAGE.rglob("*.py")}
    assert not shipped & {"stress", "unigram_exact"}
