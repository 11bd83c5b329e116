"""Generate examples/migration/** : the seed's vocabulary migration (seed 003, 0x0C2) as files a
reader can run the CLI on.

* `compact-268/`, `balanced-272/`: model directories (tokenizer.json, generation_config.json,
  chat_template.jinja) of the two seed candidates, with the roles bos 256, eos 257, pad 258;
* `r17.bundle.json`, `r18.bundle.json`: their sealed release bundles
  (`tinyllm.migrate.seed_release`);
* `canary.json`: the seed's three canary slices (all pass), `canary-stop-mismatch.json`: the same
  with one stop mismatch in "controls and stops".

    python3 tools/make_migration_examples.py           # (re)write the files
    python3 tools/make_migration_examples.py --check   # exit 1 if the tree differs

tests/migrate/test_examples.py runs the --check logic, so stale files fail CI.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = Path("examples/migration")

#: The seed's canary (lines 2846-2850): name, cases, rho, tau; every case passes, no mismatches.
CANARY = [("old behaviour", 40, 1.04, 1.10), ("new pieces", 24, 0.88, 1.10), ("controls and stops", 8, 1.00, 1.00)]


def _bundle_tool():
    spec = importlib.util.spec_from_file_location("make_bundle_examples", ROOT / "tools" / "make_bundle_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def canary(stop_mismatch_in: str | None = None) -> list[dict]:
    return [{"name": name, "cases": cases, "passed": cases, "rho": rho, "tau": tau,
             "stop_mismatches": int(name == stop_mismatch_in), "cache_mismatches": 0}
            for name, cases, rho, tau in CANARY]


def build() -> dict[Path, str]:
    """Every generated file (path relative to the repository root) and its text."""
    from tinyllm.eval.seed_candidates import BALANCED_MERGES, COMPACT_MERGES, byte_bpe_document
    from tinyllm.migrate.seed_release import GENERATION_CONFIG, TEMPLATE, seed_release_bundle

    file_text = _bundle_tool().file_text
    out = {}
    for name, merges, revision in (("compact-268", COMPACT_MERGES, "r17"), ("balanced-272", BALANCED_MERGES, "r18")):
        out[EXAMPLE / name / "tokenizer.json"] = file_text(byte_bpe_document(merges))
        out[EXAMPLE / name / "generation_config.json"] = file_text(GENERATION_CONFIG)
        out[EXAMPLE / name / "chat_template.jinja"] = TEMPLATE
        out[EXAMPLE / f"{revision}.bundle.json"] = file_text(seed_release_bundle(name))
    out[EXAMPLE / "canary.json"] = file_text(canary())
    out[EXAMPLE / "canary-stop-mismatch.json"] = file_text(canary("controls and stops"))
    return out


def differences(root: Path = ROOT) -> list[str]:
    return _bundle_tool().differences(root, build(), EXAMPLE, "make_migration_examples.py")


def main(argv: list[str] | None = None) -> int:
    tool = _bundle_tool()
    return tool.run(argv, __doc__.splitlines()[0], differences, lambda: tool.write(ROOT, build()))


if __name__ == "__main__":
    sys.exit(main())
