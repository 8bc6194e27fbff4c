"""Long-conversation QA sets for `python -m bench recall`: loading, evidence mapping, the tuning set.

A dataset is a list of `Conversation`s: turns oldest first (each a message with the dataset's dialog id
as its `message_id`) and questions, each naming the turns that hold its answer (its evidence).

- LoCoMo (snap-research/locomo, ACL 2024: 10 conversations of up to 35 sessions, ~200 questions each) is
  the held-out check. Its repository carries no licence, so it is not committed: the bench reads it from
  `RECALL_DATASET` (the repository's data/locomo10.json, its data/locomo10.zip, or a folder of its
  per-conversation JSON files). `LOCOMO_HOWTO` says how to get it.
- The tuning set is synthetic and built here (`tuning_set()`): multi-session chats in which facts are
  stated once among filler small talk and asked about later, some reworded, some in Chinese. Anything
  tuned is tuned on it, never on LoCoMo.
"""

from __future__ import annotations

import json
import os
import random
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENV_VAR = "RECALL_DATASET"
DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "locomo10.json"
LOCOMO_HOWTO = (
    "LoCoMo is not committed (its repository carries no licence). Get it from "
    "https://github.com/snap-research/locomo (data/locomo10.json, or data/locomo10.zip as stored there) "
    f"and point {ENV_VAR} at the file, or place it at bench/data/locomo10.json (git-ignored)."
)
#: LoCoMo's QA categories as its evaluation code and later papers read them.
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}

_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]  # message ids of the turns that hold the answer (mapped, deduplicated)
    category: str
    unmapped: int = 0  # evidence ids in the labels that name no turn of the conversation


@dataclass
class Conversation:
    name: str
    turns: list[dict[str, Any]] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def normalize_dia_id(raw: str) -> list[str]:
    """Canonical `D<session>:<turn>` ids in one evidence label (LoCoMo writes some as "D8:6; D9:17",
    "D:11:26" or "D30:05")."""
    return [f"D{int(s)}:{int(t)}" for s, t in _DIA_ID.findall(str(raw))]


def map_evidence(labels: Iterable[str], known: Mapping[str, int]) -> tuple[tuple[str, ...], int]:
    """The evidence labels as message ids of known turns (first mention order), and how many name none."""
    found: list[str] = []
    missing = 0
    for label in labels:
        ids = normalize_dia_id(label)
        if not ids:
            missing += 1
        for dia in ids:
            if dia not in known:
                missing += 1
            elif dia not in found:
                found.append(dia)
    return tuple(found), missing


def _turn_text(turn: Mapping[str, Any]) -> str:
    text = str(turn.get("text") or "").strip()
    caption = turn.get("blip_caption")
    if caption:  # the turn shared a photo: a chat message would carry it; its caption stands in for it
        text = f"{text} [photo: {caption}]".strip()
    return text


