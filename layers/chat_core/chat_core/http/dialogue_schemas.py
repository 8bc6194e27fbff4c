"""Request bodies of the dialogue-memory API (seed 004) as pydantic models, validated at the edge.

They check shape and types (unknown fields are an error); `dialogue.entries` and `dialogue.prompt`
check meaning (id characters, tick range, speaker membership, content length) and say what is wrong.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from chat_core.dialogue.entries import MAX_ENTRIES_PER_REQUEST
from chat_core.store.dialogues import (
    MAX_ENTRY_ID_CHARS,
    MAX_NAME_CHARS,
    MAX_PARTICIPANT_ID_CHARS,
    MAX_PARTICIPANTS,
)

ParticipantId = Annotated[str, StringConstraints(min_length=1, max_length=MAX_PARTICIPANT_ID_CHARS)]
ParticipantList = Annotated[list[ParticipantId], Field(min_length=1, max_length=MAX_PARTICIPANTS)]


class _Strict(BaseModel):
    """Unknown fields are an error (a typo such as "game_tik" must not be silently ignored)."""

    # defer_build: a model is built when first used, not at import (PERF-1, cold start): each handler
    # pays only for the models it validates.
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)


class DialogueEntryIn(_Strict):
    """One line of a dialogue."""

    participant_id: ParticipantId = Field(description="Who said it; must be a participant of the dialogue.")
    role: Annotated[str, StringConstraints(min_length=1, max_length=32)] | None = Field(
        default=None,
        description='A label such as "user", "assistant" or "character" (the prompt derives chat roles); '
        'a join or leave defaults to "event".',
    )
    content: str | None = Field(
        default=None, description="What was said (1..5000 characters); a join or leave may leave it out."
    )
    game_tick: int = Field(description="Game time in ticks (0..2**63-1); history is ordered by it.")
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)] | None = Field(
        default=None, description="Display name of the speaker at the time (optional)."
    )
    entry_id: Annotated[str, StringConstraints(min_length=1, max_length=MAX_ENTRY_ID_CHARS)] | None = Field(
        default=None,
        description="Client id of this entry; a repeated id in one dialogue is stored once (safe retries).",
    )
    audience: Annotated[list[ParticipantId], Field(max_length=MAX_PARTICIPANTS)] | None = Field(
        default=None, description="DLG-3: who perceived it (default: everyone present); the speaker always."
    )
    visibility: Literal["public", "private", "whisper"] | None = Field(
        default=None, description="DLG-3: public (everyone present), private (the speaker alone), whisper."
    )
    kind: Literal["line", "join", "leave"] | None = Field(
        default=None, description="DLG-3: a line (default), or the speaker joining or leaving the dialogue."
    )


class AddEntriesIn(_Strict):
    """POST /worlds/{world_id}/dialogues/entries: a dialogue (by participants or id) and its new entries."""

    participants: ParticipantList | None = Field(
        default=None, description="The dialogue's participant set (any order); created if new."
    )
    dialogue_id: Annotated[str, StringConstraints(min_length=1, max_length=2100)] | None = Field(
        default=None, description="An existing dialogue's id (instead of participants)."
    )
    present: ParticipantList | None = Field(
        default=None,
        description="DLG-3: who is there when this request creates the dialogue (default: everyone).",
    )
    entry: DialogueEntryIn | None = None
    entries: (
        Annotated[list[DialogueEntryIn], Field(min_length=1, max_length=MAX_ENTRIES_PER_REQUEST)] | None
    ) = None

    @model_validator(mode="after")
    def _one_target_and_entries(self) -> AddEntriesIn:
        if (self.participants is None) == (self.dialogue_id is None):
            raise ValueError("give exactly one of participants or dialogue_id")
        if (self.entry is None) == (self.entries is None):
            raise ValueError("give exactly one of entry or entries")
        return self

    def target(self) -> str | list[str]:
        """The dialogue id, or the participant list."""
        return self.dialogue_id if self.dialogue_id is not None else list(self.participants or [])

    def entry_dicts(self) -> list[dict[str, Any]]:
        """The entries as plain mappings, absent optional fields left out."""
        items = [self.entry] if self.entry is not None else list(self.entries or [])
        return [e.model_dump(exclude_none=True) for e in items]


class IngestMessageIn(AddEntriesIn):
    """One queue message of the batch ingestion function: AddEntriesIn plus whose world it is.

    The queue is an internal interface (IAM decides who may send), so the owner travels in the message.
    """

    owner: Annotated[str, StringConstraints(min_length=1, max_length=512)]
    world_id: Annotated[str, StringConstraints(min_length=1, max_length=64)]


class CurrentLineIn(_Strict):
    """The line being answered (not stored): the last message of the prompt."""

    participant_id: ParticipantId
    content: Annotated[str, StringConstraints(min_length=1, max_length=5000)]
    game_tick: int | None = None
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)] | None = None


TextOrMap = Annotated[str, StringConstraints(max_length=20_000)] | dict[str, str | int | float]


class PromptRecallIn(_Strict):
    """MEM-45: how much recall may add to a prompt and how far back it reads."""

    max_tokens: int | None = Field(
        default=None, ge=1, le=100_000, description="Default: a quarter of the budget."
    )
    scan: int = Field(
        default=500, ge=1, le=1000, description="How many of the newest perceived lines to rank."
    )


class PromptIn(_Strict):
    """POST /worlds/{world_id}/prompt: seed 004 PromptBuildConfig."""

    participants: ParticipantList = Field(description="The current participants (history is theirs).")
    system_prompt: Annotated[str, StringConstraints(max_length=20_000)]
    ai_participant: ParticipantId | None = Field(
        default=None, description="The NPC being voiced: its lines are 'assistant', everyone else's 'user'."
    )
    scene: TextOrMap | None = None
    other_data: TextOrMap | None = None
    history_limit: int = Field(default=10, ge=0, le=100)
    max_prompt_tokens: int | None = Field(default=None, ge=1, le=2_000_000)
    model: Annotated[str, StringConstraints(min_length=1, max_length=100)] | None = None
    token_method: Literal["estimate", "approx", "exact"] = "exact"  # noqa: S105 - not a secret
    calendar: Annotated[str, StringConstraints(min_length=1, max_length=64)] = "rimworld"
    language: Literal["en", "zh"] | None = None
    names: dict[ParticipantId, Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]] = (
        Field(default_factory=dict, description="Display names by participant id.")
    )
    context_role: Literal["system", "user"] = "system"
    speaker_labels: Literal["auto", "always", "never"] = "auto"
    current: CurrentLineIn | None = None
    references: Annotated[list[ParticipantList], Field(max_length=5)] | None = Field(
        default=None,
        description="Other participant sets whose dialogues join the background (a suspect's statements).",
    )
    viewer: ParticipantId | None = Field(
        default=None,
        alias="for",
        description="DLG-3: whose memory the history is (default ai_participant): only what it perceived.",
    )
    recall: bool | Annotated[int, Field(ge=1, le=100_000)] | PromptRecallIn | None = Field(
        default=None,
        description="MEM-45: older lines the reader perceived, relevant to the current line, as a "
        "[Recalled] block (true, a token cap, or {max_tokens, scan}).",
    )

    def config_mapping(self) -> dict[str, Any]:
        """The body as the mapping `PromptBuildConfig.from_mapping` takes."""
        return self.model_dump(exclude_none=True, by_alias=True)


class SaveIn(_Strict):
    """POST /worlds/{world_id}/saves (DLG-5): a save game of the world at a game tick."""

    save_id: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(
        description="The save's id (a save slot); the same id again overwrites it."
    )
    game_tick: int = Field(description="The tick the game saved at: loading it hides later history.")
