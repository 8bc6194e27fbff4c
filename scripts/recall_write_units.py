"""The recall index's table cost per post (docs/recall.md): write and read units its upkeep spends.

Offline: replays the upkeep's planning (chat.recall_upkeep.plan_update) over a synthetic conversation of
two messages per post (a user question and a reply of typical length), each taken by an upkeep pass of
its own (the stream delivers the question before the model has answered), keeping segments in memory, and
prices each write as DynamoDB does (1 write unit per started KB of the item, deletes by the size of the
item deleted; a strongly consistent read 1 unit per started 4 KB). Usage:

    python scripts/recall_write_units.py [posts]
"""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "chat_core"))

from chat_core.chat.recall import upkeep as recall_upkeep
from chat_core.engine.recall import Segment
from chat_core.store.recall import index as recall_index
from chat_core.store.records import MessageRecord

WORDS = [f"w{n}" for n in range(3000)]
_OVERHEAD = 100  # keys, type and attribute names


def _message(seq: int, rng: random.Random) -> MessageRecord:
    role = "user" if seq % 2 else "assistant"
    words = rng.randint(8, 30) if role == "user" else rng.randint(40, 160)
    text = " ".join(rng.choice(WORDS[: 300 + seq // 4]) for _ in range(words))
    return MessageRecord(
        owner="o",
        conversation_id="c",
        seq=seq,
        message_id=f"m{seq}",
        role=role,
        created_at="t",
        content=text,
        tokens=words * 2,
    )


def run(posts: int) -> dict[str, Any]:
    rng = random.Random(7)  # noqa: S311 - synthetic text, not crypto
    stored: dict[str, bytes] = {}
    recall_index.read_segments = lambda wanted: {  # type: ignore[assignment]
        key: Segment(stored[key[1]]) for key in wanted
    }
    tail = recall_index.Tail()
    writes = reads = 0
    largest = 0
    for seq in range(1, 2 * posts + 1):
        new_tail, sealed, merged = recall_upkeep.plan_update("o", "c", tail, [_message(seq, rng)])
        for ref, data in sealed:
            stored[ref.id] = data
            writes += math.ceil((len(data) + _OVERHEAD) / 1024)
            largest = max(largest, len(data))
        for sid in merged:
            writes += math.ceil((len(stored.pop(sid)) + _OVERHEAD) / 1024)
        manifest = json.dumps([r.to_json() for r in new_tail.segments])
        tail_bytes = len(manifest) + len(new_tail.pending or b"") + _OVERHEAD
        writes += math.ceil(tail_bytes / 1024)
        reads += math.ceil(tail_bytes / 4096) + 1  # GetItem of the tail + the Query of the new messages
        tail = new_tail
    return {
        "posts": posts,
        "messages": 2 * posts,
        "write_units_per_post": round(writes / posts, 2),
        "read_units_per_post": round(reads / posts, 2),
        "segments": len(tail.segments),
        "largest_segment_bytes": largest,
        "index_bytes": sum(len(v) for v in stored.values()),
    }


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)))
