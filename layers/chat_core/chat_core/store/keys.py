"""Key layout of the single table (DES-1): owner escaping, ids, partition and sort keys."""

from __future__ import annotations

import hashlib
import os
import re
import time

# Crockford base32 without I, L, O, U: ULID alphabet, sorts like the time it encodes.
_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
MAX_OWNER_LENGTH = 512
SEQ_WIDTH = 10
META_SK = "~META"  # "~" sorts after "MSG#...", so a descending query meets the conversation item first
MESSAGE_SK_PREFIX = "MSG#"


def new_id(now_ms: int | None = None) -> str:
    """A ULID-like id: 48 bits of milliseconds then 80 random bits, 26 characters, time-sortable."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def is_valid_id(value: str) -> bool:
    """True for a well-formed id as `new_id` makes them (so no id can smuggle a '#' into a key)."""
    return bool(_ID_RE.fullmatch(value))


# Message ids are ULID-like (26 Crockford base32 characters, time first) with the message's sequence number
# inside their 80 "random" bits (40 bits of seq, 40 random), so PATCH can find a message by id with one
# GetItem. Ids made before this layout (all random) are found by a filtered Query instead.
_SEQ_BITS = 40
_RANDOM_BITS = 40


def message_id_for(seq: int, now_ms: int | None = None) -> str:
    """A fresh message id that carries `seq` (see `seq_in_message_id`)."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    tail = ((seq % (1 << _SEQ_BITS)) << _RANDOM_BITS) | int.from_bytes(os.urandom(5), "big")
    value = (ms << (_SEQ_BITS + _RANDOM_BITS)) | tail
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def derived_id(now_ms: int, seed: str, seq: int | None = None) -> str:
    """An id as `new_id` (or, with `seq`, `message_id_for`) makes them, its random bits taken from `seed`:
    PRV-3's import names what it writes from its job, so a run delivered again writes the same keys."""
    digest = int.from_bytes(hashlib.sha256(seed.encode("utf-8")).digest()[:10], "big")
    if seq is None:
        value = (now_ms << 80) | digest
    else:
        tail = ((seq % (1 << _SEQ_BITS)) << _RANDOM_BITS) | (digest & ((1 << _RANDOM_BITS) - 1))
        value = (now_ms << (_SEQ_BITS + _RANDOM_BITS)) | tail
    chars = []
    for _ in range(26):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def seq_in_message_id(message_id: str) -> int | None:
    """The sequence number a message id carries (None for a malformed id)."""
    if not is_valid_id(message_id):
        return None
    value = 0
    for ch in message_id:
        value = (value << 5) | _ALPHABET.index(ch)
    return (value >> _RANDOM_BITS) & ((1 << _SEQ_BITS) - 1)


def is_valid_owner(owner: str) -> bool:
    """An owner is any non-blank identity up to MAX_OWNER_LENGTH characters, without control characters."""
    return (
        0 < len(owner) <= MAX_OWNER_LENGTH
        and not owner.isspace()
        and not any(ord(ch) < 32 or ord(ch) == 127 for ch in owner)
    )


def escape_owner(owner: str) -> str:
    """Escape '%' and '#' so an owner id containing '#' can never produce another owner's key prefix."""
    return owner.replace("%", "%25").replace("#", "%23")


def owner_pk(owner: str) -> str:
    """Partition key of the listing index: every live conversation of one owner."""
    return f"USER#{escape_owner(owner)}"


def conversation_pk(owner: str, conversation_id: str) -> str:
    """Partition key of one conversation: its meta item and all its messages."""
    return f"{owner_pk(owner)}#CONV#{conversation_id}"


#: API-21: a caller-chosen conversation key: letters, digits and `._:@+=~-` (safe in a URL path
#: segment as they are), 1-200 characters.
_CONVERSATION_KEY_RE = re.compile(r"^[A-Za-z0-9._:@+=~-]{1,200}$")
MAX_CONVERSATION_KEY_CHARS = 200
NAME_SK = "~KEY"


