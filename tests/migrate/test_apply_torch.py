"""apply_plan on torch tensors: the seed's example by hand, the tied head's shared storage, and
that dtype, requires_grad and Parameter-ness survive. Skips when torch (an optional extra) is
not installed."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (an optional extra): the torch path of "
                                            "apply_plan is untested here")

from tinyllm.migrate.apply import ApplyError, apply_plan  # noqa: E402
from tinyllm.migrate.plan import Plan, RowInit  # noqa: E402

V_OLD, V_NEW, D = 268, 272, 8

SEED_ROWS = (
    RowInit(268, "er", (101, 114)),
    RowInit(269, "re", (114, 101)),
    RowInit(270, "==", (61, 61)),
    RowInit(271, "10", (49, 48)),
)


def seed_plan(*, tied=True, bias=True):
    return Plan(old_vocab_size=V_OLD, new_vocab_size=V_NEW, d_model=D, tied=tied, bias=bias,
                optimizer_slots=2, new_row_initialization=SEED_ROWS)


def table(offset=0.0):
    # E[i, j] = i + j/64: exact in float64, so the hand-computed means compare with equality.
    rows = torch.arange(V_OLD, dtype=torch.float64)[:, None]
    return rows + torch.arange(D, dtype=torch.float64)[None, :] / 64 + offset


def test_seed_example_by_hand():
    embedding = torch.nn.Parameter(table())
    bias = torch.nn.Parameter(torch.linspace(-1.0, 1.0, V_OLD, dtype=torch.float64))
    state = {"embedding": {"exp_avg": torch.ones(V_OLD, D, dtype=torch.float64),
                           "exp_avg_sq": torch.ones(V_OLD, D, dtype=torch.float64),
                           "step": torch.tensor(7.0)},
             "bias": {"exp_avg": torch.ones(V_OLD, dtype=torch.float64),
                      "exp_avg_sq": torch.ones(V_OLD, dtype=torch.float64)}}
    before = (embedding.detach().clone(), bias.detach().clone())

    out = apply_plan(seed_plan(), embedding, output=embedding, bias=bias, optimizer_state=state)

    assert tuple(out.embedding.shape) == (V_NEW, D) and out.embedding.dtype == torch.float64
    assert isinstance(out.embedding, torch.nn.Parameter) and out.embedding.requires_grad
    assert torch.equal(out.embedding[:V_OLD].detach(), before[0])
    j = torch.arange(D, dtype=torch.float64) / 64
    for new_id, expected in ((268, 107.5), (269, 107.5), (270, 61.0), (271, 48.5)):
        assert torch.equal(out.embedding[new_id].detach(), expected + j)

    assert torch.equal(out.bias[:V_OLD].detach(), before[1])
    assert torch.equal(out.bias[V_OLD:].detach(), torch.zeros(4, dtype=torch.float64))

    # Tied: the head is the resized input table, sharing its storage.
    assert out.output is out.embedding
    assert out.output.data_ptr() == out.embedding.data_ptr()
    assert out.embedding.data_ptr() != embedding.data_ptr()

    new_values = 0
    for name, slots in state.items():
        for slot, old in slots.items():
            grown = out.optimizer_state[name][slot]
            if old.dim() > 0:
                assert torch.equal(grown[:V_OLD], old) and not grown[V_OLD:].any()
                new_values += grown.numel() - old.numel()
    assert new_values == seed_plan().optimizer_values == 520
    assert out.optimizer_state["embedding"]["step"].item() == 7.0

    # The inputs are untouched.
    assert embedding.shape == (V_OLD, D) and torch.equal(embedding.detach(), before[0])
    assert torch.equal(bias.detach(), before[1])


def test_untied_and_plain_tensors():
    embedding, output = table(), table(offset=1000.0)
    out = apply_plan(seed_plan(tied=False, bias=False), embedding, output=output)
    assert out.output is not out.embedding and out.output.data_ptr() != out.embedding.data_ptr()
    assert not isinstance(out.embedding, torch.nn.Parameter) and not out.embedding.requires_grad
    j = torch.arange(D, dtype=torch.float64) / 64
    assert torch.equal(out.output[268], 1000.0 + 107.5 + j)
    assert torch.equal(out.output[:V_OLD], output)


def test_tied_with_separate_output_is_refused():
    embedding = table()
    with pytest.raises(ApplyError, match="plan.tied is true but output is a separate array"):
        apply_plan(seed_plan(bias=False), embedding, output=embedding.clone())
