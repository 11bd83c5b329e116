"""RobertaProcessing, BertProcessing and Sequence of processors: ids, type ids and the special
mask of single and pair encodes equal Hugging Face's."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tinyllm.tok.load import tokenizer_from_document

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import Tokenizer, models, pre_tokenizers, processors  # noqa: E402

WORDS = ["[UNK]", "[CLS]", "[SEP]", "<s>", "</s>", "a", "b", "c", "hello", "world", "##s"]
VOCAB = {w: i for i, w in enumerate(WORDS)}
TEMPLATE = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                         special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
PROCESSORS = {
    "roberta": processors.RobertaProcessing(("</s>", 4), ("<s>", 3)),
    "roberta-no-trim": processors.RobertaProcessing(("</s>", 4), ("<s>", 3), trim_offsets=False, add_prefix_space=False),
    "bert": processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1)),
    "sequence-bytelevel-template": processors.Sequence([processors.ByteLevel(), TEMPLATE]),
    "sequence-bert-roberta": processors.Sequence([processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1)),
                                                  processors.RobertaProcessing(("</s>", 4), ("<s>", 3))]),
    "sequence-template-bert": processors.Sequence([TEMPLATE, processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1))]),
    "sequence-empty": processors.Sequence([]),
}


def pair_of(processor):
    hf = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    hf.post_processor = processor
    ours = tokenizer_from_document(json.loads(hf.to_str()))
    return hf, ours


words = st.lists(st.sampled_from(["a", "b", "c", "hello", "worlds", "x"]), max_size=5).map(" ".join)


@pytest.mark.parametrize("name", sorted(PROCESSORS))
@given(a=words, b=st.one_of(st.none(), words), add_special=st.booleans())
def test_processor_equals_hf(name, a, b, add_special):
    hf, ours = pair_of(PROCESSORS[name])
    want = hf.encode(a, b, add_special_tokens=add_special)
    got = ours.encode_pair(a, b, add_special)
    assert got.ids == want.ids
    assert got.type_ids == want.type_ids
    assert [int(m) for m in got.special_tokens_mask] == want.special_tokens_mask
    if b is None:
        assert ours.encode(a, add_special=add_special) == want.ids
    if add_special:
        assert ours.decode(got.ids) is not None


@pytest.mark.parametrize("name", sorted(PROCESSORS))
def test_processor_round_trips_through_save(name, tmp_path):
    hf, ours = pair_of(PROCESSORS[name])
    ours.save(tmp_path)
    again = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert again.encode("hello a", "b c").ids == hf.encode("hello a", "b c").ids


@pytest.mark.parametrize("processor, where", [
    ({"type": "BertProcessing", "sep": ["[SEP]", 99], "cls": ["[CLS]", 1]}, "post_processor.sep[1]: 99 is not the id of a token"),
    ({"type": "Sequence", "processors": [{"type": "RobertaProcessing", "sep": ["</s>", 4], "cls": ["<s>", 77]}]},
     "post_processor.processors[0].cls[1]: 77 is not the id of a token"),
    ({"type": "BertProcessing", "sep": ["[SEP]"], "cls": ["[CLS]", 1]}, "post_processor.sep"),
])
def test_processor_special_ids_must_exist(processor, where):
    hf, _ = pair_of(None)
    doc = json.loads(hf.to_str())
    doc["post_processor"] = processor
    with pytest.raises(ValueError, match=None) as e:
        tokenizer_from_document(doc)
    assert where in str(e.value)
