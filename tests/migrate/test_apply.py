"""apply_plan on numpy arrays: the seed's compact-268 -> balanced-272 example by hand, each
refusal by the field it names, an untied head, and a property against a pure-Python mean."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyllm.migrate.apply import Applied, ApplyError, apply_plan
from tinyllm.migrate.plan import Plan, RowInit

V_OLD, V_NEW = 268, 272

# The seed's appended rows (0x0C2): each new id from its immediate old decomposition.
SEED_ROWS = (
    RowInit(268, "er", (101, 114)),
    RowInit(269, "re", (114, 101)),
    RowInit(270, "==", (61, 61)),
    RowInit(271, "10", (49, 48)),
)


def seed_plan(d=64, *, tied=True, bias=True, rows=SEED_ROWS):
    return Plan(old_vocab_size=V_OLD, new_vocab_size=V_NEW, d_model=d, tied=tied, bias=bias,
                optimizer_slots=2, new_row_initialization=tuple(rows))


def table(v=V_OLD, d=64, offset=0.0):
    # E[i, j] = i + j/64 (+ offset): exactly representable, so each hand-computed mean of two
    # rows is exact too and the checks can use equality.
    return np.arange(v, dtype=np.float64)[:, None] + np.arange(d, dtype=np.float64)[None, :] / 64 + offset


def seed_state(d=64):
    rng = np.random.default_rng(3)
    return {
        "embedding": {"exp_avg": rng.normal(size=(V_OLD, d)), "exp_avg_sq": rng.random((V_OLD, d)), "step": 7},
        "bias": {"exp_avg": rng.normal(size=V_OLD), "exp_avg_sq": rng.random(V_OLD), "step": np.array(7.0)},
    }


def copy_state(state):
    return {name: {slot: (v.copy() if isinstance(v, np.ndarray) else v) for slot, v in slots.items()}
            for name, slots in state.items()}


def test_seed_example_by_hand():
    plan = seed_plan()
    embedding, bias, state = table(), np.linspace(-1.0, 1.0, V_OLD), seed_state()
    before = (embedding.copy(), bias.copy(), copy_state(state))

    out = apply_plan(plan, embedding, bias=bias, optimizer_state=state)

    assert isinstance(out, Applied)
    assert out.embedding.shape == (V_NEW, 64) and out.embedding.dtype == np.float64
    assert np.array_equal(out.embedding[:V_OLD], embedding)
    j = np.arange(64) / 64
    assert np.array_equal(out.embedding[268], 107.5 + j)  # (101 + 114) / 2
    assert np.array_equal(out.embedding[269], 107.5 + j)  # (114 + 101) / 2: order does not matter
    assert np.array_equal(out.embedding[270], 61.0 + j)   # (61 + 61) / 2
    assert np.array_equal(out.embedding[271], 48.5 + j)   # (49 + 48) / 2

    assert out.bias.shape == (V_NEW,)
    assert np.array_equal(out.bias[:V_OLD], bias) and np.array_equal(out.bias[V_OLD:], np.zeros(4))

    # Tied: the head is the resized input table itself.
    assert out.output is out.embedding
    assert np.shares_memory(out.output, out.embedding)

    new_values = 0
    for name, slots in state.items():
        for slot, old in slots.items():
            grown = out.optimizer_state[name][slot]
            if isinstance(old, np.ndarray) and old.ndim > 0:
                assert grown.shape == (V_NEW,) + old.shape[1:] and grown.dtype == old.dtype
                assert np.array_equal(grown[:V_OLD], old)
                assert not grown[V_OLD:].any()
                new_values += grown.size - old.size
            else:
                assert np.array_equal(grown, old)
    assert out.optimizer_state["embedding"]["step"] == 7
    # 2 slots x (4 x 64 embedding + 4 bias) = 2 x 260.
    assert new_values == plan.optimizer_values == 520

    # Nothing was modified, and nothing returned aliases an input.
    assert np.array_equal(embedding, before[0]) and np.array_equal(bias, before[1])
    for name, slots in before[2].items():
        for slot, value in slots.items():
            assert np.array_equal(state[name][slot], value)
    assert not np.shares_memory(out.embedding, embedding) and not np.shares_memory(out.bias, bias)
    assert out.optimizer_state["bias"]["step"] is not state["bias"]["step"]
    assert out.optimizer_state is not state and out.optimizer_state["embedding"] is not state["embedding"]


def test_applied_is_frozen():
    out = apply_plan(seed_plan(4, bias=False), table(d=4))
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.embedding = None
    assert out.bias is None and out.optimizer_state is None


@pytest.mark.parametrize("output", ["none", "same", "view"])
def test_tied_output_may_be_the_embedding(output):
    embedding = table(d=8)
    given_output = {"none": None, "same": embedding, "view": embedding[:]}[output]
    out = apply_plan(seed_plan(8, bias=False), embedding, output=given_output)
    assert out.output is out.embedding and np.shares_memory(out.output, out.embedding)


def test_untied_output_rows_follow_their_own_table():
    plan = seed_plan(8, tied=False, bias=False)
    embedding, output = table(d=8), table(d=8, offset=1000.0)
    state = {"embedding": {"m": np.ones((V_OLD, 8))}, "output": {"m": np.full((V_OLD, 8), 2.0)}}
    out = apply_plan(plan, embedding, output=output, optimizer_state=state)

    assert out.output is not out.embedding and not np.shares_memory(out.output, out.embedding)
    assert not np.shares_memory(out.output, output)
    assert np.array_equal(out.output[:V_OLD], output)
    j = np.arange(8) / 64
    for row, expected in zip(SEED_ROWS, (107.5, 107.5, 61.0, 48.5)):
        assert np.array_equal(out.output[row.new_id], 1000.0 + expected + j)
        assert np.array_equal(out.embedding[row.new_id], expected + j)
    assert np.array_equal(out.optimizer_state["output"]["m"][V_OLD:], np.zeros((4, 8)))
    assert np.array_equal(out.optimizer_state["output"]["m"][:V_OLD], state["output"]["m"])


def test_float32_stays_float32():
    out = apply_plan(seed_plan(4, bias=False), table(d=4).astype(np.float32))
    assert out.embedding.dtype == np.float32
    assert np.array_equal(out.embedding[268], np.float32(107.5) + np.arange(4, dtype=np.float32) / 64)


def test_no_rows_appended():
    plan = Plan(old_vocab_size=5, new_vocab_size=5, d_model=3, tied=True, bias=True)
    embedding, bias = table(5, 3), np.ones(5)
    out = apply_plan(plan, embedding, bias=bias, optimizer_state={"bias": {"m": np.ones(5)}})
    assert np.array_equal(out.embedding, embedding) and not np.shares_memory(out.embedding, embedding)
    assert np.array_equal(out.bias, bias) and out.optimizer_state["bias"]["m"].shape == (5,)


def _rows(*replacements, drop=()):
    """SEED_ROWS with some rows replaced (by position) and some dropped."""
    rows = list(SEED_ROWS)
    for k, row in replacements:
        rows[k] = row
    return tuple(r for k, r in enumerate(rows) if k not in drop)


def _bad_slot():
    state = seed_state(8)
    state["embedding"]["exp_avg"] = np.zeros((V_OLD, 7))
    return state


# (case id, plan keyword arguments, apply_plan keyword arguments, text the message must hold)
REFUSALS = [
    ("new id below V_old", dict(rows=_rows((0, RowInit(267, "er", (101, 114))))), {},
     "plan.new_row_initialization[0].new_id"),
    ("new id at V_new", dict(rows=_rows((3, RowInit(272, "10", (49, 48))))), {},
     "plan.new_row_initialization[3].new_id"),
    ("source id == V_old", dict(rows=_rows((0, RowInit(268, "er", (101, 268))))), {},
     "plan.new_row_initialization[0].source_old_ids[1]"),
    ("negative source id", dict(rows=_rows((2, RowInit(270, "==", (-1, 61))))), {},
     "plan.new_row_initialization[2].source_old_ids[0]"),
    ("no source ids", dict(rows=_rows((1, RowInit(269, "re", ())))), {},
     "plan.new_row_initialization[1].source_old_ids"),
    ("duplicate new id", dict(rows=_rows((1, RowInit(268, "re", (114, 101))))), {},
     "plan.new_row_initialization[1].new_id"),
    ("missing coverage", dict(rows=_rows(drop=(3,))), {}, "plan.new_row_initialization"),
    ("wrong embedding shape", {}, dict(embedding=table(d=7)), "embedding.shape"),
    ("embedding not 2-D", {}, dict(embedding=np.zeros(V_OLD * 8)), "embedding.shape"),
    ("embedding too few rows", {}, dict(embedding=table(V_OLD - 1, 8)), "embedding.shape"),
    ("integer embedding", {}, dict(embedding=np.zeros((V_OLD, 8), dtype=np.int64)), "embedding.dtype"),
    ("embedding a list", {}, dict(embedding=table(d=8).tolist()), "embedding"),
    ("bias missing", {}, dict(bias=None), "bias"),
    ("bias extra", dict(bias=False), dict(bias=np.zeros(V_OLD)), "bias"),
    ("bias wrong shape", {}, dict(bias=np.zeros(V_OLD + 1)), "bias.shape"),
    ("tied with separate output", {}, dict(output=table(d=8)),
     "plan.tied is true but output is a separate array"),
    ("tied with a slice of the embedding", {}, dict(output="slice"), "output.shape"),
    ("untied without output", dict(tied=False), {}, "output"),
    ("untied output sharing the embedding", dict(tied=False), dict(output="same"), "output"),
    ("untied output wrong shape", dict(tied=False), dict(output=table(d=9)), "output.shape"),
    ("optimizer slot of the wrong shape", {}, dict(optimizer_state=_bad_slot()),
     "optimizer_state.embedding.exp_avg"),
    ("optimizer output on a tied plan", {}, dict(optimizer_state={"output": {"exp_avg": table(d=8)}}),
     "optimizer_state.output"),
    ("optimizer bias without a bias", dict(bias=False), dict(bias=None, optimizer_state=seed_state(8)),
     "optimizer_state.bias"),
    ("optimizer unknown parameter", {}, dict(optimizer_state={"lm_head": {}}), "optimizer_state.lm_head"),
    ("optimizer slots not a mapping", {}, dict(optimizer_state={"embedding": [table(d=8)]}),
     "optimizer_state.embedding"),
]


@pytest.mark.parametrize("plan_kw, call_kw, field", [case[1:] for case in REFUSALS],
                         ids=[case[0] for case in REFUSALS])
def test_refusals_name_the_field(plan_kw, call_kw, field):
    plan = seed_plan(8, **plan_kw)
    kwargs = dict(embedding=table(d=8), bias=np.zeros(V_OLD) if plan.bias else None)
    kwargs.update(call_kw)
    if isinstance(kwargs.get("output"), str):
        kwargs["output"] = {"same": kwargs["embedding"], "slice": kwargs["embedding"][:-1]}[kwargs["output"]]
    with pytest.raises(ValueError) as excinfo:
        apply_plan(plan, **kwargs)
    assert excinfo.type is ApplyError
    assert field in str(excinfo.value)
    assert "expected" in str(excinfo.value)


def test_refusal_messages_say_what_was_found():
    with pytest.raises(ApplyError, match=r"plan\.new_row_initialization\[0\]\.source_old_ids\[1\] = 268; "
                                         r"expected an old id in 0\.\.267"):
        apply_plan(seed_plan(8, rows=_rows((0, RowInit(268, "er", (101, 268))))), table(d=8), bias=np.zeros(V_OLD))
    with pytest.raises(ApplyError, match=r"embedding\.shape = \(268, 7\); expected \(268, 8\)"):
        apply_plan(seed_plan(8), table(d=7), bias=np.zeros(V_OLD))
    with pytest.raises(ApplyError, match=r"ids 271;"):
        apply_plan(seed_plan(8, rows=_rows(drop=(3,))), table(d=8), bias=np.zeros(V_OLD))


def test_numpy_inputs_never_import_torch():
    # In a fresh interpreter: this test process may have imported torch for other tests.
    code = (
        "import sys, numpy as np\n"
        "from tinyllm.migrate.apply import apply_plan\n"
        "from tinyllm.migrate.plan import Plan, RowInit\n"
        "plan = Plan(2, 3, 2, tied=True, bias=False, new_row_initialization=(RowInit(2, 'x', (0, 1)),))\n"
        "apply_plan(plan, np.ones((2, 2)))\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@st.composite
def random_migrations(draw):
    v_old = draw(st.integers(1, 20))
    delta = draw(st.integers(0, 6))
    d = draw(st.integers(1, 8))
    tied = draw(st.booleans())
    new_ids = draw(st.permutations(range(v_old, v_old + delta)))
    rows = tuple(RowInit(new_id, f"p{new_id}", tuple(draw(st.lists(st.integers(0, v_old - 1), min_size=1, max_size=5))))
                 for new_id in new_ids)
    values = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    tables = [draw(st.lists(st.lists(values, min_size=d, max_size=d), min_size=v_old, max_size=v_old))
              for _ in range(1 if tied else 2)]
    plan = Plan(old_vocab_size=v_old, new_vocab_size=v_old + delta, d_model=d, tied=tied, bias=False,
                new_row_initialization=rows)
    return plan, tables


@given(random_migrations())
def test_new_rows_are_the_mean_of_their_sources(migration):
    plan, tables = migration
    arrays = [np.array(t, dtype=np.float64) for t in tables]
    out = apply_plan(plan, arrays[0], output=None if plan.tied else arrays[1])
    results = [out.embedding] if plan.tied else [out.embedding, out.output]
    for rows, result in zip(tables, results):
        assert result.shape == (plan.new_vocab_size, plan.d_model)
        assert result[: plan.old_vocab_size].tolist() == rows
        scale = max([1.0] + [abs(x) for row in rows for x in row])
        for init in plan.new_row_initialization:
            for j in range(plan.d_model):
                expected = sum(rows[i][j] for i in init.source_old_ids) / len(init.source_old_ids)
                assert abs(float(result[init.new_id][j]) - expected) <= 1e-12 * scale
    if plan.tied:
        assert out.output is out.embedding
