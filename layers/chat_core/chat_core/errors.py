"""Domain errors raised by chat_core; the HTTP edge maps each `code` to a status in one place."""

from __future__ import annotations

from typing import Any


class ChatError(Exception):
    """Base of every domain error. `code` is stable and machine-readable; `message` is for people."""

    code = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(ChatError):
    code = "invalid_input"


class MessageTooLong(InvalidInput):
    code = "message_too_long"


class InvalidCursor(InvalidInput):
    code = "invalid_cursor"


class Unauthorized(ChatError):
    code = "unauthorized"


class Forbidden(ChatError):
    """The caller is known but may not do this (another user's usage without the admin group)."""

    code = "forbidden"


class BudgetExceeded(ChatError):
    """COST-4: the caller is over a daily or monthly budget; the model was not asked and nothing was
    stored. `retry_after` (seconds) is when the window that is over resets."""

    code = "budget_exceeded"


class RateLimited(ChatError):
    """OPS-4: the caller sent more model-calling requests this minute than RATE_LIMIT_PER_MINUTE allows;
    the model was not asked and nothing was stored. `retry_after` (seconds) is when the minute ends."""

    code = "rate_limited"


class NotFound(ChatError):
    code = "not_found"


class ConversationNotFound(NotFound):
    code = "conversation_not_found"


class MessageNotFound(NotFound):
    code = "message_not_found"


class Conflict(ChatError):
    code = "conflict"


class ConversationKeyTaken(Conflict):
    """API-21: POST /conversations with a key that already names one of the caller's live conversations."""

    code = "conversation_key_taken"


class ProviderFailed(ChatError):
    """The model call failed (HTTP error, timeout, malformed body); carries what the provider sent.

    `provider_response` is the provider's response as received (status, headers of interest, body as
    parsed JSON or text, capped to fit a DynamoDB item), `status_code` the last HTTP status (None when
    no response arrived) and `kind` one of "http_error", "timeout", "malformed", "connection",
    "too_large" (body over the read limit) or "configuration" (e.g. the API key could not be read).
    """

    code = "provider_failed"

    def __init__(
        self,
        message: str,
        *,
        provider_response: dict[str, Any] | None = None,
        status_code: int | None = None,
        kind: str = "http_error",
        **details: Any,
    ) -> None:
        super().__init__(
            message, provider_response=provider_response, status_code=status_code, kind=kind, **details
        )
        self.provider_response: dict[str, Any] = provider_response if provider_response is not None else {}
        self.status_code = status_code
        self.kind = kind


class StoreUnavailable(ChatError):
    """DynamoDB throttled or failed transiently after retries; safe to retry later."""

    code = "store_unavailable"


class InvariantBroken(ChatError):
    """A state the code's own callers promise never happens (a bug, not bad input): 500 with the request
    id, the details logged. Raised instead of `assert`, which `python -O` would remove."""

    code = "internal_error"


class TokenizerUnavailable(ChatError):
    code = "tokenizer_unavailable"


class InvalidGameTick(InvalidInput):
    """A dialogue entry's game_tick is not an integer in 0..2**63-1 (seed 004)."""

    code = "invalid_game_tick"


class DialogueNotFound(NotFound):
    """No dialogue with that id (or participant set) in this world of this owner."""

    code = "dialogue_not_found"


class WorldNotFound(NotFound):
    """No such world of this owner, or it was deleted (DLG-4)."""

    code = "world_not_found"


class WorldDeleted(Conflict):
    """A write into a world that was deleted and is waiting for its purge (DLG-4)."""

    code = "world_deleted"


class EntryNotFound(NotFound):
    """No entry with that id in the dialogue (DLG-4)."""

    code = "entry_not_found"


class SaveNotFound(NotFound):
    """No save with that id in the world, or (reverting) it is not loaded (DLG-5)."""

    code = "save_not_found"


class WorldNotEmpty(Conflict):
    """An import into a world that already holds dialogues, without asking to merge."""

    code = "world_not_empty"


class IdempotencyKeyReused(InvalidInput):
    """An Idempotency-Key was sent again with a different request body (API-6): refused, never replayed."""

    code = "idempotency_key_reused"


class RequestInProgress(Conflict):
    """The first request with this Idempotency-Key is still running; retry after it finishes."""

    code = "request_in_progress"


class ReplyNotStored(StoreUnavailable):
    """The model answered but the reply could not be saved: the answer carries the reply (`outcome`)."""

    code = "reply_not_stored"

    def __init__(self, outcome: Any) -> None:
        super().__init__("the model answered but its reply could not be saved")
        self.outcome = outcome


class ConversationBusy(Conflict):
    """Too many concurrent posts to one conversation kept winning the next sequence number; retry."""

    code = "conversation_busy"


class SummaryFailed(ChatError):
    """The model could not summarize a conversation (seed 001); the stored summary is left as it was."""

    code = "summary_failed"


class ConversationNotExpired(Conflict):
    """A purge was asked for a conversation that is live or still within its retention period."""

    code = "conversation_not_expired"


class OrphanToolResult(InvalidInput):
    """A `tool` message whose tool_call_id answers no pending tool call (or answers one twice)."""

    code = "orphan_tool_result"


class ToolResultsMissing(InvalidInput):
    """Tool calls left without their results where the OpenAI format needs them answered."""

    code = "tool_results_missing"


class ToolResultsPending(Conflict):
    """The model's last answer asked for tool calls: the next post must carry their results."""

    code = "tool_results_pending"


class ToolPayloadTooLarge(InvalidInput):
    """Tool-call arguments, a tool result or the recorded messages of one post are over their size cap."""

    code = "tool_payload_too_large"


class PinRefused(InvalidInput):
    """A message that cannot be pinned: a tool call or result, a failed reply, or over the pin caps."""

    code = "pin_refused"


class PayloadTooLarge(ChatError):
    """The request body is over the route's size limit (checked before it is parsed)."""

    code = "payload_too_large"


class InvalidSettings(InvalidInput):
    """Model settings a provider would refuse together (API-11): `tool_choice` without `tools`, a named
    tool that is not defined, tools over their size cap."""

    code = "invalid_settings"


class TurnEnded(Conflict):
    """The turn reached MAX_TURN_STEPS model calls: its tool results are stored, the model is not asked."""

    code = "max_turn_steps"
