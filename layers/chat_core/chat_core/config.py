"""The one place chat_core reads the environment: every setting, typed.

`read_settings()` reads it each time it is called; a process reads it once, when its runtime is built
(`chat_core.runtime`), and every module asks `chat_core.settings.get_settings()` for that runtime's settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ValueError(f"environment variable {name} must be an integer, got {raw!r}") from exc


def _facts_mode(raw: str) -> str:
    mode = raw.strip().lower() or "off"
    if mode in ("0", "false", "no"):
        return "off"
    if mode not in ("off", "opt_in", "all"):
        raise ValueError(f"environment variable FACTS_EXTRACTION must be off, opt_in or all, got {raw!r}")
    return mode


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ValueError(f"environment variable {name} must be a number, got {raw!r}") from exc


def _usd_micros(name: str) -> int:
    """A dollar amount ("5", "0.25") as integer micro-dollars; empty or 0: no limit."""
    value = _float(name, 0.0)
    if value < 0:
        raise ValueError(f"environment variable {name} must be zero or more dollars, got {value}")
    return round(value * 1_000_000)


def _str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip() or default


#: The tokenizers the layer ships (chat_core/encodings/; a test keeps this equal to
#: chat_core.tokens.SHIPPED_ENCODINGS). A setting naming another one is refused at start.
SHIPPED_TOKENIZERS = (
    "cl100k_base",
    "o200k_base",
    "llama3",
    "llama4",
    "qwen2",
    "deepseek_v3",
    "mistral_tekken",
    "mistral_sp_v1",
    "mistral_sp_v2",
    "mistral_sp_v3",
    "mistral_sp_v7",
)


def _tokenizer(name: str, value: str) -> str:
    if value not in SHIPPED_TOKENIZERS:
        raise ValueError(
            f"environment variable {name} names the tokenizer {value!r}, which is not shipped; "
            f"the shipped tokenizers are {', '.join(SHIPPED_TOKENIZERS)}"
        )
    return value


def _model_tokenizers(name: str) -> tuple[tuple[str, str], ...]:
    """ "deepseek-v4=deepseek_v3, my-finetune=llama3" -> (("deepseek-v4", "deepseek_v3"), ...), checked."""
    pairs: list[tuple[str, str]] = []
    for entry in _str(name).split(","):
        if not entry.strip():
            continue
        prefix, sep, tokenizer = entry.partition("=")
        if not sep or not prefix.strip():
            raise ValueError(
                f"environment variable {name} must be 'model-prefix=tokenizer,...', got {entry!r}"
            )
        pairs.append((prefix.strip().lower(), _tokenizer(name, tokenizer.strip())))
    return tuple(pairs)


@dataclass(frozen=True)
class Settings:
    """The settings of one runtime: `read_settings()` reads them from the environment; tests may build
    their own (`Settings(table_name=...)`) and a runtime from them (`Runtime.from_settings`)."""

    # storage
    table_name: str = "chat-history"
    region: str = "us-east-1"
    dynamodb_endpoint: str | None = None
    retention_days: int = 30
    #: API-17: the S3 bucket for large content parts (BLOB_BUCKET; none: parts stay inline, 256 KiB at most)
    blob_bucket: str | None = None
    blob_inline_bytes: int = 16_384
    blob_url_seconds: int = 900
    #: DLG-6: the queue world import jobs run from (IMPORT_QUEUE_URL)
    import_queue_url: str | None = None
    #: PRV-1..3: the queue a user's erasure, export and import jobs run from (USER_DATA_QUEUE_URL)
    user_data_queue_url: str | None = None
    #: PRV-1: seconds between an erasure's sweep and its last sweep (what writes still in flight left)
    erasure_settle_seconds: int = 120
    # model provider
    llm_base_url: str | None = None
    llm_api_key: str | None = None
    llm_api_key_parameter: str | None = None
    llm_model: str = "gpt-4o-mini"
    #: Further models GET /v1/models lists (LLM_MODELS, comma-separated); any model name may be posted.
    llm_models: tuple[str, ...] = ()
    llm_timeout_seconds: float = 30.0
    llm_max_retries: int = 2
    llm_connect_timeout_seconds: float = 3.0
    llm_max_response_bytes: int = 1_048_576
    llm_api_key_cache_seconds: int = 300
    # tokens and window
    default_encoding: str = "o200k_base"
    #: MODEL_TOKENIZERS "prefix=tokenizer,...": the tokenizer a model name prefix is counted with, over
    #: the built-in map (a shipped one only: anything else is refused when the settings are read).
    model_tokenizers: tuple[tuple[str, str], ...] = ()
    max_content_chars: int = 5000
    # HTTP service (STO-1)
    cursor_secret: str = ""
    idempotency_ttl_seconds: int = 3600
    post_attempts: int = 16  # TransactWrite #1 attempts when posts race (jittered backoff between)
    turn_wait_seconds: float = 10.0  # how long a post waits for its turn at a busy conversation
    # summaries (seed 001) and retention purge (AGT-1)
    summary_enabled: bool = True
    summary_margin_messages: int = 4
    summary_input_max_tokens: int = 6000
    summary_max_tokens: int = 400
    summary_max_steps: int = 4
    summary_model: str | None = None
    # long-term facts (MEM-30..37): extraction off by default; "opt_in" extracts from conversations whose
    # window policy asks for facts, "all" from every conversation but those that turn it off
    facts_extraction: str = "off"
    facts_model: str | None = None
    facts_input_max_tokens: int = 4000
    facts_max_current: int = 100
    #: MEM-48: semantic recall's embeddings model (RECALL_EMBEDDINGS_MODEL; none: off), the vector size
    #: asked of it (RECALL_EMBEDDINGS_DIMENSIONS; 0: the model's own) and the inputs of one request
    recall_embeddings_model: str | None = None
    #: MEM-55: the model name the current message is embedded with at window time
    #: (RECALL_EMBEDDINGS_QUERY_MODEL; none: RECALL_EMBEDDINGS_MODEL), for models such as e5 whose
    #: queries take another prefix than their passages
    recall_embeddings_query_model: str | None = None
    recall_embeddings_dimensions: int = 0
    recall_embeddings_batch: int = 64
    #: MEM-48: where the embeddings model answers (EMBEDDINGS_BASE_URL), when not at the chat model's
    #: LLM_BASE_URL; its API key is EMBEDDINGS_API_KEY or, winning over it, the SSM parameter or secret
    #: EMBEDDINGS_API_KEY_PARAMETER names (MEM-56; else, at the chat model's address, the chat model's)
    embeddings_base_url: str | None = None
    embeddings_api_key: str | None = None
    embeddings_api_key_parameter: str | None = None
    # turn log (seed 002): model calls allowed in one turn before it ends with status max_steps
    max_turn_steps: int = 100
    # costs and budgets (COST-1..COST-4): the deployment's prices over the built-in table (PRICES, JSON;
    # or the SSM parameter PRICES_PARAMETER, read again after prices_cache_seconds), the JWT group or
    # scope of administrators (ADMIN_GROUP; empty: nobody), default budgets per user (0: no limit)
    prices: str = ""
    prices_parameter: str | None = None
    prices_cache_seconds: int = 300
    admin_group: str = ""
    budget_daily_tokens: int = 0
    budget_daily_micros: int = 0
    budget_monthly_tokens: int = 0
    budget_monthly_micros: int = 0
    budgets_enabled: bool = False
    # abuse limit (OPS-4): model-calling requests one user may start per UTC minute (0: no limit)
    rate_limit_per_minute: int = 0
    # reliability (REL): DynamoDB retries (botocore "standard" mode: jittered exponential backoff,
    # 25 ms base for transient errors, 1 s for throttling) and timeouts; what clients are told to wait;
    # when a reserved reply slot counts as abandoned; request and reply size caps
    dynamodb_max_attempts: int = 4
    dynamodb_connect_timeout_seconds: float = 2.0
    dynamodb_read_timeout_seconds: float = 10.0
    retry_after_seconds: int = 1
    abandoned_turn_seconds: int = 120
    max_request_body_bytes: int = 262_144
    max_reply_bytes: int = 262_144
    service_name: str = "chat-history"
    metrics_namespace: str = "ChatHistory"
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def budgets_on(self) -> bool:
        """COST-4: whether posts check the caller's budget (one read): a default limit is set, or
        BUDGETS_ENABLED says so (per-user limits only)."""
        return self.budgets_enabled or any(
            (
                self.budget_daily_tokens,
                self.budget_daily_micros,
                self.budget_monthly_tokens,
                self.budget_monthly_micros,
            )
        )

    @property
    def offline_model(self) -> bool:
        """True when no provider is configured and the built-in offline model answers."""
        return not self.llm_base_url

    @property
    def embeddings_url(self) -> str | None:
        """The embeddings model's base URL: EMBEDDINGS_BASE_URL, else the chat model's (None: offline)."""
        return self.embeddings_base_url or self.llm_base_url

    @property
    def recall_query_model(self) -> str | None:
        """MEM-55: the model name the current message is embedded with (None: semantic recall is off)."""
        if not self.recall_embeddings_model:
            return None
        return self.recall_embeddings_query_model or self.recall_embeddings_model


def read_settings() -> Settings:
    """The settings the environment holds now (a runtime reads them once: Lambda init, local server start)."""
    return Settings(
        table_name=_str("TABLE_NAME", "chat-history"),
        region=_str("AWS_REGION", _str("AWS_DEFAULT_REGION", "us-east-1")),
        dynamodb_endpoint=_str("DYNAMODB_ENDPOINT") or None,
        retention_days=_int("RETENTION_DAYS", 30),
        blob_bucket=_str("BLOB_BUCKET") or None,
        blob_inline_bytes=max(1024, _int("BLOB_INLINE_BYTES", 16_384)),
        blob_url_seconds=min(max(60, _int("BLOB_URL_SECONDS", 900)), 604_800),
        import_queue_url=_str("IMPORT_QUEUE_URL") or None,
        user_data_queue_url=_str("USER_DATA_QUEUE_URL") or None,
        erasure_settle_seconds=min(max(0, _int("ERASURE_SETTLE_SECONDS", 120)), 900),
        llm_base_url=_str("LLM_BASE_URL").rstrip("/") or None,
        llm_api_key=_str("LLM_API_KEY") or None,
        llm_api_key_parameter=_str("LLM_API_KEY_PARAMETER") or None,
        llm_model=_str("LLM_MODEL", "gpt-4o-mini"),
        llm_models=tuple(name.strip() for name in _str("LLM_MODELS").split(",") if name.strip()),
        llm_timeout_seconds=_float("LLM_TIMEOUT_SECONDS", 30.0),
        llm_max_retries=_int("LLM_MAX_RETRIES", 2),
        llm_connect_timeout_seconds=_float("LLM_CONNECT_TIMEOUT_SECONDS", 3.0),
        llm_max_response_bytes=_int("LLM_MAX_RESPONSE_BYTES", 1_048_576),
        llm_api_key_cache_seconds=_int("LLM_API_KEY_CACHE_SECONDS", 300),
        default_encoding=_tokenizer("DEFAULT_ENCODING", _str("DEFAULT_ENCODING", "o200k_base")),
        model_tokenizers=_model_tokenizers("MODEL_TOKENIZERS"),
        max_content_chars=_int("MAX_CONTENT_CHARS", 5000),
        cursor_secret=_str("CURSOR_SECRET"),
        idempotency_ttl_seconds=_int("IDEMPOTENCY_TTL_SECONDS", 3600),
        post_attempts=_int("POST_ATTEMPTS", 16),
        turn_wait_seconds=max(0.5, _float("TURN_WAIT_SECONDS", 10.0)),
        summary_enabled=_str("SUMMARY_ENABLED", "true").lower() not in ("0", "false", "no", "off"),
        summary_margin_messages=max(1, _int("SUMMARY_MARGIN_MESSAGES", 4)),
        summary_input_max_tokens=max(500, _int("SUMMARY_INPUT_MAX_TOKENS", 6000)),
        summary_max_tokens=max(32, _int("SUMMARY_MAX_TOKENS", 400)),
        summary_max_steps=max(1, _int("SUMMARY_MAX_STEPS", 4)),
        summary_model=_str("SUMMARY_MODEL") or None,
        facts_extraction=_facts_mode(_str("FACTS_EXTRACTION", "off")),
        facts_model=_str("FACTS_MODEL") or None,
        facts_input_max_tokens=max(500, _int("FACTS_INPUT_MAX_TOKENS", 4000)),
        facts_max_current=max(1, _int("FACTS_MAX_CURRENT", 100)),
        recall_embeddings_model=_str("RECALL_EMBEDDINGS_MODEL") or None,
        recall_embeddings_query_model=_str("RECALL_EMBEDDINGS_QUERY_MODEL") or None,
        embeddings_base_url=_str("EMBEDDINGS_BASE_URL").rstrip("/") or None,
        embeddings_api_key=_str("EMBEDDINGS_API_KEY") or None,
        embeddings_api_key_parameter=_str("EMBEDDINGS_API_KEY_PARAMETER") or None,
        recall_embeddings_dimensions=max(0, _int("RECALL_EMBEDDINGS_DIMENSIONS", 0)),
        recall_embeddings_batch=min(2048, max(1, _int("RECALL_EMBEDDINGS_BATCH", 64))),
        max_turn_steps=max(1, _int("MAX_TURN_STEPS", 100)),
        prices=_str("PRICES"),
        prices_parameter=_str("PRICES_PARAMETER") or None,
        prices_cache_seconds=max(0, _int("PRICES_CACHE_SECONDS", 300)),
        admin_group=_str("ADMIN_GROUP"),
        budget_daily_tokens=max(0, _int("BUDGET_DAILY_TOKENS", 0)),
        budget_daily_micros=_usd_micros("BUDGET_DAILY_USD"),
        budget_monthly_tokens=max(0, _int("BUDGET_MONTHLY_TOKENS", 0)),
        budget_monthly_micros=_usd_micros("BUDGET_MONTHLY_USD"),
        budgets_enabled=_str("BUDGETS_ENABLED", "false").lower() in ("1", "true", "yes", "on"),
        rate_limit_per_minute=max(0, _int("RATE_LIMIT_PER_MINUTE", 0)),
        dynamodb_max_attempts=max(1, _int("DYNAMODB_MAX_ATTEMPTS", 4)),
        dynamodb_connect_timeout_seconds=_float("DYNAMODB_CONNECT_TIMEOUT_SECONDS", 2.0),
        dynamodb_read_timeout_seconds=_float("DYNAMODB_READ_TIMEOUT_SECONDS", 10.0),
        retry_after_seconds=max(1, _int("RETRY_AFTER_SECONDS", 1)),
        abandoned_turn_seconds=max(0, _int("ABANDONED_TURN_SECONDS", 120)),
        max_request_body_bytes=max(1024, _int("MAX_REQUEST_BODY_BYTES", 262_144)),
        max_reply_bytes=max(1024, min(_int("MAX_REPLY_BYTES", 262_144), 327_680)),
        service_name=_str("POWERTOOLS_SERVICE_NAME", "chat-history"),
        metrics_namespace=_str("POWERTOOLS_METRICS_NAMESPACE", "ChatHistory"),
    )
