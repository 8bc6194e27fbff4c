"""Who perceived an entry (DLG-3): audiences, visibility, and participants joining and leaving.

A dialogue's participant set is fixed (it is its id), but who is *present* changes: everyone is present
when a dialogue starts unless the request names `present`; a `leave` entry makes its speaker absent, a
`join` entry present again. An entry's audience defaults to everyone present; `audience` narrows it
(the speaker always perceives their own line). `visibility` labels it: `public` (everyone present; the
default), `private` (audience defaults to the speaker alone: a thought, a note), `whisper` (needs an
audience naming someone besides the speaker). History and prompts built *for* a participant hold only
what it perceived; entries without an audience (all older data) were perceived by every participant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from chat_core.errors import InvalidInput
from chat_core.store.dialogues import (
    DialogueRecord,
    NewEntry,
    Perceive,
    Perception,
    normalize_participants,
)

VISIBILITIES: Final = ("public", "private", "whisper")
KINDS: Final = ("line", "join", "leave")


def parse_perception(data: Mapping[str, Any]) -> dict[str, Any]:
    """`audience`, `visibility` and `kind` of an entry mapping, validated (absent ones left out)."""
    out: dict[str, Any] = {}
    kind = data.get("kind", "line")
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", field="kind")
    if kind != "line":
        out["kind"] = kind
        for key in ("audience", "visibility"):
            if data.get(key) is not None:
                raise InvalidInput(f"a {kind} entry takes no {key}: everyone present perceives it", field=key)
        return out
    visibility = data.get("visibility")
    if visibility is not None:
        if visibility not in VISIBILITIES:
            raise InvalidInput(
                f"visibility must be one of {', '.join(VISIBILITIES)}, got {visibility!r}", field="visibility"
            )
        out["visibility"] = visibility
    audience = data.get("audience")
    if audience is not None:  # [] is the speaker alone, like private
        out["audience"] = () if audience in ([], ()) else normalize_participants(audience, field="audience")
    if visibility == "whisper" and "audience" not in out:
        raise InvalidInput("a whisper needs an audience: who hears it besides the speaker", field="audience")
    return out


def decide(entry: NewEntry, dialogue: DialogueRecord) -> Perception:
    """Who perceives `entry` in `dialogue` as it is now, and who is present after it.

    Raises InvalidInput when the speaker is not present (for a line or a leave), when the audience names
    someone who is not a participant or not present, or when it contradicts the visibility.
    """
    speaker = entry.participant_id
    present = set(dialogue.present)
    where = f"dialogue {dialogue.dialogue_id!r}"
    if entry.kind == "join":
        witnesses = tuple(sorted(present | {speaker}))
        absent = tuple(p for p in dialogue.absent if p != speaker)
        return Perception(witnesses, _stored(witnesses, dialogue), None, absent)
    if speaker not in present:
        raise InvalidInput(
            f"{speaker!r} is not present in {where} (it left, or the dialogue started without it); "
            "store a join entry first",
            field="participant_id",
        )
    if entry.kind == "leave":
        witnesses = tuple(sorted(present))
        return Perception(witnesses, _stored(witnesses, dialogue), None, (*dialogue.absent, speaker))
    if entry.audience is None:
        heard = {speaker} if entry.visibility == "private" else present
    else:
        heard = set(entry.audience) | {speaker}
        for p in sorted(heard):
            if p not in dialogue.participants:
                raise InvalidInput(
                    f"audience names {p!r}, who is not a participant of {where}", field="audience"
                )
            if p not in present:
                raise InvalidInput(f"audience names {p!r}, who is not present in {where}", field="audience")
    if entry.visibility == "public" and heard != present:
        raise InvalidInput(
            "a public entry is heard by everyone present; leave out audience", field="audience"
        )
    if entry.visibility == "whisper" and len(heard) < 2:
        raise InvalidInput("a whisper's audience must name someone besides the speaker", field="audience")
    witnesses = tuple(sorted(heard))
    # A whisper or a private line keeps its audience even when it is everyone (e.g. a pair's whisper),
    # so it reads back, exports and re-imports as what it was.
    stored = witnesses if entry.visibility in ("whisper", "private") else _stored(witnesses, dialogue)
    return Perception(witnesses, stored, entry.visibility)


def perceive(entry: NewEntry) -> Perceive:
    """`decide` for this entry, as the store calls it with the dialogue it has just read."""
    return lambda dialogue: decide(entry, dialogue)


def rehearse(entries: Sequence[NewEntry], dialogue: DialogueRecord) -> None:
    """Run `decide` over a batch before anything is written, so a bad entry stores none of the batch."""
    absent = dialogue.absent
    for entry in entries:
        seen = decide(entry, replace(dialogue, absent=absent))
        if seen.absent_after is not None:
            absent = seen.absent_after


def _stored(witnesses: tuple[str, ...], dialogue: DialogueRecord) -> tuple[str, ...] | None:
    """The audience stored on the entry: None when every participant perceived it (as older entries)."""
    return None if set(witnesses) == set(dialogue.participants) else witnesses


def initial_absent(participants: Sequence[str], present: object) -> tuple[str, ...]:
    """The absent set of a dialogue started with `present` (None: everyone is there)."""
    if present is None:
        return ()
    there = set(normalize_participants(present, field="present"))
    strangers = sorted(there - set(participants))
    if strangers:
        raise InvalidInput(f"present names {strangers[0]!r}, who is not a participant", field="present")
    return tuple(p for p in participants if p not in there)
