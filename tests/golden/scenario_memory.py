"""The golden scenario's long-term facts family (MEM-32, MEM-33): the listing and the deletion, with
extraction off as deployed by default (the e2e test local/tests/test_memory_facts_e2e.py drives it on)."""

from __future__ import annotations

from tests.golden.recording import BOB, Recorder

UNKNOWN_FACT = "01JAAAAAAAAAAAAAAAAAAAAAAA"


def memory(rec: Recorder) -> None:
    rec.family = "memory"
    rec.call("GET", "/memory", "the caller's facts: none while extraction is off")
    rec.call(
        "GET",
        "/memory",
        "superseded ones too, one conversation",
        params={"include_superseded": "true", "conversation_id": UNKNOWN_FACT, "limit": "5"},
    )
    rec.call("GET", "/memory", "422: a limit out of range", params={"limit": "0"})
    rec.call("GET", "/memory", "400: a cursor that is not one", params={"cursor": "nope"})
    rec.call("DELETE", "/memory/{fact_id}", "404: an unknown fact", path={"fact_id": UNKNOWN_FACT})
    rec.call("DELETE", "/memory/{fact_id}", "404: not a fact id", path={"fact_id": "nope"})
    rec.call(
        "DELETE",
        "/memory/{fact_id}",
        "404: another user's (none is theirs)",
        path={"fact_id": UNKNOWN_FACT},
        user=BOB,
    )
