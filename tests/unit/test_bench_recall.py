"""MEM-44: the recall bench's pure parts: LoCoMo evidence mapping, the plain BM25 baseline, budget filling."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench import recall_data as data
from bench import recall_eval as ev


def test_dia_ids_are_normalized_from_the_dataset_spellings() -> None:
    assert data.normalize_dia_id("D1:3") == ["D1:3"]
    assert data.normalize_dia_id("D8:6; D9:17") == ["D8:6", "D9:17"]
    assert data.normalize_dia_id("D:11:26") == ["D11:26"]
    assert data.normalize_dia_id("D30:05") == ["D30:5"]
    assert data.normalize_dia_id("none") == []


def test_evidence_maps_to_known_turns_once_and_counts_the_rest() -> None:
    known = {"D1:1": 0, "D1:2": 1, "D2:1": 2}
    evidence, missing = data.map_evidence(["D1:2", "D1:2; D2:1", "D9:9", "?"], known)
    assert evidence == ("D1:2", "D2:1")
    assert missing == 2


SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_2": [{"speaker": "Bo", "dia_id": "D2:1", "text": "Later.", "blip_caption": "a dog"}],
        "session_1_date_time": "1 May",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I moved to Lisbon."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Nice!"},
        ],
    },
    "qa": [
        {"question": "Where did Ann move?", "answer": "Lisbon", "evidence": ["D1:1"], "category": 4},
        {"question": "Dog?", "evidence": ["D2:1", "D7:7"], "category": 5},
    ],
}


def test_a_locomo_sample_becomes_turns_in_session_order_with_roles_and_questions() -> None:
    conv = data.locomo_conversation(SAMPLE, "x")
    assert conv.name == "conv-x"
    assert [t["message_id"] for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert [t["role"] for t in conv.turns] == ["user", "assistant", "assistant"]
    assert conv.turns[2]["content"] == "Later. [photo: a dog]"
    first, second = conv.questions
    assert (first.evidence, first.category, first.unmapped) == (("D1:1",), "single-hop", 0)
    assert (second.evidence, second.category, second.unmapped) == (("D2:1",), "adversarial", 1)


def test_locomo_loads_from_the_canonical_list_and_the_flat_layout(tmp_path: Path) -> None:
    listed = tmp_path / "locomo10.json"
    listed.write_text(json.dumps([SAMPLE, SAMPLE]), encoding="utf-8")
    assert [len(c.turns) for c in data.load_locomo(listed)] == [3, 3]
    folder = tmp_path / "flat"
    folder.mkdir()
    flat = {**SAMPLE["conversation"], "qa": SAMPLE["qa"]}  # the repository zip's per-sample layout
    (folder / "26.json").write_text(json.dumps(flat), encoding="utf-8")
    (loaded,) = data.load_locomo(folder)
    assert loaded.name == "26"
    assert len(loaded.questions) == 2


def test_a_missing_dataset_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(data.ENV_VAR, str(tmp_path / "nowhere.json"))
    assert data.locomo_path() is None
    assert data.ENV_VAR in data.LOCOMO_HOWTO


def test_the_tuning_set_is_deterministic_and_its_evidence_names_its_turns() -> None:
    first, again = data.tuning_set(conversations=2), data.tuning_set(conversations=2)
    assert [c.turns for c in first] == [c.turns for c in again]
    for conv in first:
        ids = {t["message_id"] for t in conv.turns}
        assert conv.questions
        assert all(set(q.evidence) <= ids for q in conv.questions)


def test_bm25_terms_are_casefolded_whitespace_words_without_stemming() -> None:
    assert ev.bm25_terms("Where did ANN move, to Lisbon?") == ["where", "did", "ann", "move", "to", "lisbon"]
    assert ev.bm25_terms("cats cat") == ["cats", "cat"]
    assert ev.bm25_terms("我在杭州买了房子") == ["我在杭州买了房子"]


def test_bm25_scores_follow_the_okapi_formula() -> None:
    texts = ["lisbon trip booked", "a cat named nimbus", "the cat sat on the cat mat"]
    index = ev.Bm25(texts)
    scores = index.scores("cat")
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    average = (3 + 4 + 7) / 3
    expected_1 = idf * 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 4 / average))
    expected_2 = idf * 2 * 2.2 / (2 + 1.2 * (1 - 0.75 + 0.75 * 7 / average))
    assert scores[0] == 0
    assert scores[1] == pytest.approx(expected_1)
    assert scores[2] == pytest.approx(expected_2)


def test_bm25_ranking_prefers_rare_terms_and_leaves_out_non_matches() -> None:
    index = ev.Bm25(["the cat", "the dog", "the lisbon flat", "nothing here"])
    assert index.ranking("the lisbon") == [2, 1, 0]  # lisbon is rare; ties on "the" go newer first
    assert index.ranking("zebra") == []


def test_fill_takes_ranked_turns_while_they_fit_and_skips_the_ones_that_do_not() -> None:
    assert ev.fill([3, 0, 2, 1], [5, 50, 10, 40], room=50) == [3, 0]
    assert ev.fill([1, 2, 0], [5, 50, 10], room=20) == [2, 0]


def test_the_tally_pools_evidence_turns_over_questions_and_by_category() -> None:
    tally = ev.Tally()
    tally.add("a", ("x", "y"), {"x"})
    tally.add("b", ("z",), {"z", "x"})
    assert (tally.found, tally.total, tally.questions) == (2, 3, 2)
    assert tally.share == pytest.approx(2 / 3)
    assert ev.share(tally.by_category["a"]) == "0.50"
    assert ev.share([0, 0]) == "n/a"


def test_the_recency_window_keeps_the_newest_turns_within_the_budget() -> None:
    turns = ev.with_counts(
        [{"role": "user", "content": f"message number {i}", "message_id": str(i)} for i in range(50)]
    )
    kept = ev.recency(turns, "question?", 100)
    assert kept
    assert kept == {str(i) for i in range(50 - len(kept), 50)}
    assert sum(t["tokens"] for t in turns if t["message_id"] in kept) <= 100


def test_the_bm25_baseline_fills_the_budget_with_matching_turns_only() -> None:
    turns = ev.with_counts(
        [{"role": "user", "content": "I moved to Lisbon in May", "message_id": "old"}]
        + [{"role": "assistant", "content": f"small talk {i}", "message_id": f"s{i}"} for i in range(30)]
    )
    assert ev.Bm25Baseline()(turns, "Where is Lisbon?", 60) == {"old"}
