"""What a built prompt holds (seed 004 PromptPayload) and what its budget left out (PromptStats)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PromptStats:
    """What the payload holds and what the budget left out."""

    token_method: str
    token_budget: int | None
    tokens_used: int
    over_budget: bool
    primary_available: int
    primary_kept: int
    ancillary_available: int
    ancillary_kept: int
    context_kept: bool
    ancillary_dialogues: list[str]
    passes: list[dict[str, Any]]
    references_available: int = 0
    references_kept: int = 0
    reference_dialogues: list[str] = field(default_factory=list)
    viewer: str | None = None
    #: MEM-45: what recall brought back (only when the request asked for recall).
    recall: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        out = {
            "for": self.viewer,
            "token_method": self.token_method,
            "token_budget": self.token_budget,
            "tokens_used": self.tokens_used,
            "tokens_remaining": None
            if self.token_budget is None
            else max(0, self.token_budget - self.tokens_used),
            "over_budget": self.over_budget,
            "primary": {
                "available": self.primary_available,
                "kept": self.primary_kept,
                "dropped": self.primary_available - self.primary_kept,
            },
            "ancillary": {
                "available": self.ancillary_available,
                "kept": self.ancillary_kept,
                "dropped": self.ancillary_available - self.ancillary_kept,
                "dialogues": list(self.ancillary_dialogues),
            },
            "references": {
                "available": self.references_available,
                "kept": self.references_kept,
                "dropped": self.references_available - self.references_kept,
                "dialogues": list(self.reference_dialogues),
            },
            "context_kept": self.context_kept,
            "passes": self.passes,
        }
        if self.recall is not None:
            out["recall"] = self.recall
        return out


@dataclass(frozen=True)
class PromptPayload:
    """Seed 004 PromptPayload: OpenAI chat messages in send order, plus stats."""

    messages: list[dict[str, Any]]
    stats: PromptStats

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready `{messages, stats}`."""
        return {"messages": self.messages, "stats": self.stats.to_dict()}
