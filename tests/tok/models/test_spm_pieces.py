"""The piece tables of `SpmPieces`: the fast construction equals the plain comprehensions, and
columns and triples give the same model."""

from __future__ import annotations

from hypothesis import given, strategies as st

from tinyllm.tok.models.spm_pieces import PIECE_TYPES, PieceColumns, SpmPieces

# few texts, so that duplicates and texts both reserved and not are frequent
rows = st.lists(st.tuples(st.sampled_from(["a", "b", "<unk>", "<0x41>", "ab"]), st.floats(-5, 5),
                          st.sampled_from(sorted(PIECE_TYPES))), max_size=9)


@given(rows)
def test_tables_equal_the_plain_comprehensions(pieces):
    m = SpmPieces.__new__(SpmPieces)
    m.id_to_token = [p for p, _, _ in pieces]
    m.types = [t for _, _, t in pieces]
    normal, reserved = m._tables()
    vocab = (1, 4, 5)  # NORMAL, USER_DEFINED, UNUSED
    assert normal == {p: i for i, (p, _, t) in enumerate(pieces) if t in vocab}
    assert reserved == {p: i for i, (p, _, t) in enumerate(pieces) if t not in vocab}
    assert list(normal) == list({p: i for i, (p, _, t) in enumerate(pieces) if t in vocab})  # same order


def _outcome(pieces, byte_fallback):
    try:
        m = SpmPieces(pieces, byte_fallback)
    except ValueError as e:
        return str(e)
    return m.pieces, m.normal, m.reserved, m.vocab, m.unk_id, m.byte_ids


@given(rows, st.booleans())
def test_columns_and_triples_give_the_same_model(pieces, byte_fallback):
    columns = PieceColumns([p for p, _, _ in pieces], [s for _, s, _ in pieces], [t for _, _, t in pieces])
    assert _outcome(columns, byte_fallback) == _outcome(pieces, byte_fallback)
