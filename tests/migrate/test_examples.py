"""examples/migration/ is what tools/make_migration_examples.py makes, and its directories
classify and plan as the seed says."""

import importlib.util
from pathlib import Path

from tinyllm.migrate.plan import resize_plan
from tinyllm.migrate.transition import classify_transition

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "migration"


def test_files_are_what_the_generator_makes():
    spec = importlib.util.spec_from_file_location("make_migration_examples",
                                                  ROOT / "tools" / "make_migration_examples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.differences(ROOT) == []


def test_directories_are_an_append_transition():
    t = classify_transition(EXAMPLE / "compact-268", EXAMPLE / "balanced-272")
    assert t.kind == "append" and t.new_ids == (268, 272)
    assert t.old_template_hash == t.new_template_hash is not None


def test_bundles_match_their_directories():
    for directory, bundle in (("compact-268", "r17"), ("balanced-272", "r18")):
        t = classify_transition(EXAMPLE / directory, EXAMPLE / f"{bundle}.bundle.json")
        # The bundle declares the two tokenizer files; the directory also holds its template file.
        assert t.kind == "repackage", t.reasons
        assert any("release files differ: chat_template.jinja" in r for r in t.reasons)


def test_bundles_plan_as_the_seed():
    plan = resize_plan(EXAMPLE / "r17.bundle.json", EXAMPLE / "r18.bundle.json", 64, tied=True, bias=True)
    assert (plan.delta_input, plan.delta_bias, plan.delta_trainable, plan.optimizer_values) == (256, 4, 260, 520)
