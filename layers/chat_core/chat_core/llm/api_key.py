"""The model API keys (the chat model's, the embeddings model's): from the environment, SSM Parameter Store
or Secrets Manager, cached by the runtime."""

from __future__ import annotations

import json
import re
from typing import Any, Final, Literal

from chat_core.errors import ChatError
from chat_core.llm.parsing import describe
from chat_core.runtime import for_settings
from chat_core.settings import Settings

# -- API key from the environment, SSM Parameter Store or Secrets Manager ------------------------------

#: The runtime's parameter stores, one per (service, region): `(KEY_STORE, service, region)`.
KEY_STORE: Final = "llm.api_key.store"
_ARN_REGION: Final = re.compile(r"^arn:aws[a-z-]*:(?:secretsmanager|ssm):([a-z0-9-]+):")


def api_key_source(reference: str) -> tuple[Literal["ssm", "secretsmanager"], str, str | None]:
    """Where LLM_API_KEY_PARAMETER (or EMBEDDINGS_API_KEY_PARAMETER) points: (service, name or ARN,
    region from the ARN if any).

    `arn:aws:secretsmanager:...` and `secret:NAME` are Secrets Manager; `ssm:NAME`, an SSM ARN or a
    plain name such as `/chat/llm-api-key` are SSM Parameter Store.
    """
    ref = reference.strip()
    match = _ARN_REGION.match(ref)
    region = match.group(1) if match else None
    if ref.startswith("secret:"):
        return "secretsmanager", ref.removeprefix("secret:"), None
    if ref.startswith("arn:") and ":secretsmanager:" in ref:
        return "secretsmanager", ref, region
    return "ssm", ref.removeprefix("ssm:"), region


def resolve_api_key(settings: Settings) -> str | None:
    """The chat model's API key: from LLM_API_KEY_PARAMETER (SSM/Secrets Manager, cached) if set, else
    LLM_API_KEY. Raises ChatError with a clear message when the parameter cannot be read."""
    return read_api_key(
        settings, settings.llm_api_key_parameter, settings.llm_api_key, "LLM_API_KEY", "the model API key"
    )


def resolve_embeddings_api_key(settings: Settings) -> str | None:
    """MEM-56: the key of the embeddings model at EMBEDDINGS_BASE_URL: from EMBEDDINGS_API_KEY_PARAMETER
    (SSM/Secrets Manager, cached) if set, else EMBEDDINGS_API_KEY. Raises ChatError like resolve_api_key."""
    return read_api_key(
        settings,
        settings.embeddings_api_key_parameter,
        settings.embeddings_api_key,
        "EMBEDDINGS_API_KEY",
        "the embeddings API key",
    )


def read_api_key(
    settings: Settings, reference: str | None, plain: str | None, variable: str, what: str
) -> str | None:
    """The key `reference` names (`{variable}_PARAMETER`, read through the runtime's cached parameter
    stores for LLM_API_KEY_CACHE_SECONDS), else `plain` (the `variable` itself); errors name `what` and
    the variable holding the reference."""
    if not reference:
        return plain
    service, name, arn_region = api_key_source(reference)
    region = arn_region or settings.region
    store = for_settings(settings).resource(
        (KEY_STORE, service, region), lambda _: _key_store(service, region)
    )
    # Imported here: only deployments that keep the key in AWS pay for the import.
    from aws_lambda_powertools.utilities.parameters import GetParameterError, TransformParameterError

    try:
        if service == "ssm":
            value = store.get(name, decrypt=True, max_age=settings.llm_api_key_cache_seconds)
        else:
            value = store.get(name, max_age=settings.llm_api_key_cache_seconds)
    except (GetParameterError, TransformParameterError) as exc:
        raise ChatError(
            f"could not read {what} from {reference!r} ({variable}_PARAMETER): {describe(exc)}"
        ) from exc
    # A secret holding JSON ({"api_key": "..."}) is common in Secrets Manager.
    key = _key_from_value(value, ("api_key", "apiKey", variable, "key", "token"))
    if not key:
        raise ChatError(f"{what} stored at {reference!r} ({variable}_PARAMETER) is empty")
    return key


def _key_store(service: str, region: str) -> Any:
    """A Powertools parameter store (it caches what it reads for `max_age`)."""
    from aws_lambda_powertools.utilities.parameters import SecretsProvider, SSMProvider
    from botocore.config import Config

    # Short timeouts: the key fetch shares the caller's time budget with the model call.
    config = Config(region_name=region, connect_timeout=2, read_timeout=3, retries={"max_attempts": 2})
    return SSMProvider(boto_config=config) if service == "ssm" else SecretsProvider(boto_config=config)


def _key_from_value(value: Any, json_keys: tuple[str, ...]) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return text
        if isinstance(data, dict):
            for key in json_keys:
                candidate = data.get(key)
                if isinstance(candidate, str):
                    return candidate.strip()
            strings = [str(v) for v in data.values() if isinstance(v, str)]
            return strings[0].strip() if len(strings) == 1 else None
    return text
