"""The one table from domain error codes to HTTP statuses, and the statuses a post answers with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from chat_core import errors

if TYPE_CHECKING:
    from chat_core.chat.views import PostOutcome

#: Error code -> HTTP status. An error whose own code is not listed takes its nearest listed base
#: class's status (e.g. every `NotFound` is 404), so a new domain error needs no entry to be answered.
STATUS_BY_CODE: Final[dict[str, int]] = {
    errors.ChatError.code: 500,
    errors.InvalidInput.code: 400,
    errors.MessageTooLong.code: 422,
    errors.InvalidCursor.code: 400,
    errors.Unauthorized.code: 401,
    errors.NotFound.code: 404,
    errors.Forbidden.code: 403,
    errors.BudgetExceeded.code: 429,
    errors.RateLimited.code: 429,
    errors.Conflict.code: 409,
    errors.ProviderFailed.code: 502,
    errors.StoreUnavailable.code: 503,
    errors.TokenizerUnavailable.code: 500,
    errors.InvalidGameTick.code: 400,
    errors.IdempotencyKeyReused.code: 422,
    errors.SummaryFailed.code: 502,
    errors.OrphanToolResult.code: 422,
    errors.ToolResultsMissing.code: 422,
    errors.ToolPayloadTooLarge.code: 422,
    errors.PinRefused.code: 422,
    errors.InvalidSettings.code: 422,
    errors.PayloadTooLarge.code: 413,
}


def status_for(error: errors.ChatError | type[errors.ChatError]) -> int:
    """The HTTP status of a domain error: its code's, else its nearest base class's (500 at worst)."""
    kind = error if isinstance(error, type) else type(error)
    for cls in kind.__mro__:
        code = getattr(cls, "code", None)
        if isinstance(code, str) and code in STATUS_BY_CODE:
            return STATUS_BY_CODE[code]
    return 500


#: POST /messages: the turn stored (201); the model failed, the turn stored as an error turn (502);
#: the model answered but its reply could not be stored, the answer carries it (503 reply_not_stored).
POST_CREATED: Final = 201


def post_status(outcome: PostOutcome) -> int:
    """The status a post answers with, from what it did."""
    if not outcome.reply_stored:
        return status_for(errors.ReplyNotStored)
    if outcome.model_failed:
        return status_for(errors.ProviderFailed)
    return POST_CREATED