def is_valid_conversation_key(key: str) -> bool:
    return bool(_CONVERSATION_KEY_RE.fullmatch(key))


def conversation_name_pk(owner: str, key: str) -> str:
    """Partition key of the item naming one of an owner's conversations by its key (API-21). Keys hold no
    '#' and owners are escaped, so no key of one owner can produce another owner's partition key."""
    return f"{owner_pk(owner)}#KEY#{key}"


def usage_pk(owner: str) -> str:
    """COST-3: the partition of one owner's usage: a day item per model and the budget item."""
    return f"{owner_pk(owner)}#USAGE"


def rate_pk(owner: str) -> str:
    """OPS-4: the partition of one owner's rate-limit windows (one item per minute, never queried)."""
    return f"{owner_pk(owner)}#RATE"


USAGE_DAY_PREFIX = "DAY#"
#: "~LIMITS" sorts after every "DAY#..." item: one Query from a month's first day reads that month's
#: usage and the owner's budget item together (COST-4).
LIMITS_SK = "~LIMITS"


def usage_day_sk(day: str, model: str, shard: str | None = None) -> str:
    """Sort key of one owner's usage of `model` on `day` (YYYY-MM-DD, UTC); '#' in a model is escaped,
    so a shard's suffix (COST-4: what posts counted themselves) never reads as part of a model's name."""
    sk = f"{USAGE_DAY_PREFIX}{day}#{escape_owner(model)}"
    return sk if shard is None else f"{sk}#{shard}"


def message_sk(seq: int) -> str:
    """Sort key of the message at `seq` (zero-padded so string order is numeric order)."""
    return f"{MESSAGE_SK_PREFIX}{seq:0{SEQ_WIDTH}d}"


#: API-18: branch links (see items.BranchLink) sort below the messages ("LINK#" < "MSG#").
LINK_SK_PREFIX = "LINK#"


def link_sk(parent_seq: int, child_seq: int) -> str:
    """Sort key of the link from a message to a child that does not follow it."""
    return f"{LINK_SK_PREFIX}{parent_seq:0{SEQ_WIDTH}d}#{child_seq:0{SEQ_WIDTH}d}"


def listing_sk(updated_at: str, conversation_id: str) -> str:
    """Sort key in the listing index: newest `updated_at` first when queried descending."""
    return f"{updated_at}#{conversation_id}"


#: "~SUMMARY" sorts after "~META" ('S' > 'M'): the post's one descending Query meets the summary first,
#: then the conversation item, then the newest messages (DES-1, API-4 stays one Query).
SUMMARY_SK = "~SUMMARY"

#: Turn-log events (seed 002) live in the conversation's partition: `EVT#<turn>#<index in turn>`, both
#: zero-padded; session_start is turn 0, session_end sorts last (`EVT#~END`). "EVT#" sorts before "MSG#",
#: so the post's one descending Query (from `~META` down through the newest messages, `sk >= "MSG#"`)
#: never reads an event.
EVENT_SK_PREFIX = "EVT#"
SESSION_END_SK = f"{EVENT_SK_PREFIX}~END"
_INDEX_WIDTH = 4


def event_sk(turn: int, index: int) -> str:
    """Sort key of the event at `index` inside `turn` (turn 0 holds session_start)."""
    return f"{EVENT_SK_PREFIX}{turn:0{SEQ_WIDTH}d}#{index:0{_INDEX_WIDTH}d}"


def turn_prefix(turn: int) -> str:
    """The sort-key prefix of every event of one turn."""
    return f"{EVENT_SK_PREFIX}{turn:0{SEQ_WIDTH}d}#"


def world_prefix(owner: str, world_id: str) -> str:
    """The key prefix of everything in one owner's world (dialogue items: see store/dialogues.py)."""
    return f"USER#{escape_owner(owner)}#WORLD#{world_id}"


def entry_sk(tick: int, seq: int) -> str:
    """Sort key of a dialogue entry: game tick, then insertion sequence (both zero-padded)."""
    return f"E#{tick:020d}#{seq:010d}"
