"""The steps after the model as data (priorkit/decode/steps.py) and a dictionary's matches as
tagged spans with their concept IDs (priorkit/decode/dictionary.py)."""
from __future__ import annotations

import numpy as np
import pytest

from priorkit.decode.dictionary import concept_ids, group_entities
from priorkit.decode.spans import Span
from priorkit.decode.steps import (Decode, DocumentPass, Fragments, Merge, Mix, after_decode, describe, from_data,
                                   mix, normalised, ordered, to_data)
from priorkit.errors import PriorkitError
from priorkit.providers.base import Match


def test_steps_are_put_in_their_one_order_and_round_trip_as_data():
    given = [DocumentPass(20), Decode("viterbi", 1.0), Mix(("a", "b"), (0.6, 0.4)), Fragments()]
    steps = ordered(given, ["a", "b"])
    assert [s.kind for s in steps] == ["mix", "decode", "fragments", "document"]
    data = to_data(steps)
    assert data[0] == {"kind": "mix", "members": ["a", "b"], "weights": [0.6, 0.4]}
    assert tuple(from_data(data)) == steps
    assert describe(steps) == "mix a x0.6 + b x0.4 -> viterbi (O bias 1) -> fragments joined -> document pass (20 sentences)"


@pytest.mark.parametrize("steps, members, dictionary, message", [
    ([Merge("union")], ["a"], True, "no decode step"),
    ([Decode(), Decode("viterbi")], ["a"], True, "decode appears twice"),
    ([Decode(), Merge("union")], ["a"], False, "merge read a dictionary, and there is none"),
    ([Decode()], ["a", "b"], True, r"members \['a', 'b'\] need a mix step"),
    ([Mix(("a", "c"), (1, 1)), Decode()], ["a", "b"], True, "need a mix step that names each of them once"),
    ([Mix(("a", "b"), (1,)), Decode()], ["a", "b"], True, "1 weights for 2 members"),
    ([Mix(("a", "b"), (1, -1)), Decode()], ["a", "b"], True, "non-negative with a positive sum"),
    ([Decode("beam")], ["a"], True, "decodes by 'beam'"),
    ([Decode("argmax", float("nan"))], ["a"], True, "o_bias must be a finite number"),
    ([Decode(), Merge("both")], ["a"], True, "merges by 'both'"),
    ([Decode(), DocumentPass(-2)], ["a"], True, "window -2 must be an integer >= -1"),
])
def test_bad_steps_stop_with_the_step_named(steps, members, dictionary, message):
    with pytest.raises(PriorkitError, match=message):
        ordered(steps, members, dictionary)


def test_from_data_names_the_bad_step():
    with pytest.raises(PriorkitError, match=r"steps\[1\]: step decode has no field bias"):
        from_data([{"kind": "mix", "members": ["a", "b"], "weights": [1, 1]}, {"kind": "decode", "bias": 1}])
    with pytest.raises(PriorkitError, match=r"steps\[0\]: a step is a mapping with kind one of"):
        from_data([{"kind": "propagate"}])


def test_mix_weighs_and_sums_and_keeps_the_rows_one_model_lost():
    a = [np.log(np.array([[0.9, 0.1], [0.2, 0.8]]))]
    b = [np.log(np.array([[0.5, 0.5]]))]  # this model cut the second word off
    w = normalised([3, 1])
    assert w == [0.75, 0.25]
    (got,) = mix([a, b], w)
    np.testing.assert_allclose(got[0], 0.75 * a[0][0] + 0.25 * b[0][0])
    np.testing.assert_allclose(got[1], 0.75 * a[0][1])


def test_after_decode_runs_merge_fragments_and_document_in_order_and_says_who_added_what():
    model = [["B-D", "O", "B-D", "O", "O", "O"]]
    sentence = [["B-D", "I-D", "I-D", "O", "B-C", "O"]]
    document = [["B-D", "I-D", "I-D", "O", "B-C", "B-D"]]
    steps = ordered([Decode(), Fragments(), DocumentPass(3)], ["m"])
    tags, sources = after_decode(steps, model, sentence, document, sources=True)
    assert tags == [["B-D", "I-D", "I-D", "O", "O", "B-D"]]  # C was a sentence-level match: not the pass's
    assert sources == [{Span("D", 0, 3): "fragments", Span("D", 5, 6): "document"}]
    union = ordered([Decode(), Merge("union")], ["m"])
    tags, sources = after_decode(union, [["O", "O", "B-D", "O", "O", "O"]], sentence, None, sources=True)
    assert tags == [["O", "O", "B-D", "O", "B-C", "O"]]  # the D match overlaps the model's: left out
    assert sources == [{Span("D", 2, 3): "model", Span("C", 4, 5): "dictionary"}]
    with pytest.raises(PriorkitError, match="step document needs the dictionary's document-level tags"):
        after_decode(steps, model, sentence, None)


def test_concept_ids_come_from_every_match_of_the_exact_span_and_type():
    matches = [Match(0, 2, ("HP:1",), "hpo"), Match(0, 2, ("MESH:C1",), "mesh:C"), Match(0, 2, ("MESH:D9",), "mesh:D"),
               Match(3, 4, ("MESH:D1", "MESH:D2"), "mesh:D"), Match(3, 4, ("X:1",), "other")]
    types = {"mesh:D": "Chemical", "mesh:C": "Disease", "hpo": "Disease"}
    ids = concept_ids(matches, types)
    assert ids == {Span("Disease", 0, 2): ("MESH:C1", "HP:1"), Span("Chemical", 0, 2): ("MESH:D9",),
                   Span("Chemical", 3, 4): ("MESH:D1", "MESH:D2")}
    # the tags take the first group in the map's order; the IDs follow the tagged type
    assert group_entities(matches, 4, types) == ["B-Chemical", "I-Chemical", "O", "B-Chemical"]
