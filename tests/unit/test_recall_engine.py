"""MEM-1..3: the recall index's pure part: analysis, segment codec, merge policy, BM25."""

from __future__ import annotations

import random

from chat_core.engine import recall
from chat_core.engine.recall import analysis, segments
from chat_core.engine.recall.segments import Doc, DocTerms, Segment


def test_english_words_lose_stopwords_and_plurals() -> None:
    assert analysis.terms("The user's Cats liked the boxes in 2023!") == [
        "user",
        "cat",
        "liked",
        "box",
        "2023",
    ]


def test_chinese_runs_become_overlapping_bigrams() -> None:
    assert analysis.terms("我喜欢北京") == ["我喜", "喜欢", "欢北", "北京"]


def test_japanese_kana_and_kanji_become_bigrams_and_one_character_stays() -> None:
    assert analysis.terms("東京に行く") == ["東京", "京に", "に行", "行く"]
    assert analysis.terms("日") == ["日"]


def test_mixed_scripts_split_at_the_script_boundary_and_nfkc_folds_width() -> None:
    assert analysis.terms("Ｔｏｋｙｏ東京tower") == ["tokyo", "東京", "tower"]


def test_terms_are_stored_as_hashes_only() -> None:
    tf = analysis.analyse("secret secret word")
    assert all(isinstance(term, int) and 0 <= term < 2**32 for term in tf)
    assert sorted(tf.values()) == [1, 2]


def _docs(count: int, start: int = 1) -> list[DocTerms]:
    rng = random.Random(count)
    out = []
    for seq in range(start, start + count):
        tf = {rng.randrange(2**32): rng.randint(1, 4) for _ in range(rng.randint(1, 12))}
        out.append(DocTerms(Doc(seq, seq - 1, seq % 5, sum(tf.values()), seq * 3), tf))
    return out


def test_codec_round_trips_documents_and_postings() -> None:
    docs = _docs(40)
    segment = Segment(recall.encode(docs))
    assert segment.docs == [d.doc for d in docs]
    assert [dict(d.tf) for d in segment.doc_terms()] == [dict(d.tf) for d in docs]
    term = next(iter(docs[7].tf))
    assert (7, docs[7].tf[term]) in segment.postings(term)
    assert segment.postings(12345) == [] or 12345 in {t for d in docs for t in d.tf}


def test_merge_keeps_every_document() -> None:
    a, b = _docs(8, 1), _docs(8, 9)
    merged = Segment(recall.merge([Segment(recall.encode(a)), Segment(recall.encode(b))]))
    assert [d.seq for d in merged.docs] == list(range(1, 17))


def test_merge_plan_merges_four_of_the_lowest_full_level_and_never_the_top() -> None:
    assert recall.merge_plan([0, 0, 0]) is None
    assert recall.merge_plan([1, 0, 0, 0, 0]) == [1, 2, 3, 4]
    assert recall.merge_plan([1, 1, 1, 1, 0]) == [0, 1, 2, 3]
    top = segments.TOP_LEVEL
    assert recall.merge_plan([top] * 6) is None


def test_segments_stay_logarithmic() -> None:
    docs = [recall.document(seq, seq - 1, "user", f"word{seq % 50} common", 10) for seq in range(1, 2001)]
    index = recall.MemoryIndex.build(docs)
    assert index.n_docs == 2000
    assert len(index.segments) <= 4 * segments.TOP_LEVEL


def test_bm25_ranks_the_rare_matching_term_first() -> None:
    docs = [recall.document(seq, seq - 1, "user", "the weather is nice today", 10) for seq in range(1, 30)]
    docs.append(recall.document(30, 29, "user", "my cat is called Mochi", 10))
    docs.append(recall.document(31, 30, "user", "a cat sat on the weather mat", 10))
    index = recall.MemoryIndex.build(docs)
    hits = index.search("what is my cat Mochi called", limit=3)
    assert [h.doc.seq for h in hits][:2] == [30, 31]
    assert hits[0].score > hits[1].score > 0


def test_bm25_keep_filters_documents() -> None:
    docs = [recall.document(seq, seq - 1, "user", "cat", 10) for seq in range(1, 9)]
    index = recall.MemoryIndex.build(docs)
    assert {h.doc.seq for h in index.search("cat", limit=10, keep=lambda d: d.seq > 6)} == {7, 8}


def test_mem53_neighbours_come_by_score_margin_and_budget_left_not_a_fixed_count() -> None:
    """MEM-53: a hit far above the rest brings its neighbours before weaker hits; flat hits come first."""
    from chat_core.engine.recall import packing

    def pack(scores: dict[int, float], budget: int) -> list[int]:
        found = packing.pack(
            scores,
            budget,
            unit=lambda seq: [seq],
            cost=lambda seq: 10,
            neighbours=lambda seq: [seq - 1, seq + 1],
        )
        return [s for u in found.units for s in u.seqs]

    # Given a hit at seq 10 far above two others, and room for three messages
    # When packed
    # Then the hit's two neighbours come before the weaker hits
    assert sorted(pack({10: 10.0, 50: 2.0, 80: 2.0}, 30)) == [9, 10, 11]
    # Given three hits of about the same score and the same room
    # Then the three hits come and no neighbour
    assert sorted(pack({10: 10.0, 50: 9.5, 80: 9.0}, 30)) == [10, 50, 80]
    # And with room left once every hit is in, the neighbours fill it
    assert sorted(pack({10: 10.0, 50: 9.5, 80: 9.0}, 90)) == [9, 10, 11, 49, 50, 51, 79, 80, 81]