def _sessions(conversation: Mapping[str, Any]) -> Iterator[list[Mapping[str, Any]]]:
    numbers = sorted(int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    for n in numbers:
        turns = conversation[f"session_{n}"]
        if isinstance(turns, list):
            yield turns


def locomo_conversation(sample: Mapping[str, Any], name: str) -> Conversation:
    """One LoCoMo sample (the canonical `{"conversation": {...}, "qa": [...]}` or the flat layout of the
    repository's zip) as a Conversation: speaker_a's turns are the user's, speaker_b's the assistant's."""
    body = sample.get("conversation") or sample
    speaker_a = body.get("speaker_a")
    conv = Conversation(str(sample.get("sample_id") or name))
    known: dict[str, int] = {}
    for session in _sessions(body):
        for turn in session:
            ids = normalize_dia_id(str(turn.get("dia_id", "")))
            if not ids or ids[0] in known:
                continue
            role = "user" if turn.get("speaker") == speaker_a else "assistant"
            known[ids[0]] = len(conv.turns)
            conv.turns.append({"role": role, "content": _turn_text(turn), "message_id": ids[0]})
    for qa in sample.get("qa") or ():
        evidence, missing = map_evidence(qa.get("evidence") or (), known)
        category = qa.get("category")
        label = LOCOMO_CATEGORIES.get(category, str(category)) if isinstance(category, int) else "n/a"
        conv.questions.append(Question(str(qa.get("question") or ""), evidence, label, missing))
    return conv


def _samples_in(path: Path) -> Iterator[tuple[str, Any]]:
    if path.is_dir():
        for child in sorted(path.rglob("*.json")):
            yield child.stem, json.loads(child.read_text(encoding="utf-8"))
    elif path.suffix == ".zip":
        with zipfile.ZipFile(path) as archive:
            for member in sorted(archive.namelist()):
                if member.endswith(".json") and not member.startswith("__MACOSX"):
                    yield Path(member).stem, json.loads(archive.read(member))
    else:
        yield path.stem, json.loads(path.read_text(encoding="utf-8"))


def load_locomo(path: Path) -> list[Conversation]:
    """Every conversation with questions found at `path` (file, zip or folder)."""
    out: list[Conversation] = []
    for stem, data in _samples_in(path):
        samples = data if isinstance(data, list) else [data]
        for index, sample in enumerate(samples):
            if isinstance(sample, dict) and sample.get("qa"):
                out.append(locomo_conversation(sample, f"{stem}-{index}" if len(samples) > 1 else stem))
    return out


def locomo_path() -> Path | None:
    """Where LoCoMo is (RECALL_DATASET, else bench/data/locomo10.json), or None when it is missing."""
    raw = os.environ.get(ENV_VAR)
    path = Path(raw).expanduser() if raw else DEFAULT_PATH
    return path if path.exists() else None


# -- the synthetic tuning set ---------------------------------------------------------------------------

_FILLER = [
    "Haha, that sounds like a lot of fun, tell me more when you have time.",
    "I had a pretty quiet week, mostly work and a bit of reading in the evenings.",
    "The weather has been all over the place lately, sunny one day and pouring the next.",
    "Thanks for asking! Things are good, just busy as usual with everything going on.",
    "That's great to hear, I'm really happy things are working out for you.",
    "I know what you mean, some weeks just fly by before you notice.",
    "We should catch up properly soon, maybe over coffee or a long walk.",
    "Honestly I think taking a break now and then makes a huge difference.",
    "Oh nice, I have been meaning to try something like that myself.",
    "It has been a long day but talking to you always cheers me up.",
    "好久不见，最近工作有点忙，不过周末过得还不错。",
    "Good luck with everything, let me know how it goes next time we talk.",
]
# Small talk that reuses the facts' words in other senses, so a term match alone is not the answer.
_DISTRACTORS = [
    "I read an article about {city} yesterday, it looks like a lovely place to visit.",
    "My neighbour has a {pet} too, it keeps escaping into our garden.",
    "Did you ever watch that documentary called {project}? Someone recommended it.",
    "{name} from my old school messaged me out of the blue this week.",
    "I walked past a restaurant that serves {dish}, the queue was enormous.",
    "Somebody at work brought {allergen} cookies, the whole office loved them.",
    "Every {day} feels longer than it should, no idea why.",
    "We talked about {hobby} for hours at the party last {month}.",
]
# (statement, question, question category): the statement's slots are filled from _SLOTS.
_FACTS = [
    ("My sister {name} just moved to {city} for a new job.", "Where did {name} move to?", "direct"),
    ("I adopted a {pet} last month and named it {petname}.", "What is the name of my {pet}?", "direct"),
    ("I started taking {hobby} lessons every {day} evening.", "Which lessons do I take on {day}s?", "direct"),
    (
        "My favourite dish these days is {dish}, I cook it every weekend.",
        "What do I cook on weekends?",
        "reworded",
    ),
    (
        "The team finally shipped the {project} release after months of work.",
        "Which release did we ship?",
        "reworded",
    ),
    ("I'm allergic to {allergen}, so I always check the menu.", "What am I allergic to?", "direct"),
    (
        "We booked a trip to {city} in {month} for our anniversary.",
        "When is the anniversary trip?",
        "reworded",
    ),
    ("我在{cn_city}买了一套房子，下个月搬家。", "我在哪里买了房子？", "chinese"),
]
_SLOTS = {
    "name": ["Alice", "Priya", "Tomás", "Mei", "Olga", "Kwame"],
    "city": ["Lisbon", "Osaka", "Toronto", "Nairobi", "Krakow", "Denver"],
    "pet": ["cat", "parrot", "rabbit", "dog"],
    "petname": ["Biscuit", "Nimbus", "Pepper", "Zorro"],
    "hobby": ["pottery", "violin", "salsa", "climbing"],
    "day": ["Monday", "Tuesday", "Thursday"],
    "dish": ["mushroom risotto", "lamb tagine", "pad thai"],
    "project": ["Falcon", "Orchid", "Atlas"],
    "allergen": ["peanuts", "shellfish", "sesame"],
    "month": ["March", "September", "November"],
    "cn_city": ["杭州", "成都", "苏州"],
}


def tuning_set(conversations: int = 6, sessions: int = 12, turns_per_session: int = 40) -> list[Conversation]:
    """Deterministic synthetic conversations (`sessions` x `turns_per_session` turns each): each of the
    first sessions states one fact once, among small talk and distractors that reuse its words; one
    question per fact (categories: direct, reworded, chinese)."""
    out = []
    for c in range(conversations):
        rng = random.Random(1_000 + c)
        conv = Conversation(f"tuning-{c}")
        facts = rng.sample(_FACTS, k=len(_FACTS))
        for s in range(sessions):
            fact = facts[s] if s < len(facts) else None
            where = rng.randrange(2, turns_per_session - 2)
            for t in range(turns_per_session):
                message_id = f"S{s + 1}:{t + 1}"
                role = "user" if t % 2 == 0 else "assistant"
                if fact is not None and t == where:
                    values = {k: rng.choice(v) for k, v in _SLOTS.items()}
                    statement, question, category = fact
                    conv.turns.append(
                        {"role": "user", "content": statement.format(**values), "message_id": message_id}
                    )
                    conv.questions.append(Question(question.format(**values), (message_id,), category))
                elif rng.random() < 0.15:
                    values = {k: rng.choice(v) for k, v in _SLOTS.items()}
                    text = rng.choice(_DISTRACTORS).format(**values)
                    conv.turns.append({"role": role, "content": text, "message_id": message_id})
                else:
                    text = " ".join(rng.sample(_FILLER, k=rng.randint(1, 2)))
                    conv.turns.append({"role": role, "content": text, "message_id": message_id})
        out.append(conv)
    return out
