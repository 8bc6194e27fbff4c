"""Recall index upkeep (MEM-5), off the post path: on the table's stream, for every message stored.

For each conversation that stored an indexable message in a stream batch (a post's turn, an append, a
Conversations API item: any INSERT of a user, assistant or tool message): GetItem the tail, one Query of
the messages above its watermark, a BatchGetItem of its holes when it has any, analyse the indexable
ones, seal full runs of SEAL_DOCS into segments, merge while MERGE_FANOUT segments share a level, write
the new segments, then the tail (conditional on its version: on conflict everything is re-read and
redone), then delete the segments merged away. Redelivery is a no-op past the watermark. A slot still
empty below the newest message (a reply the model is still writing, beside an append that came after
it) holds nothing back: the messages above it are indexed at once and the slot is kept as a hole, read
again by each upkeep until its message comes or HOLE_PATIENCE has passed. Deleted messages, failed
replies and system messages are never indexed, nor anything of a deleted conversation or of one made
for a `store: false` response (its conversation item says so from its first write, and is deleted as
soon as it is answered); a message deleted after it was indexed is dropped when recall fetches it
(deletion takes effect at once).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chat_core.engine import recall
from chat_core.engine.recall import DocTerms, Segment
from chat_core.errors import StoreUnavailable
from chat_core.observability import logger
from chat_core.store.keys import conversation_pk
from chat_core.store.partitions import parse_conversation_pk
from chat_core.store.recall import index as store
from chat_core.store.recall.index import SegmentRef, Tail, TailConflict
from chat_core.store.records import MessageRecord

_ATTEMPTS: Final = 4
#: Semantic recall's vectors (chat.recall.embedding) wait above a gap in the seqs, unless this many do.
GAP_PATIENCE: Final = 16
#: Seconds an empty slot below the watermark is read again for its message: Lambda's longest run (a
#: post cannot fill its reply slot after it; the next post closes an abandoned one with a failed reply,
#: which is never indexed anyway).
HOLE_PATIENCE: Final = 900
#: Holes a tail keeps (one BatchGetItem reads them all); the oldest go first.
MAX_HOLES: Final = 100


def message_text(message: MessageRecord) -> str:
    """What the index reads of a message: its text, else its refusal; a tool call's names and arguments."""
    text = message.content or message.refusal or ""
    for call in message.tool_calls or ():
        function = call.get("function") or {}
        text += f" {function.get('name', '')} {function.get('arguments', '')}"
    return text


#: The roles the index reads (a system message never is).
INDEXED_ROLES: Final = ("user", "assistant", "tool")


def indexable(message: MessageRecord) -> bool:
    return message.status == "ok" and message.deleted_at is None and message.role in INDEXED_ROLES


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
    """The messages the vectors take now: up to the first gap in the seqs, unless many wait above it."""
    expected = watermark + 1
    for index, message in enumerate(messages):
        if message.seq != expected:
            return list(messages) if len(messages) - index >= GAP_PATIENCE else list(messages[:index])
        expected += 1
    return list(messages)


def open_holes(tail: Tail, now: float) -> list[int]:
    """The tail's holes still worth reading (seen empty less than HOLE_PATIENCE ago)."""
    return [seq for seq, seen in tail.holes if now - seen < HOLE_PATIENCE]


def next_holes(
    tail: Tail, above: Sequence[MessageRecord], filled: Iterable[int], now: float
) -> tuple[tuple[int, int], ...]:
    """The holes after taking `above` (the messages over the watermark) and the `filled` ones: those still
    open, and every seq between the watermark and the newest message that has no message yet."""
    done = set(filled)
    kept = [(seq, seen) for seq, seen in tail.holes if seq not in done and now - seen < HOLE_PATIENCE]
    present = {m.seq for m in above}
    newest = max(present, default=tail.watermark)
    fresh = [(seq, int(now)) for seq in range(tail.watermark + 1, newest) if seq not in present]
    return tuple([*kept, *fresh][-MAX_HOLES:])


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


def update_index(owner: str, conversation_id: str, *, now: float | None = None) -> int:
    """Bring the conversation's index up to its newest message; the documents added (0: up to date)."""
    for _ in range(_ATTEMPTS):
        clock = time.time() if now is None else now
        tail = store.read_tail(owner, conversation_id)
        above, live = store.messages_above(owner, conversation_id, tail.watermark)
        # A deleted conversation, or one a `store: false` response made, is never indexed further.
        if not live:
            return 0
        waiting = open_holes(tail, clock)
        pk = conversation_pk(owner, conversation_id)
        filled = store.get_messages([(pk, seq) for seq in waiting]) if waiting else []
        messages = sorted([*filled, *above], key=lambda m: m.seq)
        if not messages:
            return 0
        new_tail, sealed, merged_away = plan_update(owner, conversation_id, tail, messages)
        new_tail = replace(new_tail, holes=next_holes(tail, above, (m.seq for m in filled), clock))
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


def conversations_in(records: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(owner, conversation_id) of each conversation that stored an indexable message in `records` (the
    INSERT of a user, assistant or tool message: the template's filter), once, in order."""
    seen: dict[str, tuple[str, str]] = {}
    for record in records:
        data = record.get("dynamodb") or {}
        image = data.get("NewImage") or {}
        if record.get("eventName") != "INSERT" or _string(image, "type") != "message":
            continue
        if _string(image, "role") not in INDEXED_ROLES:
            continue
        pk = _string(data.get("Keys") or {}, "pk")
        parsed = parse_conversation_pk(pk) if pk else None
        if parsed is not None:
            seen.setdefault(pk or "", parsed)
    return list(seen.values())


def _string(image: Mapping[str, Any], name: str) -> str | None:
    value = image.get(name)
    return value.get("S") if isinstance(value, Mapping) else None


def process_stream(targets: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Index each (owner, conversation_id) that stored a message in a batch (each tried; failures listed).

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
