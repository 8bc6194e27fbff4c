"""The golden scenario, recall half: GET /memory/search (MEM-11) over the local server, its own users so
the other families' conversations never change its answers (see test_golden_answers.py)."""

from __future__ import annotations

from tests.golden.recording import Recorder

#: Users of this family only.
SEARCHER = "memory-searcher"
OTHER = "memory-other"


def memory_search(rec: Recorder) -> None:
    rec.family = "memory_search"
    first = rec.call(
        "POST",
        "/messages",
        "a turn to remember",
        user=SEARCHER,
        json_body={"content": "I booked a flight to Lisbon for the 12th of May"},
    ).json()
    rec.call(
        "POST",
        "/messages",
        "another user's turn naming the same city",
        user=OTHER,
        json_body={"content": "Lisbon is where I live"},
    )
    rec.call(
        "GET",
        "/memory/search",
        "the caller's messages that match, best first (never another user's)",
        user=SEARCHER,
        params={"q": "when is my flight to Lisbon?", "limit": 5},
        settled=True,
    )
    rec.call(
        "GET",
        "/memory/search",
        "one conversation only",
        user=SEARCHER,
        params={"q": "Lisbon", "conversation_id": first["conversation_id"]},
    )
    rec.call("GET", "/memory/search", "422: no q", user=SEARCHER)
    rec.call("GET", "/memory/search", "422: q too long", user=SEARCHER, params={"q": "x" * 1001})
    rec.call("GET", "/memory/search", "422: limit over 50", user=SEARCHER, params={"q": "x", "limit": 51})
    rec.call(
        "GET",
        "/memory/search",
        "404: another user's conversation",
        user=OTHER,
        params={"q": "Lisbon", "conversation_id": first["conversation_id"]},
    )
    rec.call("GET", "/memory/search", "401: no identity", user=None, params={"q": "Lisbon"})
