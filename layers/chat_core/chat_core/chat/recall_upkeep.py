"""Recall index upkeep (MEM-5), off the post path: on the table's stream, after the turn is stored.

For each conversation that ended a turn in a stream batch: GetItem the tail, one Query of the messages
above its watermark, analyse the indexable ones, seal full runs of SEAL_DOCS into segments, merge while
MERGE_FANOUT segments share a level, write the new segments, then the tail (conditional on its version:
on conflict everything is re-read and redone), then delete the segments merged away. Redelivery is a
no-op past the watermark. Deleted messages, failed replies and system messages are never indexed, nor
anything of a deleted conversation (so neither are turns stored with `store: false`: their conversation
is deleted as soon as it is answered); a message deleted after it was indexed is dropped when recall
fetches it (deletion takes effect at once).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chat_core.engine import recall
from chat_core.engine.recall import DocTerms, Segment
from chat_core.errors import StoreUnavailable
from chat_core.observability import logger
from chat_core.store import recall_index as store
from chat_core.store.keys import conversation_pk
from chat_core.store.partitions import parse_conversation_pk
from chat_core.store.recall_index import SegmentRef, Tail, TailConflict
from chat_core.store.records import MessageRecord

_ATTEMPTS: Final = 4
#: Messages above a gap in the seqs (a reply slot not filled yet) wait for it, unless this many do.
GAP_PATIENCE: Final = 16


def message_text(message: MessageRecord) -> str:
    """What the index reads of a message: its text, else its refusal; a tool call's names and arguments."""
    text = message.content or message.refusal or ""
    for call in message.tool_calls or ():
        function = call.get("function") or {}
        text += f" {function.get('name', '')} {function.get('arguments', '')}"
    return text


def indexable(message: MessageRecord) -> bool:
    return (
        message.status == "ok"
        and message.deleted_at is None
        and message.role in ("user", "assistant", "tool")
    )


def as_document(message: MessageRecord) -> DocTerms:
    parent = message.parent_seq if message.parent_seq is not None else message.seq - 1
    return recall.document(
        message.seq,
        parent,
        message.role,
        message_text(message),
        message.tokens,
        tool_call=bool(message.tool_calls),
    )


def _readable(watermark: int, messages: Sequence[MessageRecord]) -> list[MessageRecord]:
    """The messages to take now: up to the first gap in the seqs, unless many wait above it."""
    expected = watermark + 1
    for index, message in enumerate(messages):
        if message.seq != expected:
            return list(messages) if len(messages) - index >= GAP_PATIENCE else list(messages[:index])
        expected += 1
    return list(messages)


def _ref(docs: Sequence[DocTerms], data: bytes, level: int) -> SegmentRef:
    seqs = [d.doc.seq for d in docs]
    return SegmentRef(store.new_segment_id(), level, len(docs), min(seqs), max(seqs), len(data))


def plan_update(
    owner: str, conversation_id: str, tail: Tail, messages: Sequence[MessageRecord]
) -> tuple[Tail, list[tuple[SegmentRef, bytes]], list[str]]:
    """The next tail, the segments to write and those merged away, for `messages` above the watermark."""
    pending = Segment(tail.pending).doc_terms() if tail.pending else []
    added = [as_document(m) for m in messages if indexable(m)]
    pending.extend(added)
    refs = list(tail.segments)
    written: dict[str, tuple[SegmentRef, bytes]] = {}
    fresh: dict[str, Segment] = {}
    while len(pending) >= recall.SEAL_DOCS:
        chunk, pending = pending[: recall.SEAL_DOCS], pending[recall.SEAL_DOCS :]
        data = recall.encode(chunk)
        ref = _ref(chunk, data, 0)
        refs.append(ref)
        written[ref.id] = (ref, data)
        fresh[ref.id] = Segment(data)
    merged_away: list[str] = []
    pk = conversation_pk(owner, conversation_id)
    while (plan := recall.merge_plan([r.level for r in refs])) is not None:
        chosen = [refs[i] for i in plan]
        stored = [r.id for r in chosen if r.id not in fresh]
        loaded = store.read_segments((pk, sid) for sid in stored) if stored else {}
        parts = [fresh[r.id] if r.id in fresh else loaded[(pk, r.id)] for r in chosen]
        data = recall.merge(parts)
        ref = SegmentRef(
            store.new_segment_id(),
            chosen[0].level + 1,
            sum(r.docs for r in chosen),
            min(r.lo for r in chosen),
            max(r.hi for r in chosen),
            len(data),
        )
        for r in chosen:
            refs.remove(r)
            if r.id in written:
                del written[r.id]
            else:
                merged_away.append(r.id)
        refs.append(ref)
        written[ref.id] = (ref, data)
        fresh[ref.id] = Segment(data)
    new_tail = replace(
        tail,
        version=tail.version + 1,
        watermark=max([tail.watermark, *(m.seq for m in messages)]),
        n_docs=tail.n_docs + len(added),
        total_length=tail.total_length + sum(d.doc.length for d in added),
        segments=refs,
        pending=recall.encode(pending) if pending else None,
    )
    return new_tail, list(written.values()), merged_away


def update_index(owner: str, conversation_id: str) -> int:
    """Bring the conversation's index up to its newest message; the documents added (0: up to date)."""
    for _ in range(_ATTEMPTS):
        tail = store.read_tail(owner, conversation_id)
        above, live = store.messages_above(owner, conversation_id, tail.watermark)
        # A deleted conversation (`store: false` turns delete theirs at once) is never indexed further.
        messages = _readable(tail.watermark, above) if live else []
        if not messages:
            return 0
        new_tail, sealed, merged_away = plan_update(owner, conversation_id, tail, messages)
        try:
            store.save(
                owner,
                conversation_id,
                new_tail,
                expected_version=tail.version,
                sealed=sealed,
                merged_away=merged_away,
            )
        except TailConflict:
            continue
        return new_tail.n_docs - tail.n_docs
    raise TailConflict(conversation_id)


#: The settings a store: false answer carries (http.responses_turn): its turn is never indexed.
UNSTORED_SETTINGS: Final = '{"store":false}'


def stored_only(
    records: Iterable[Mapping[str, Any]], targets: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The batch's conversations less those whose turn was a store: false response (RSP-9): their partition
    is deleted in the request that answered, and an upkeep that read it just before must not write into it."""
    unstored = set()
    for record in records:
        data = record.get("dynamodb") or {}
        settings = ((data.get("NewImage") or {}).get("settings") or {}).get("S")
        pk = ((data.get("Keys") or {}).get("pk") or {}).get("S")
        parsed = parse_conversation_pk(pk) if settings == UNSTORED_SETTINGS and pk else None
        if parsed is not None:
            unstored.add(parsed)
    return [target for target in targets if target not in unstored]


def process_stream(targets: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Index each (owner, conversation_id) that ended a turn in a stream batch (each tried; failures listed).

    The caller raises for the failures after its own work, so Lambda retries the batch; the watermark
    makes the retry a no-op for the conversations already indexed.
    """
    indexed = 0
    failures: list[dict[str, Any]] = []
    for owner, conversation_id in targets:
        try:
            indexed += update_index(owner, conversation_id)
        except (StoreUnavailable, TailConflict) as exc:
            failures.append({"conversation_id": conversation_id, "error": str(exc)})
            logger.warning("recall index not updated", conversation_id=conversation_id, error=str(exc))
    return {"conversations": len(targets), "documents": indexed, "failures": failures}
