"""Prompt factory (seed 004 PromptFactoryService): dialogue history -> OpenAI messages fitted to a budget.

Layout of the payload, in send order:
  1. system: the system prompt (always kept);
  2. `[Background]`: the ancillary history (dialogues with the current participants *and* others), plus
     any referenced dialogues (`references`, seed 004's cross-dialogue access), as ONE message of
     readable, timestamped lines "speaker: text" (role `context_role`, default "system": it is reference
     material, not something the player said; set "user" for chat templates that allow a single leading
     system message only);
  3. `[Context]`: scene and other data (role `context_role`);
  4. the primary history as chat messages: the voiced NPC (`ai_participant`) is "assistant", everyone else
     "user"; each content starts with the readable game time, each message has an OpenAI-valid `name`;
  5. optionally the current line (`current`), always kept.

Budget: one selection engine (`engine.window.select_window`), two passes. Pass 1 fits system, context
(as a pinned message) and the primary history (newest contiguous run) into the budget. Pass 2 fits the
background lines into what is left, newest first: the header costs a full message, each line only its
own tokens (stored as the line's "tokens", which the engine reuses). Exact counts add up to the
message's count; the bytes/4 estimate rounds each line up (it may keep one line less than fits); the
approx estimate may not add up, so if the assembled prompt overshoots, pass 2 runs again on a budget
smaller by the overshoot (at most twice, then the background is left out).
So ancillary entries are dropped first, oldest first, and primary entries only when the primary
history alone does not fit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from chat_core.dialogue.entries import (
    HistoricalContext,
    get_dialogue_entries,
    get_historical_context,
    validate_limit,
)
from chat_core.dialogue.gametime import Calendar, QuadrumCalendar, check_tick, get_calendar
from chat_core.dialogue.prompt_stats import PromptPayload, PromptStats
from chat_core.dialogue.recall import Recalled, parse_recall, read_pool, recall_block
from chat_core.engine.window import WindowPolicy, WindowStats, count_window_tokens, select_window
from chat_core.errors import InvalidInput
from chat_core.store.dialogues import (
    EntryRecord,
    dialogue_key,
    normalize_participants,
    validate_participant_id,
    validate_world_id,
)

Method = Literal["estimate", "approx", "exact"]
Language = Literal["en", "zh"]
SpeakerLabels = Literal["auto", "always", "never"]

_NAME_OK: Final = re.compile(r"[A-Za-z0-9_-]")
# Engine passes for the background: the first, plus corrections when approximate counts overshoot.
_BACKGROUND_PASSES: Final = 3
MAX_SYSTEM_PROMPT_CHARS: Final = 20_000
MAX_CONTEXT_CHARS: Final = 20_000
MAX_REFERENCES: Final = 5

_LABELS: Final[dict[str, dict[str, str]]] = {
    "en": {
        "background": "[Background]",
        "background_intro": "Earlier conversations of {who} with others present, oldest first "
        "(reference only, not part of this conversation):",
        "background_intro_refs": "Earlier conversations for reference, oldest first "
        "(not part of this conversation):",
        "context": "[Context]",
        "scene": "Scene:",
        "other": "Other data:",
        "joiner": ", ",
        "last_joiner": " and ",
    },
    "zh": {
        "background": "[背景参考资料]",
        "background_intro": "{who}与其他人在场时的早前对话，按时间先后排列（仅供参考，不属于当前对话）：",
        "background_intro_refs": "供参考的早前对话，按时间先后排列（不属于当前对话）：",
        "context": "[场景与其他信息]",
        "scene": "场景：",
        "other": "其他信息：",
        "joiner": "、",
        "last_joiner": "和",
    },
}


def openai_name(display: str, fallback: str = "") -> str:
    """A valid OpenAI message `name` (^[a-zA-Z0-9_-]{1,64}$) for a speaker.

    Other characters become '_' (runs collapsed). If nothing readable is left (e.g. a Chinese name), the
    fallback (the participant id) is tried the same way, then `speaker_<hash>` so distinct speakers keep
    distinct names.
    """
    for candidate in (display, fallback):
        cleaned = re.sub(r"_+", "_", "".join(c if _NAME_OK.fullmatch(c) else "_" for c in candidate))
        cleaned = cleaned.strip("_")[:64]
        if cleaned and re.search(r"[A-Za-z0-9]", cleaned):
            return cleaned
    digest = hashlib.sha256((fallback or display).encode("utf-8")).hexdigest()[:10]
    return f"speaker_{digest}"


def _text_block(value: Mapping[str, Any] | str | None, field_name: str) -> str | None:
    """Scene / other data as text: free text as is, a flat mapping as "- key: value" lines."""
    if value is None:
        return None
    if isinstance(value, str):
        return value.strip() or None
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{field_name} must be text or an object of text values", field=field_name)
    lines = []
    for key, item in value.items():
        if not isinstance(key, str) or not key.strip():
            raise InvalidInput(f"{field_name} keys must be non-empty strings", field=field_name)
        if isinstance(item, int | float) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str):
            raise InvalidInput(
                f"{field_name}.{key} must be text (or a number); nested values are not supported",
                field=field_name,
            )
        lines.append(f"- {key.strip()}: {item.strip()}")
    return "\n".join(lines) or None


@dataclass(frozen=True)
class CurrentLine:
    """The line being answered, not yet stored: always the last message of the prompt."""

    participant_id: str
    content: str
    game_tick: int | None = None
    name: str | None = None


@dataclass(frozen=True)
class PromptBuildConfig:
    """Seed 004 PromptBuildConfig plus the knobs a game needs. See `from_mapping` for the JSON form."""

    world_id: str
    participants: tuple[str, ...]
    system_prompt: str
    ai_participant: str | None = None
    scene: Mapping[str, str] | str | None = None
    other_data: Mapping[str, str] | str | None = None
    history_limit: int = 10
    max_prompt_tokens: int | None = None
    model: str | None = None
    token_method: Method = "exact"  # noqa: S105 - a counting method, not a secret
    calendar: str = "rimworld"
    language: Language | None = None
    names: Mapping[str, str] = field(default_factory=dict)
    context_role: Literal["system", "user"] = "system"
    speaker_labels: SpeakerLabels = "auto"
    current: CurrentLine | None = None
    #: Seed 004 "cross-dialogue access": other participant sets whose dialogues (their newest
    #: `history_limit` entries) join the background, e.g. a suspect's earlier statements in a court scene.
    references: tuple[tuple[str, ...], ...] = ()
    #: DLG-3: whose memory (JSON `for`, default ai_participant): entries it did not perceive are left out.
    viewer: str | None = None
    #: MEM-45: older lines the reader perceived, relevant to the current line (dialogue/recall.py).
    recall: Any = None

    def __post_init__(self) -> None:
        validate_world_id(self.world_id)
        object.__setattr__(self, "recall", parse_recall(self.recall))
        object.__setattr__(self, "participants", normalize_participants(self.participants))
        if not isinstance(self.system_prompt, str):
            raise InvalidInput("system_prompt must be a string", field="system_prompt")
        if len(self.system_prompt) > MAX_SYSTEM_PROMPT_CHARS:
            raise InvalidInput(
                f"system_prompt has {len(self.system_prompt)} characters; "
                f"the limit is {MAX_SYSTEM_PROMPT_CHARS}",
                field="system_prompt",
            )
        if self.ai_participant is not None:
            validate_participant_id(self.ai_participant, field="ai_participant")
            if self.ai_participant not in self.participants:
                raise InvalidInput(
                    f"ai_participant {self.ai_participant!r} is not one of the participants",
                    field="ai_participant",
                )
        if (
            self.viewer is not None
            and validate_participant_id(self.viewer, field="for") not in self.participants
        ):
            raise InvalidInput(f"for names {self.viewer!r}, who is not one of the participants", field="for")
        validate_limit(self.history_limit, field="history_limit")
        if self.max_prompt_tokens is not None and (
            isinstance(self.max_prompt_tokens, bool)
            or not isinstance(self.max_prompt_tokens, int)
            or self.max_prompt_tokens <= 0
        ):
            raise InvalidInput("max_prompt_tokens must be a positive integer", field="max_prompt_tokens")
        if self.token_method not in ("estimate", "approx", "exact"):
            raise InvalidInput("token_method must be 'estimate', 'approx' or 'exact'", field="token_method")
        if not isinstance(self.calendar, str):
            raise InvalidInput("calendar must be a calendar name", field="calendar")
        get_calendar(self.calendar)
        if self.model is not None and (not isinstance(self.model, str) or not 0 < len(self.model) <= 200):
            raise InvalidInput("model must be a model name", field="model")
        if self.language not in (None, "en", "zh"):
            raise InvalidInput("language must be 'en' or 'zh'", field="language")
        if self.context_role not in ("system", "user"):
            raise InvalidInput("context_role must be 'system' or 'user'", field="context_role")
        if self.speaker_labels not in ("auto", "always", "never"):
            raise InvalidInput("speaker_labels must be 'auto', 'always' or 'never'", field="speaker_labels")
        if not isinstance(self.names, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in self.names.items()
        ):
            raise InvalidInput("names must map participant ids to non-empty display names", field="names")
        scene = _text_block(self.scene, "scene") or ""
        other = _text_block(self.other_data, "other_data") or ""
        if len(scene) + len(other) > MAX_CONTEXT_CHARS:
            raise InvalidInput(f"scene and other_data exceed {MAX_CONTEXT_CHARS} characters", field="scene")
        if isinstance(self.references, str) or not isinstance(self.references, list | tuple):
            raise InvalidInput("references must be a list of participant lists", field="references")
        if len(self.references) > MAX_REFERENCES:
            raise InvalidInput(f"at most {MAX_REFERENCES} references", field="references")
        object.__setattr__(
            self, "references", tuple(normalize_participants(r, field="references") for r in self.references)
        )
        if self.current is not None:
            validate_participant_id(self.current.participant_id, field="current.participant_id")
            if self.current.participant_id not in self.participants:
                raise InvalidInput(
                    f"current.participant_id {self.current.participant_id!r} is not one of the participants",
                    field="current.participant_id",
                )
            if self.current.name is not None and (
                not isinstance(self.current.name, str) or not self.current.name
            ):
                raise InvalidInput("current.name must be a non-empty string", field="current.name")
            if not isinstance(self.current.content, str) or not self.current.content.strip():
                raise InvalidInput("current.content must be a non-empty string", field="current.content")
            if self.current.game_tick is not None:
                check_tick(self.current.game_tick)

    @property
    def reader(self) -> str | None:
        """DLG-3: the participant whose memory the history comes from (`for`, else the voiced NPC)."""
        return self.viewer or self.ai_participant

    @property
    def resolved_language(self) -> Language:
        """The explicit language, else Chinese when the calendar renders Chinese, else English."""
        if self.language is not None:
            return self.language
        cal = get_calendar(self.calendar)
        return "zh" if isinstance(cal, QuadrumCalendar) and cal.style == "zh" else "en"

    @classmethod
    def from_mapping(cls, world_id: str, data: Mapping[str, Any]) -> PromptBuildConfig:
        """Build from a JSON object (HTTP body, queue or direct payload); unknown keys are an error."""
        if not isinstance(data, Mapping):
            raise InvalidInput("the prompt request must be a JSON object", field="body")
        allowed = {f for f in cls.__dataclass_fields__ if f not in ("world_id", "viewer")} | {"for"}
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise InvalidInput(
                f"unknown field(s): {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}", field="body"
            )
        for required in ("participants", "system_prompt"):
            if required not in data:
                raise InvalidInput(f"{required!r} is required", field=required)
        kwargs: dict[str, Any] = {k: v for k, v in data.items() if k not in ("current", "for")}
        kwargs["viewer"] = data.get("for")
        current = data.get("current")
        if current is not None:
            if not isinstance(current, Mapping) or not {"participant_id", "content"} <= set(current):
                raise InvalidInput(
                    "current must be an object with participant_id and content (game_tick, name optional)",
                    field="current",
                )
            extra = sorted(set(current) - {"participant_id", "content", "game_tick", "name"})
            if extra:
                raise InvalidInput(f"unknown field(s) in current: {', '.join(extra)}", field="current")
            kwargs["current"] = CurrentLine(
                participant_id=current["participant_id"],
                content=current["content"],
                game_tick=current.get("game_tick"),
                name=current.get("name"),
            )
        if "names" in kwargs and kwargs["names"] is None:
            kwargs["names"] = {}
        return cls(world_id=world_id, **kwargs)


class _Speakers:
    """Display names and OpenAI names of speakers, decided once per prompt."""

    def __init__(self, config: PromptBuildConfig) -> None:
        self._names = dict(config.names)

    def display(self, participant_id: str, said_as: str | None = None) -> str:
        return said_as or self._names.get(participant_id) or participant_id

    def name(self, participant_id: str, said_as: str | None = None) -> str:
        return openai_name(self.display(participant_id, said_as), participant_id)


def _policy(config: PromptBuildConfig) -> WindowPolicy:
    if config.model is not None:
        policy = WindowPolicy.for_model(config.model, method=config.token_method, name="prompt")
        if config.max_prompt_tokens is not None:
            policy = policy.with_changes(max_tokens=config.max_prompt_tokens)
        return policy
    return WindowPolicy(
        name="prompt",
        max_tokens=config.max_prompt_tokens,
        method=config.token_method,
        honor_pinned=False,
        keep_tool_groups=False,
    )


def _reader(owner: str | None) -> str:
    if owner is None:
        raise ValueError(
            "build_structured_prompt needs the history (and references) or the owner to read them"
        )
    return owner


def build_structured_prompt(
    config: PromptBuildConfig,
    *,
    history: HistoricalContext | None = None,
    owner: str | None = None,
    references: Sequence[EntryRecord] | None = None,
) -> PromptPayload:
    """Seed 004 BuildStructuredPromptAsync: fetch the history (or take `history`), assemble, fit the budget.

    Without `history`, reads `get_historical_context(owner, config.world_id, config.participants,
    config.history_limit)`; without `references`, reads the dialogues of `config.references` (one Query
    each). The token budget is `max_prompt_tokens`, and/or the model's context length minus its output
    reserve when `model` is given; neither means no budget.
    """
    if history is None:
        history = get_historical_context(
            _reader(owner), config.world_id, config.participants, config.history_limit, config.reader
        )
    if references is None:
        references = [
            e
            for participants in config.references
            for e in get_dialogue_entries(
                _reader(owner), config.world_id, participants, config.history_limit, config.reader
            )
        ]
    background_entries = _background_entries(history.ancillary, references)
    calendar = get_calendar(config.calendar)
    labels = _LABELS[config.resolved_language]
    speakers = _Speakers(config)
    policy = _policy(config)

    system_msg = {"role": "system", "content": config.system_prompt}
    context_msg = _context_message(config, labels)
    primary_msgs = [_primary_message(e, config, calendar, speakers) for e in history.primary]
    current_msg = _current_message(config, calendar, speakers)

    recalled = _recall(config, owner, history, background_entries, policy, calendar, speakers)
    # Pass 1: system + context (pinned, so it outranks history) + primary, newest contiguous run, in
    # what the recalled block leaves.
    budget = policy.token_budget
    first = select_window(
        history=primary_msgs,
        policy=policy.with_changes(max_tokens=max(0, budget - recalled.tokens))
        if budget is not None and recalled.tokens
        else policy,
        system=system_msg,
        current=current_msg,
        pinned=[context_msg] if context_msg is not None else (),
    )
    context_kept = context_msg is not None and not any(d.ref == "pinned:0" for d in first.stats.dropped)

    # Pass 2: background lines into what pass 1 left, newest first; the header is the fixed part.
    remaining = None if budget is None else max(0, budget - first.stats.tokens_used - recalled.tokens)
    lines = _background_lines(
        background_entries, bool(references), config, policy, calendar, speakers, labels
    )
    background: dict[str, Any] | None = None
    second: WindowStats | None = None
    for _ in range(_BACKGROUND_PASSES):
        background, second = _fit_background(lines, remaining)
        messages = _assemble(first.messages, background, recalled)
        tokens_used = count_window_tokens(messages, policy)
        if budget is None or remaining is None or background is None or tokens_used <= budget:
            break
        # Approximate counts of separate lines need not add up to the joined message's count; run the
        # engine again with the pass-2 budget shrunk by what the whole prompt overshot.
        remaining = max(0, remaining - (tokens_used - budget))
    else:
        background = None
        messages = _assemble(first.messages, None, recalled)
        tokens_used = count_window_tokens(messages, policy)
    kept_lines = 0 if background is None or second is None else second.kept_history
    kept_background = background_entries[len(background_entries) - kept_lines :] if kept_lines else []
    stats = PromptStats(
        token_method=policy.method,
        token_budget=budget,
        tokens_used=tokens_used,
        over_budget=budget is not None and tokens_used > budget,
        primary_available=len(primary_msgs),
        primary_kept=first.stats.kept_history,
        ancillary_available=len(history.ancillary),
        ancillary_kept=sum(1 for e in kept_background if not e.is_reference),
        references_available=len(references),
        references_kept=sum(1 for e in kept_background if e.is_reference),
        context_kept=context_kept,
        ancillary_dialogues=list(history.ancillary_dialogues),
        reference_dialogues=sorted({e.entry.dialogue_id for e in background_entries if e.is_reference}),
        passes=[first.stats.to_dict()] + ([second.to_dict()] if second is not None else []),
        viewer=config.reader,
        recall=recalled.stats if config.recall is not None else None,
    )
    return PromptPayload(messages, stats)


def _assemble(
    first: Sequence[dict[str, Any]], background: dict[str, Any] | None, recalled: Recalled
) -> list[dict[str, Any]]:
    """Send order: system, [Background], [Recalled], then what pass 1 kept (context, primary, current)."""
    extra = [m for m in (background, recalled.message) if m is not None]
    return [*first[:1], *extra, *first[1:]]


def _recall(
    config: PromptBuildConfig,
    owner: str | None,
    history: HistoricalContext,
    background: Sequence[_BackgroundEntry],
    policy: WindowPolicy,
    calendar: Calendar,
    speakers: _Speakers,
) -> Recalled:
    """MEM-45: the [Recalled] block (nothing without `recall`, or when the history came without an owner)."""
    spec = config.recall
    if spec is None or owner is None:
        return Recalled(None, 0, {})
    query = config.current.content if config.current is not None else ""
    if not query and history.primary:
        query = history.primary[-1].content
    key = dialogue_key(config.participants)
    pool = read_pool(owner, config.world_id, key, config.reader, spec.scan)
    present = {(e.dialogue_id, e.seq) for e in history.primary}
    present |= {(b.entry.dialogue_id, b.entry.seq) for b in background}
    reader = config.reader
    return recall_block(
        spec,
        query,
        pool,
        present,
        policy=policy,
        role=config.context_role,
        who=speakers.display(reader) if reader is not None else speakers.display(config.participants[0]),
        language=config.resolved_language,
        line_text=lambda e: _line_text(
            e, e.dialogue_id != key, calendar, speakers, _LABELS[config.resolved_language]
        ),
    )


def _context_message(config: PromptBuildConfig, labels: Mapping[str, str]) -> dict[str, Any] | None:
    scene = _text_block(config.scene, "scene")
    other = _text_block(config.other_data, "other_data")
    if scene is None and other is None:
        return None
    parts = [labels["context"]]
    if scene is not None:
        parts += [labels["scene"], scene]
    if other is not None:
        parts += [labels["other"], other]
    return {"role": config.context_role, "content": "\n".join(parts)}


def _label_needed(
    config: PromptBuildConfig, speakers: _Speakers, participant_id: str, said_as: str | None
) -> bool:
    if config.speaker_labels != "auto":
        return config.speaker_labels == "always"
    # Many OpenAI-compatible servers drop `name`; with several humans, or a name `name` can't carry
    # (e.g. Chinese), the speaker must be in the text for the model to know who spoke.
    display = speakers.display(participant_id, said_as)
    return len(config.participants) > 2 or speakers.name(participant_id, said_as) != display


def _primary_message(
    entry: EntryRecord, config: PromptBuildConfig, calendar: Calendar, speakers: _Speakers
) -> dict[str, Any]:
    is_ai = (
        entry.participant_id == config.ai_participant
        if config.ai_participant is not None
        else entry.role == "assistant"
    )
    text = entry.content
    if not is_ai and _label_needed(config, speakers, entry.participant_id, entry.name):
        text = f"{speakers.display(entry.participant_id, entry.name)}: {text}"
    return {
        "role": "assistant" if is_ai else "user",
        "content": f"{calendar.format(entry.game_tick)} {text}",
        "name": speakers.name(entry.participant_id, entry.name),
        "message_id": f"{entry.dialogue_id}:{entry.seq}",
    }


def _current_message(
    config: PromptBuildConfig, calendar: Calendar, speakers: _Speakers
) -> dict[str, Any] | None:
    line = config.current
    if line is None:
        return None
    text = line.content
    if _label_needed(config, speakers, line.participant_id, line.name):
        text = f"{speakers.display(line.participant_id, line.name)}: {text}"
    if line.game_tick is not None:
        text = f"{calendar.format(line.game_tick)} {text}"
    return {
        "role": "assistant" if line.participant_id == config.ai_participant else "user",
        "content": text,
        "name": speakers.name(line.participant_id, line.name),
    }


@dataclass(frozen=True)
class _Background:
    header: dict[str, Any]
    lines: list[dict[str, Any]]


@dataclass(frozen=True)
class _BackgroundEntry:
    entry: EntryRecord
    is_reference: bool


def _background_entries(
    ancillary: Sequence[EntryRecord], references: Sequence[EntryRecord]
) -> list[_BackgroundEntry]:
    """Ancillary and referenced entries in one tick order; an entry in both counts as ancillary."""
    seen = {(e.dialogue_id, e.seq) for e in ancillary}
    merged = [_BackgroundEntry(e, False) for e in ancillary]
    merged += [_BackgroundEntry(e, True) for e in references if (e.dialogue_id, e.seq) not in seen]
    merged.sort(key=lambda b: b.entry.sort_key())
    return merged


def _background_lines(
    entries: Sequence[_BackgroundEntry],
    has_references: bool,
    config: PromptBuildConfig,
    policy: WindowPolicy,
    calendar: Calendar,
    speakers: _Speakers,
    labels: Mapping[str, str],
) -> _Background | None:
    """The [Background] header and one pseudo-message per background line, each with its token cost."""
    if not entries:
        return None
    names = [speakers.display(p) for p in config.participants]
    who = (
        names[0] if len(names) == 1 else labels["joiner"].join(names[:-1]) + labels["last_joiner"] + names[-1]
    )
    intro = labels["background_intro_refs"] if has_references else labels["background_intro"].format(who=who)
    header = f"{labels['background']}\n{intro}"
    several = len({b.entry.dialogue_id for b in entries}) > 1
    texts = [_line_text(b.entry, several, calendar, speakers, labels) for b in entries]

    # The message is header + "\n" + line + "\n" + ... + newest line. The tokenizer never merges across
    # a newline followed by "[" (its pre-split ends a piece there), so the cost is additive: a whole
    # message for header + "\n", then each kept line with its trailing newline, except the newest (always
    # the last one kept, since the engine keeps a newest run), which ends the message.
    content_count = policy.with_changes(
        chat_format=False, reuse_stored_tokens=False, counter=None
    ).token_counter()
    header_tokens = policy.with_changes(reuse_stored_tokens=False).token_counter()(
        {"role": config.context_role, "content": header + "\n"}
    )
    newest = len(texts) - 1
    lines = [
        {
            "role": config.context_role,
            "content": text,
            "tokens": content_count({"content": text if i == newest else text + "\n"}),
        }
        for i, text in enumerate(texts)
    ]
    return _Background({"role": config.context_role, "content": header, "tokens": header_tokens}, lines)


def _line_text(
    e: EntryRecord, grouped: bool, calendar: Calendar, speakers: _Speakers, labels: Mapping[str, str]
) -> str:
    """A readable, timestamped line "speaker: text", led by its dialogue's members when `grouped`."""
    group = ""
    if grouped:
        members = e.dialogue_id.split("+") if not e.dialogue_id.startswith("~") else []
        group = f"({labels['joiner'].join(speakers.display(p) for p in members)}) " if members else ""
    return f"{calendar.format(e.game_tick)} {group}{speakers.display(e.participant_id, e.name)}: {e.content}"


def _fit_background(
    background: _Background | None, remaining: int | None
) -> tuple[dict[str, Any] | None, WindowStats | None]:
    """Pass 2: the newest background lines that fit `remaining` tokens, joined into one message."""
    if background is None:
        return None, None
    # Stored counts make the method irrelevant here; chat_format=False keeps reply priming out
    # (pass 1 paid it).
    fit = select_window(
        history=background.lines,
        policy=WindowPolicy(
            name="prompt:background",
            max_tokens=remaining,
            method="estimate",
            chat_format=False,
            honor_pinned=False,
            keep_tool_groups=False,
        ),
        system=background.header,
    )
    if fit.stats.kept_history == 0:
        return None, fit.stats
    kept = [m["content"] for m in fit.messages[1:]]
    role = background.header["role"]
    return {"role": role, "content": "\n".join([background.header["content"], *kept])}, fit.stats
