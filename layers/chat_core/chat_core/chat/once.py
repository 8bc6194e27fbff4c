"""Idempotency-Key for the POST routes that do not call the model (API-6 on API-18's append).

The first request with a key runs and stores a small record (what it wrote); a retry with the same key
and body rebuilds the same answer from that record; the same key with another body is refused (422),
and a retry while the first is still running is told so (409). Records live in the service's table and
expire like the post's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from chat_core.errors import IdempotencyKeyReused, RequestInProgress, StoreUnavailable
from chat_core.runtime import current
from chat_core.settings import Settings
from chat_core.store import idempotency as idempotency_store

#: A run returns (the answer, the record a retry rebuilds it from).
Run = Callable[[], tuple[dict[str, Any], dict[str, Any]]]
Replay = Callable[[Mapping[str, Any]], dict[str, Any]]

#: The runtime's idempotent wrapper of each operation: `(ONCE, name)`.
ONCE: Final = "chat.once"


def _wrapped(name: str) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    return current().resource((ONCE, name), lambda settings: _build(name, settings))


def _build(name: str, settings: Settings) -> tuple[IdempotencyConfig, Callable[..., dict[str, Any]]]:
    """`execute` wrapped in Powertools Idempotency on the service's table, under `name`."""
    config = IdempotencyConfig(
        event_key_jmespath="[owner, key]",
        payload_validation_jmespath="body",
        raise_on_no_idempotency_key=True,
        expires_after_seconds=settings.idempotency_ttl_seconds,
    )

    def execute(*, request: dict[str, Any], run: Run, sink: list[dict[str, Any]]) -> dict[str, Any]:
        answer, record = run()
        sink.append(answer)
        return record

    wrapped: Callable[..., dict[str, Any]] = idempotent_function(
        execute,
        data_keyword_argument="request",
        persistence_store=idempotency_store.persistence_layer(settings),
        config=config,
        key_prefix=name,
    )
    return config, wrapped


def once(
    name: str,
    owner: str,
    key: str | None,
    body: Mapping[str, Any],
    run: Run,
    replay: Replay,
    context: Any = None,
) -> dict[str, Any]:
    """`run()` once per (owner, key): its answer, or on a retry `replay(record)`. With the Lambda
    `context`, a run its invocation's timeout cut off stops holding the key when the invocation ends."""
    if key is None:
        return run()[0]
    sink: list[dict[str, Any]] = []
    payload = {"owner": owner, "key": key, "body": dict(body)}
    config, wrapped = _wrapped(name)
    if context is not None:
        config.register_lambda_context(context)
    try:
        record = wrapped(request=payload, run=run, sink=sink)
    except IdempotencyValidationError as exc:
        raise IdempotencyKeyReused(
            "this Idempotency-Key was already used with a different request body; use a new key"
        ) from exc
    except IdempotencyAlreadyInProgressError as exc:
        raise RequestInProgress(
            "a request with this Idempotency-Key is still in progress; retry when it has finished"
        ) from exc
    except IdempotencyPersistenceLayerError as exc:
        raise StoreUnavailable("the idempotency record could not be read or written; retry") from exc
    return sink[0] if sink else replay(record)
