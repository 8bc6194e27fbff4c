"""Every function of the stack as data: its trigger, its settings and what its role may do.

The one source of the functions: `scripts/gen_template.py` writes template.yaml's function blocks, their
log groups and their policies from it (`make template`), and the sample events in events/; tests check the
template against it and each handler's recorded AWS calls against its grants. Pure data, standard library
only. It lives beside the functions rather than in the chat_core layer because no handler reads it at run
time: it ships in no function and costs none a millisecond of cold start.
"""

# Descriptions, reasons and stream filter patterns are kept whole on one line each, as the template has them.
# ruff: noqa: E501

from __future__ import annotations

from dataclasses import dataclass

#: What `Grant.on` may name: the CloudFormation resource (or resources) a grant's actions apply to.
#: A name starting with "queue:" is a queue's logical id (sqs:SendMessage on it).
TARGETS = {
    "table": "the table (its items)",
    "index": "the table's gsi1 index",
    "stream": "the table's stream",
    "streams": "every stream of the table (dynamodb:ListStreams)",
    "blobs": "the blob bucket's objects (API-17)",
    "world_files": "the blob bucket's world files, prefix w/ (DLG-6)",
    "bucket": "the blob bucket itself (s3:ListBucket)",
    "socket_connections": "the WebSocket API's connections (@connections, RSP-12)",
}


@dataclass(frozen=True)
class Grant:
    """Actions allowed on one target, and why the function needs them."""

    actions: tuple[str, ...]
    on: str
    why: str = ""


@dataclass(frozen=True)
class HttpRoute:
    """One route of the HTTP API (JWT-authorized unless public)."""

    method: str
    path: str
    event: str = "Api"
    public: bool = False


@dataclass(frozen=True)
class SocketRoute:
    """One route of the WebSocket API (RSP-12): `$connect`, `$disconnect`, `$default` or a value of the
    client event's `type` (the API's route selection expression is `$request.body.type`)."""

    key: str
    event: str


@dataclass(frozen=True)
class QueueTrigger:
    """An SQS event source mapping, partial batch failures reported."""

    queue: str
    batch_size: int
    batching_window: int | None = None
    event: str = "Queue"


@dataclass(frozen=True)
class StreamTrigger:
    """A table-stream event source mapping: filtered, bisected on failure, then dead-lettered."""

    event: str
    starting_position: str
    batch_size: int
    retries: int
    max_record_age: int
    dead_letter_queue: str
    filters: tuple[str, ...]
    batching_window: int | None = None
    #: TumblingWindowInSeconds: Lambda then names the shard of each batch (`shardId`) and expects a
    #: `state` in each answer.
    tumbling_window: int | None = None


@dataclass(frozen=True)
class Function:
    """One Lambda function: `<name>Function` and `<name>Logs` in the template, code in functions/<folder>."""

    name: str
    folder: str
    #: What it does, as the template's Description says it.
    operation: str
    http: tuple[HttpRoute, ...] = ()
    socket: tuple[SocketRoute, ...] = ()
    queue: QueueTrigger | None = None
    stream: StreamTrigger | None = None
    #: A function URL in RESPONSE_STREAM mode served by the Lambda Web Adapter (API-14, API-16).
    function_url: bool = False
    handler: str = "app.lambda_handler"
    timeout: int | None = None
    memory: int | None = None
    #: Environment variables beyond the Globals: literal values, and values of template parameters.
    env: tuple[tuple[str, str], ...] = ()
    env_params: tuple[tuple[str, str], ...] = ()
    #: Reads the model's API key (the SSM parameter or the secret, when one is configured).
    calls_model: bool = False
    #: Embeds for semantic recall (MEM-48): reads the embeddings model's API key (MEM-56), and the chat
    #: model's when the embeddings model answers at the chat model's address.
    embeds: bool = False
    #: Reads the prices parameter (COST-1), when one is configured.
    prices: bool = False
    grants: tuple[Grant, ...] = ()
    #: Why the function is set up as it is (template comments above its block).
    notes: tuple[str, ...] = ()
    #: A heading in the template before this function.
    section: str = ""

    @property
    def triggers(self) -> tuple[str, ...]:
        """Its kinds of trigger: "http", "sqs", "stream", "function_url", "websocket"; a function with none is invoked
        directly (every HTTP function also takes a direct invocation payload, see docs/long-conversations.md)."""
        present = {"http": bool(self.http), "sqs": bool(self.queue), "stream": bool(self.stream)}
        present["websocket"] = bool(self.socket)
        present["function_url"] = self.function_url
        return tuple(kind for kind, there in present.items() if there)

    @property
    def snap_start(self) -> bool:
        """Whether it publishes versions behind the `live` alias with SnapStart (the SnapStart parameter
        turns SnapStart itself off): the API functions. Not the streaming function, whose init starts a
        web server behind the Lambda Web Adapter (a listening socket and its threads do not belong in a
        snapshot), nor the queue and stream workers, whose event source mappings would pay a version per
        deployment for no user waiting on a cold start (docs/deploy.md, SnapStart)."""
        return bool(self.http) and not self.function_url

    @property
    def actions(self) -> frozenset[str]:
        """Every action its grants allow (without KMS, see `kms_actions`)."""
        return frozenset(action for grant in self.grants for action in grant.actions)

    def granted(self, service: str) -> frozenset[str]:
        """The actions of one service ("dynamodb", "s3", "sqs") it is granted, without the prefix."""
        prefix = f"{service}:"
        return frozenset(a.removeprefix(prefix) for a in self.actions if a.startswith(prefix))

    @property
    def kms_actions(self) -> frozenset[str]:
        """What it needs on the customer-managed key, when one is given (docs/deploy.md): kms:Decrypt to
        read or write the table or its stream, to receive from a queue and to read an object;
        kms:GenerateDataKey too to send to a queue (its dead-letter queue included) or write an object."""
        actions = self.actions
        send = bool(self.stream) or any(a in actions for a in ("sqs:SendMessage", "s3:PutObject"))
        decrypt = (
            send
            or bool(self.stream or self.queue)
            or "s3:GetObject" in actions
            or any(a.startswith("dynamodb:") for a in actions)
        )
        if send:
            return frozenset({"kms:GenerateDataKey", "kms:Decrypt"})
        return frozenset({"kms:Decrypt"}) if decrypt else frozenset()


#: The functions that run a post (post, /v1 tail, edit, regenerate) share these two pieces.
CONTENT_PARTS = Grant(
    ("s3:PutObject", "s3:GetObject"),
    "blobs",
    "API-17: content parts kept in S3 (written by the post, read back for the next windows).",
)
#: RSP-9: a `store: false` response's content parts go with its conversation (its prefix listed, deleted).
UNSTORED_RESPONSE_S3 = (
    Grant(
        ("s3:ListBucket",), "bucket", "RSP-9: a store: false response's content parts (its prefix, listed)."
    ),
    Grant(("s3:DeleteObject",), "blobs"),
)
MODEL_CALL_NOTES = (
    "HTTP API integrations time out at 30 s: the model call is budgeted from the remaining time so the",
    "turn (or its failure) is stored and answered before that.",
)

FUNCTIONS: tuple[Function, ...] = (
    Function(
        name="CreateConversation",
        folder="create_conversation",
        operation="POST /conversations, PUT /conversation-keys/{key}",
        http=(
            HttpRoute("POST", "/conversations"),
            HttpRoute("PUT", "/conversation-keys/{key}", event="ByKey"),
        ),
        grants=(
            Grant(
                ("dynamodb:PutItem", "dynamodb:GetItem"),
                "table",
                "PutItem: the creating TransactWrite; GetItem: a key's name item and its conversation (API-21).",
            ),
        ),
    ),
    Function(
        name="PostMessage",
        folder="post_message",
        operation="POST /messages (stores the turn, calls the model)",
        http=(HttpRoute("POST", "/messages"),),
        timeout=29,
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-6: a post with recall reads its index tail (GetItem), its segments and the recalled messages (BatchGetItem).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ),
                "table",
                "Query: the post's one read. PutItem/UpdateItem: the two TransactWrites (and the reply's fallback put). GetItem/PutItem/UpdateItem/DeleteItem: Powertools Idempotency records.",
            ),
            CONTENT_PARTS,
        ),
        notes=MODEL_CALL_NOTES,
    ),
    Function(
        name="ChatCompletions",
        folder="chat_completions",
        operation="POST /v1/chat/completions (OpenAI-compatible, stateful; stores the turn, calls the model)",
        http=(HttpRoute("POST", "/v1/chat/completions"),),
        timeout=29,
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-6: a post with recall reads its index tail (GetItem), its segments and the recalled messages (BatchGetItem).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ),
                "table",
                "Query: the post's one read (and one more for the tail rule when a request resends history). PutItem/UpdateItem: the two TransactWrites (and the reply's fallback put). GetItem/PutItem/UpdateItem/DeleteItem: Powertools Idempotency records.",
            ),
            CONTENT_PARTS,
        ),
        notes=MODEL_CALL_NOTES,
    ),
    Function(
        name="StreamChat",
        folder="stream_chat",
        operation="Streamed POST /v1/chat/completions, POST /v1/responses and POST /messages, and every other /v1 route so one base URL serves the SDKs (function URL, response streaming, JWT verified in the function)",
        handler="run.sh",
        function_url=True,
        timeout=300,
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"), ("STREAM_BUDGET_SECONDS", "280")),
        env_params=(("JWT_ISSUER", "JwtIssuer"), ("JWT_AUDIENCE", "JwtAudience")),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-6: a post with recall reads its index tail (GetItem), its segments and the recalled messages (BatchGetItem).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:BatchWriteItem",
                ),
                "table",
                "As PostMessageFunction, ChatCompletionsFunction, ResponsesFunction and OpenAIConversationsFunction, which serve the same routes through the HTTP API.",
            ),
            CONTENT_PARTS,
            *UNSTORED_RESPONSE_S3,
        ),
        notes=(
            "Streamed replies (API-14): API Gateway HTTP APIs buffer a Lambda's answer and Python Lambda has no",
            "native response streaming, so this function is an HTTP server run by the Lambda Web Adapter behind",
            "a function URL in RESPONSE_STREAM mode. A function URL has no JWT authorizer: the function verifies",
            "the caller's JWT itself against the same issuer and audience (API-16); nothing is served without one.",
            "A function URL is not bound by API Gateway's 30 s: a long reply may stream for minutes.",
            "The Lambda Web Adapter (awslabs/aws-lambda-web-adapter), published by AWS for each region.",
            "The time a streamed turn may take, kept under Timeout so the reply is stored before it.",
        ),
    ),
    Function(
        name="ListModels",
        folder="list_models",
        operation="GET /v1/models (the configured models, OpenAI's list format; no table access)",
        http=(HttpRoute("GET", "/v1/models"),),
    ),
    Function(
        name="Responses",
        folder="responses",
        operation="POST /v1/responses (OpenAI Responses API over a stored conversation; stores the turn, calls the model), GET/DELETE /v1/responses/{response_id}, GET /v1/responses/{response_id}/input_items, POST /v1/responses/input_tokens, POST /v1/responses/compact (summarizes with the model)",
        http=(
            HttpRoute("POST", "/v1/responses"),
            HttpRoute("POST", "/v1/responses/input_tokens", event="InputTokens"),
            HttpRoute("POST", "/v1/responses/compact", event="Compact"),
            HttpRoute("GET", "/v1/responses/{response_id}", event="Retrieve"),
            HttpRoute("DELETE", "/v1/responses/{response_id}", event="Delete"),
            HttpRoute("GET", "/v1/responses/{response_id}/input_items", event="InputItems"),
        ),
        timeout=29,
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-6: a post with recall reads its index tail (GetItem), its segments and the recalled messages (BatchGetItem).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:BatchWriteItem",
                ),
                "table",
                "As ChatCompletionsFunction (the post, its idempotency records); GetItem/Query: a response's answer and the messages of its turn; PutItem/UpdateItem/DeleteItem: input appended before the post, the active path moved, a response deleted; Query + BatchWriteItem: a store: false conversation deleted for good (RSP-9).",
            ),
            CONTENT_PARTS,
            *UNSTORED_RESPONSE_S3,
        ),
        notes=MODEL_CALL_NOTES,
    ),
    Function(
        name="ResponsesSocket",
        folder="responses_socket",
        operation="WebSocket mode of the Responses API (wss://.../v1/responses): $connect checks the caller's JWT, response.create runs one POST /v1/responses and posts its events to the connection, $disconnect forgets the connection",
        socket=(
            SocketRoute("$connect", "Connect"),
            SocketRoute("$disconnect", "Disconnect"),
            SocketRoute("response.create", "Create"),
            SocketRoute("$default", "Default"),
        ),
        timeout=300,
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        env_params=(("JWT_ISSUER", "JwtIssuer"), ("JWT_AUDIENCE", "JwtAudience")),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-6: a post with recall reads its index tail (GetItem), its segments and the recalled messages (BatchGetItem).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:BatchWriteItem",
                ),
                "table",
                "As ResponsesFunction (each response.create is its POST /v1/responses), and the connection's own item (RSP-12): PutItem on connect, GetItem per message, UpdateItem for the store: false response it keeps, DeleteItem on disconnect.",
            ),
            Grant(
                ("execute-api:ManageConnections",),
                "socket_connections",
                "RSP-12: the turn's events posted to the connection (PostToConnection), which is closed after bad input (DeleteConnection).",
            ),
            CONTENT_PARTS,
            *UNSTORED_RESPONSE_S3,
        ),
        notes=(
            "RSP-12: API Gateway's WebSocket APIs invoke a function per message and wait at most 29 s for its answer,",
            "but a turn answers nothing to API Gateway: its events go to the connection through the management API",
            "as they are made, so a turn may run to this Timeout. No SnapStart: the API invokes $LATEST.",
        ),
    ),
    Function(
        name="OpenAIConversations",
        folder="openai_conversations",
        operation="POST /v1/conversations, GET/POST/DELETE /v1/conversations/{conversation_id}, GET/POST /v1/conversations/{conversation_id}/items, GET/DELETE /v1/conversations/{conversation_id}/items/{item_id} (OpenAI Conversations API over our conversations; no model call)",
        http=(
            HttpRoute("POST", "/v1/conversations"),
            HttpRoute("GET", "/v1/conversations/{conversation_id}", event="Retrieve"),
            HttpRoute("POST", "/v1/conversations/{conversation_id}", event="Update"),
            HttpRoute("DELETE", "/v1/conversations/{conversation_id}", event="Delete"),
            HttpRoute("GET", "/v1/conversations/{conversation_id}/items", event="ListItems"),
            HttpRoute("POST", "/v1/conversations/{conversation_id}/items", event="AddItems"),
            HttpRoute("GET", "/v1/conversations/{conversation_id}/items/{item_id}", event="GetItem"),
            HttpRoute("DELETE", "/v1/conversations/{conversation_id}/items/{item_id}", event="DeleteItem"),
        ),
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        grants=(
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ),
                "table",
                "GetItem/Query: the conversation, its messages and items; PutItem/UpdateItem: a new conversation, items appended (one TransactWrite), metadata, the soft delete; GetItem/PutItem/UpdateItem/DeleteItem: idempotency records and an item's deletion.",
            ),
            Grant(
                ("s3:PutObject", "s3:GetObject"),
                "blobs",
                "API-17: image and file parts of appended items kept in S3, read back for their views.",
            ),
        ),
    ),
    Function(
        name="ServeConsole",
        folder="serve_console",
        operation="GET /console (the web console's static files; no table access, no identity needed)",
        http=(
            HttpRoute("GET", "/console", event="Page", public=True),
            HttpRoute("GET", "/console/{file+}", event="Files", public=True),
        ),
    ),
    Function(
        name="ListConversations",
        folder="list_conversations",
        operation="GET /conversations",
        http=(HttpRoute("GET", "/conversations"),),
        grants=(Grant(("dynamodb:Query",), "index"),),
    ),
    Function(
        name="GetConversation",
        folder="get_conversation",
        operation="GET /conversations/{conversation_id}",
        http=(
            HttpRoute("GET", "/conversations/{conversation_id}"),
            HttpRoute("GET", "/conversation-keys/{key}", event="ByKey"),
        ),
        grants=(
            Grant(("dynamodb:GetItem", "dynamodb:Query"), "table"),
            Grant(
                ("s3:GetObject",),
                "blobs",
                "API-17: the presigned URLs of content parts kept in S3 are signed with this role.",
            ),
        ),
    ),
    Function(
        name="DeleteConversation",
        folder="delete_conversation",
        operation="DELETE /conversations/{conversation_id} (soft delete)",
        http=(HttpRoute("DELETE", "/conversations/{conversation_id}"),),
        grants=(
            Grant(
                ("dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:DeleteItem"),
                "table",
                "One TransactWrite: the conversation update and the turn log's session_end event (a put); GetItem + DeleteItem: the conversation's key, freed with it (API-21).",
            ),
        ),
    ),
    Function(
        name="BuildWindow",
        folder="build_window",
        operation="POST /conversations/{conversation_id}/window (no model call)",
        http=(HttpRoute("POST", "/conversations/{conversation_id}/window"),),
        embeds=True,
        grants=(
            Grant(
                ("dynamodb:Query",),
                "table",
                "The conversation and its newest messages, and the owner's facts (MEM-35).",
            ),
            Grant(
                ("dynamodb:GetItem", "dynamodb:BatchGetItem"),
                "table",
                "GetItem: recall's index tail (MEM-6) and the facts' source messages (TransactGetItems, MEM-35); BatchGetItem: recall's segments and the recalled messages.",
            ),
        ),
    ),
    Function(
        name="SearchMemory",
        folder="search_memory",
        operation="GET /memory/search (the caller's conversations searched by the recall index; MEM-11)",
        http=(HttpRoute("GET", "/memory/search"),),
        grants=(
            Grant(
                ("dynamodb:Query",), "index", "The caller's newest live conversations (the listing index)."
            ),
            Grant(
                ("dynamodb:GetItem", "dynamodb:BatchGetItem"),
                "table",
                "GetItem: the one conversation asked for. BatchGetItem: the index tails, their segments and the matched messages.",
            ),
        ),
    ),
    Function(
        name="GetEvents",
        folder="get_events",
        operation="GET /conversations/{conversation_id}/events (turn log as JSON Lines, seed 002)",
        http=(HttpRoute("GET", "/conversations/{conversation_id}/events"),),
        grants=(
            Grant(
                ("dynamodb:GetItem", "dynamodb:Query"),
                "table",
                "GetItem: the conversation (owner, not deleted). Query: one page of its events.",
            ),
        ),
    ),
    Function(
        name="GetUsage",
        folder="get_usage",
        operation="GET /usage (tokens and cost per day and model, budget; COST-3)",
        http=(HttpRoute("GET", "/usage"),),
        grants=(
            Grant(
                ("dynamodb:Query",),
                "table",
                "Query: the days asked for, then the month's days with the budget item.",
            ),
        ),
    ),
    Function(
        name="MemoryFacts",
        folder="memory_facts",
        operation="GET /memory, DELETE /memory/{fact_id} (the caller's long-term facts; MEM-32, MEM-33)",
        http=(
            HttpRoute("GET", "/memory"),
            HttpRoute("DELETE", "/memory/{fact_id}", event="Delete"),
        ),
        grants=(
            Grant(
                ("dynamodb:Query", "dynamodb:GetItem", "dynamodb:BatchWriteItem"),
                "table",
                "Query: a page of facts (and the whole partition to delete a fact's earlier versions); GetItem: the fact, and each source message and conversation (TransactGetItems); BatchWriteItem: facts deleted, and facts whose every source is gone.",
            ),
        ),
    ),
    Function(
        name="SetBudget",
        folder="set_budget",
        operation="PUT /budgets/{user_id} (administrators set a user's limits; COST-4)",
        http=(HttpRoute("PUT", "/budgets/{user_id}"),),
        grants=(
            Grant(
                ("dynamodb:PutItem", "dynamodb:Query"),
                "table",
                "PutItem: the budget item. Query: the month's usage, answered with the budget.",
            ),
        ),
    ),
    Function(
        name="UpdateMessage",
        folder="update_message",
        operation="PATCH /conversations/{conversation_id}/messages/{message_id} (pin or unpin)",
        http=(HttpRoute("PATCH", "/conversations/{conversation_id}/messages/{message_id}"),),
        grants=(
            Grant(
                ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"),
                "table",
                "GetItem: the conversation and the message (its id carries its sequence number); Query: only for ids made before that; UpdateItem: one TransactWrite of the message flag and the pinned list.",
            ),
            Grant(
                ("s3:GetObject",),
                "blobs",
                "API-17: the presigned URLs of content parts kept in S3 are signed with this role.",
            ),
        ),
    ),
    Function(
        name="UpdateConversation",
        folder="update_conversation",
        operation="PATCH /conversations/{conversation_id} (title, system prompt, model, window policy, defaults)",
        http=(HttpRoute("PATCH", "/conversations/{conversation_id}"),),
        grants=(
            Grant(
                ("dynamodb:GetItem", "dynamodb:UpdateItem"),
                "table",
                "GetItem: the conversation, only when a new system prompt or model must be counted; UpdateItem: one conditional update of the conversation item.",
            ),
        ),
    ),
    Function(
        name="EditMessage",
        folder="edit_message",
        operation="POST /conversations/{conversation_id}/messages/{message_id}/edit (a new branch, calls the model)",
        section="branches and history (API-18)",
        http=(HttpRoute("POST", "/conversations/{conversation_id}/messages/{message_id}/edit"),),
        timeout=29,
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-6: a post with recall reads its index tail (GetItem), its segments and the recalled messages (BatchGetItem).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ),
                "table",
                "GetItem: the message it starts from; then a post's calls (API-18): Query (the path, one more per branch point), the two TransactWrites, Powertools Idempotency records.",
            ),
            CONTENT_PARTS,
        ),
        notes=MODEL_CALL_NOTES,
    ),
    Function(
        name="RegenerateMessage",
        folder="regenerate_message",
        operation="POST /conversations/{conversation_id}/messages/{message_id}/regenerate (calls the model)",
        http=(HttpRoute("POST", "/conversations/{conversation_id}/messages/{message_id}/regenerate"),),
        timeout=29,
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-6: a post with recall reads its index tail (GetItem), its segments and the recalled messages (BatchGetItem).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ),
                "table",
                "GetItem: the message it starts from; then a post's calls (API-18): Query (the path, one more per branch point), the two TransactWrites, Powertools Idempotency records.",
            ),
            Grant(("s3:GetObject",), "blobs", "API-17: content parts kept in S3, read back for the window."),
        ),
        notes=MODEL_CALL_NOTES,
    ),
    Function(
        name="GetTree",
        folder="get_tree",
        operation="GET /conversations/{conversation_id}/tree (every message, parents and children)",
        http=(HttpRoute("GET", "/conversations/{conversation_id}/tree"),),
        grants=(
            Grant(
                ("dynamodb:GetItem", "dynamodb:Query"),
                "table",
                "GetItem: the conversation and parents outside the page; Query: the page, the branch links, the path.",
            ),
            Grant(
                ("s3:GetObject",), "blobs", "API-17: content parts kept in S3 (shown with presigned URLs)."
            ),
        ),
    ),
    Function(
        name="SetActive",
        folder="set_active",
        operation="PUT /conversations/{conversation_id}/active (switch branch)",
        http=(HttpRoute("PUT", "/conversations/{conversation_id}/active"),),
        grants=(
            Grant(
                ("dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"),
                "table",
                "GetItem: the message and the conversation (Query: message ids made before ids carried their seq); PutItem/UpdateItem: one TransactWrite (the leaf and the log).",
            ),
        ),
    ),
    Function(
        name="AppendMessages",
        folder="append_messages",
        operation="POST /conversations/{conversation_id}/messages (append, no model call)",
        http=(HttpRoute("POST", "/conversations/{conversation_id}/messages"),),
        env=(("IDEMPOTENCY_TTL_SECONDS", "3600"),),
        prices=True,
        grants=(
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ),
                "table",
                "Query: the path's end; PutItem/UpdateItem: one TransactWrite; GetItem/PutItem/UpdateItem/DeleteItem: Idempotency records.",
            ),
            Grant(
                ("s3:PutObject", "s3:GetObject"),
                "blobs",
                "API-17: content parts kept in S3 (written here, shown with presigned URLs).",
            ),
        ),
    ),
    Function(
        name="DeleteMessage",
        folder="delete_message",
        operation="DELETE /conversations/{conversation_id}/messages/{message_id} (soft, with its tool results)",
        http=(HttpRoute("DELETE", "/conversations/{conversation_id}/messages/{message_id}"),),
        grants=(
            Grant(
                (
                    "dynamodb:GetItem",
                    "dynamodb:Query",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:DeleteItem",
                ),
                "table",
                "GetItem: message, conversation, summary; Query: the path and the call's results; one TransactWrite (DeleteItem: a summary covering it).",
            ),
            Grant(
                ("s3:GetObject",), "blobs", "API-17: content parts kept in S3 (shown with presigned URLs)."
            ),
        ),
    ),
    Function(
        name="MemoryItems",
        folder="memory_items",
        operation="PUT/GET/DELETE /memory/items, POST /memory/items/search and /memory/items/namespaces (LangGraph store; MEM-20)",
        section="memory items (issue 32, MEM-20)",
        http=(
            HttpRoute("PUT", "/memory/items", event="Put"),
            HttpRoute("GET", "/memory/items", event="Get"),
            HttpRoute("DELETE", "/memory/items", event="Delete"),
            HttpRoute("POST", "/memory/items/search", event="Search"),
            HttpRoute("POST", "/memory/items/namespaces", event="Namespaces"),
        ),
        grants=(
            Grant(
                ("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query"),
                "table",
                "The caller's memory partition only: GetItem reads one memory, UpdateItem writes one (and pushes back a TTL), DeleteItem removes one, Query reads a namespace prefix.",
            ),
        ),
    ),
    Function(
        name="AddDialogueEntries",
        folder="add_dialogue_entries",
        operation="POST /worlds/{world_id}/dialogues/entries",
        section="dialogue memory (seed 004)",
        http=(HttpRoute("POST", "/worlds/{world_id}/dialogues/entries"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"), "table"),),
    ),
    Function(
        name="GetDialogueHistory",
        folder="get_dialogue_history",
        operation="GET /worlds/{world_id}/history (primary and ancillary history)",
        http=(HttpRoute("GET", "/worlds/{world_id}/history"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"), "table"),),
    ),
    Function(
        name="ListWorlds",
        folder="list_worlds",
        operation="GET /worlds (the caller's dialogue worlds)",
        http=(HttpRoute("GET", "/worlds"),),
        grants=(Grant(("dynamodb:Query",), "table"),),
    ),
    Function(
        name="ListDialogues",
        folder="list_dialogues",
        operation="GET /worlds/{world_id}/dialogues (a world's dialogues and participants)",
        http=(HttpRoute("GET", "/worlds/{world_id}/dialogues"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:Query"), "table"),),
    ),
    Function(
        name="BuildDialoguePrompt",
        folder="build_dialogue_prompt",
        operation="POST /worlds/{world_id}/prompt (prompt factory, no model call)",
        http=(HttpRoute("POST", "/worlds/{world_id}/prompt"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchGetItem"), "table"),),
    ),
    Function(
        name="ExportWorld",
        folder="export_world",
        operation="GET /worlds/{world_id}/export (JSON Lines)",
        http=(HttpRoute("GET", "/worlds/{world_id}/export"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:Query"), "table"),),
    ),
    Function(
        name="DeleteWorld",
        folder="delete_world",
        operation="DELETE /worlds/{world_id} (soft; purged by the retention function after RETENTION_DAYS)",
        http=(HttpRoute("DELETE", "/worlds/{world_id}"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:Query"), "table"),),
    ),
    Function(
        name="DeleteDialogue",
        folder="delete_dialogue",
        operation="DELETE /worlds/{world_id}/dialogues/{dialogue_id} (the dialogue, its entries and witness rows)",
        http=(HttpRoute("DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}"),),
        grants=(
            Grant(
                (
                    "dynamodb:GetItem",
                    "dynamodb:Query",
                    "dynamodb:BatchWriteItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:UpdateItem",
                ),
                "table",
            ),
        ),
    ),
    Function(
        name="DeleteDialogueEntry",
        folder="delete_dialogue_entry",
        operation="DELETE /worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id} (moderation)",
        http=(HttpRoute("DELETE", "/worlds/{world_id}/dialogues/{dialogue_id}/entries/{entry_id}"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:DeleteItem", "dynamodb:UpdateItem"), "table"),),
    ),
    Function(
        name="SaveWorld",
        folder="save_world",
        operation="POST /worlds/{world_id}/saves (a save game at a tick)",
        http=(HttpRoute("POST", "/worlds/{world_id}/saves"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:UpdateItem"), "table"),),
    ),
    Function(
        name="ListSaves",
        folder="list_saves",
        operation="GET /worlds/{world_id}/saves",
        http=(HttpRoute("GET", "/worlds/{world_id}/saves"),),
        grants=(Grant(("dynamodb:GetItem",), "table"),),
    ),
    Function(
        name="LoadSave",
        folder="load_save",
        operation="POST /worlds/{world_id}/saves/{save_id}/load (history past the save leaves prompts)",
        http=(HttpRoute("POST", "/worlds/{world_id}/saves/{save_id}/load"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:UpdateItem"), "table"),),
    ),
    Function(
        name="RevertLoad",
        folder="revert_load",
        operation="DELETE /worlds/{world_id}/saves/{save_id}/load (undo a load)",
        http=(HttpRoute("DELETE", "/worlds/{world_id}/saves/{save_id}/load"),),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:UpdateItem"), "table"),),
    ),
    Function(
        name="ExportWorldToS3",
        folder="export_world_s3",
        operation="POST /worlds/{world_id}/exports (gzip JSON Lines in S3, a presigned GET URL)",
        http=(HttpRoute("POST", "/worlds/{world_id}/exports"),),
        grants=(
            Grant(("dynamodb:GetItem", "dynamodb:Query"), "table"),
            Grant(("s3:PutObject", "s3:GetObject"), "world_files"),
        ),
    ),
    Function(
        name="CreateImport",
        folder="create_import",
        operation="POST /worlds/{world_id}/imports (an import job, a presigned PUT URL)",
        http=(HttpRoute("POST", "/worlds/{world_id}/imports"),),
        grants=(
            Grant(("dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem"), "table"),
            Grant(("s3:PutObject",), "world_files"),
        ),
    ),
    Function(
        name="StartImport",
        folder="start_import",
        operation="POST /worlds/{world_id}/imports/{job_id}/start (queue or resume an import)",
        http=(HttpRoute("POST", "/worlds/{world_id}/imports/{job_id}/start"),),
        grants=(
            Grant(("dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem"), "table"),
            Grant(("s3:GetObject",), "world_files"),
            Grant(("sqs:SendMessage",), "queue:WorldImportQueue"),
        ),
    ),
    Function(
        name="GetImport",
        folder="get_import",
        operation="GET /worlds/{world_id}/imports/{job_id} (progress, errors by line)",
        http=(HttpRoute("GET", "/worlds/{world_id}/imports/{job_id}"),),
        grants=(Grant(("dynamodb:GetItem",), "table"),),
    ),
    Function(
        name="RunImport",
        folder="run_import",
        operation="SQS worker of world import jobs (resumable; re-queues itself before its time limit)",
        queue=QueueTrigger("WorldImportQueue", batch_size=1),
        timeout=900,
        memory=1024,
        grants=(
            Grant(
                ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchWriteItem"),
                "table",
            ),
            Grant(("s3:GetObject",), "world_files"),
            Grant(("sqs:SendMessage",), "queue:WorldImportQueue"),
        ),
    ),
    Function(
        name="ImportWorld",
        folder="import_world",
        operation="POST /worlds/{world_id}/import (JSON Lines; restore into an empty world or merge)",
        http=(HttpRoute("POST", "/worlds/{world_id}/import"),),
        grants=(
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:PutItem",
                    "dynamodb:UpdateItem",
                    "dynamodb:BatchWriteItem",
                ),
                "table",
            ),
        ),
    ),
    Function(
        name="UserErasure",
        folder="user_erasure",
        operation="POST /users/{user_id}/erasure (erase a user as a job), GET it (progress, then the receipt; PRV-1)",
        http=(
            HttpRoute("POST", "/users/{user_id}/erasure"),
            HttpRoute("GET", "/users/{user_id}/erasure", event="Progress"),
        ),
        grants=(
            Grant(("dynamodb:GetItem", "dynamodb:PutItem"), "table", "The erasure's job item (PRV-1)."),
            Grant(("sqs:SendMessage",), "queue:UserDataQueue"),
        ),
    ),
    Function(
        name="UserExports",
        folder="user_exports",
        operation="POST /users/{user_id}/exports (an export job), GET /users/{user_id}/exports/{export_id} (its state, a presigned GET URL; PRV-2)",
        http=(
            HttpRoute("POST", "/users/{user_id}/exports"),
            HttpRoute("GET", "/users/{user_id}/exports/{export_id}", event="Get"),
        ),
        grants=(
            Grant(("dynamodb:GetItem", "dynamodb:PutItem"), "table", "The export's job item (PRV-2)."),
            Grant(("s3:GetObject",), "blobs", "PRV-2: the archive's presigned URL is signed with this role."),
            Grant(("sqs:SendMessage",), "queue:UserDataQueue"),
        ),
    ),
    Function(
        name="UserImports",
        folder="user_imports",
        operation="POST /users/{user_id}/imports (an import job, a presigned PUT URL), POST .../{import_id}/start (queue or resume it), GET .../{import_id} (status, progress, the error; PRV-3)",
        http=(
            HttpRoute("POST", "/users/{user_id}/imports"),
            HttpRoute("POST", "/users/{user_id}/imports/{import_id}/start", event="Start"),
            HttpRoute("GET", "/users/{user_id}/imports/{import_id}", event="Get"),
        ),
        grants=(
            Grant(("dynamodb:GetItem", "dynamodb:PutItem"), "table", "The import's job item (PRV-3)."),
            Grant(
                ("s3:PutObject", "s3:GetObject"),
                "blobs",
                "PRV-3: the upload's presigned PUT is signed with this role; the start checks the upload (HeadObject).",
            ),
            Grant(("sqs:SendMessage",), "queue:UserDataQueue"),
        ),
    ),
    Function(
        name="RunUserJob",
        folder="run_user_job",
        operation="SQS worker of a user's erasure, export and import jobs (resumable; re-queues itself; PRV-1..3)",
        queue=QueueTrigger("UserDataQueue", batch_size=1),
        timeout=900,
        memory=1024,
        grants=(
            Grant(
                (
                    "dynamodb:Scan",
                    "dynamodb:Query",
                    "dynamodb:GetItem",
                    "dynamodb:BatchGetItem",
                    "dynamodb:PutItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:BatchWriteItem",
                ),
                "table",
                "PRV-1: the erasure's filtered Scan of the owner's keys (the service's one Scan) and their deletes; the idempotency records of the owner's conversations (Query, BatchGetItem); the job items. PRV-2: the export's Queries of the owner's partitions. PRV-3: the import's items (BatchWriteItem puts).",
            ),
            Grant(("dynamodb:Query",), "index", "PRV-2: the owner's conversations (the listing index)."),
            Grant(("s3:ListBucket",), "bucket", "PRV-1: the owner's prefixes, listed and deleted."),
            Grant(
                ("s3:DeleteObject", "s3:PutObject", "s3:GetObject"),
                "blobs",
                "PRV-1: the owner's objects deleted; PRV-2: the archive written; PRV-3: the uploaded file read.",
            ),
            Grant(("sqs:SendMessage",), "queue:UserDataQueue"),
        ),
        notes=(
            "One function for the three jobs of a user's data: each runs for minutes on one queue, and none",
            "serves a request a user waits on.",
        ),
    ),
    Function(
        name="IngestDialogueEntries",
        folder="ingest_dialogue_entries",
        operation="SQS batch ingestion of dialogue entries (partial batch failures reported)",
        queue=QueueTrigger("DialogueIngestQueue", batch_size=10, batching_window=1),
        grants=(Grant(("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"), "table"),),
    ),
    Function(
        name="SummarizeConversation",
        folder="summarize_conversation",
        operation="Table stream -> the owners' usage of the day (COST-3), the running summary of what no longer fits a conversation's window (seed 001) and the recall index of every stored message (MEM-5)",
        section="stream-triggered (seed 001, retention)",
        stream=StreamTrigger(
            event="TurnEnded",
            starting_position="LATEST",
            batch_size=10,
            batching_window=1,
            retries=3,
            max_record_age=3600,
            dead_letter_queue="SummarizeDeadLetterQueue",
            tumbling_window=300,
            filters=(
                '{"eventName": ["INSERT"], "dynamodb": {"Keys": {"pk": {"S": [{"prefix": "USER#"}]}}, "NewImage": {"type": {"S": ["message"]}, "role": {"S": ["user", "assistant", "tool"]}}}}',
            ),
        ),
        timeout=120,
        env=(("SUMMARY_INPUT_MAX_TOKENS", "6000"), ("SUMMARY_MAX_TOKENS", "400")),
        env_params=(
            ("SUMMARY_MARGIN_MESSAGES", "SummaryMarginMessages"),
            ("FACTS_EXTRACTION", "FactsExtraction"),
        ),
        calls_model=True,
        embeds=True,
        prices=True,
        grants=(
            Grant(
                ("dynamodb:BatchGetItem",),
                "table",
                "MEM-5: the recall index's segments a merge reads, and the messages of the slots it still waits for (its holes).",
            ),
            Grant(
                (
                    "dynamodb:Query",
                    "dynamodb:PutItem",
                    "dynamodb:GetItem",
                    "dynamodb:DeleteItem",
                    "dynamodb:UpdateItem",
                ),
                "table",
                "Query: the conversation, its summary and newest messages, then the span to summarize. PutItem: the summary (conditioned on the one it replaces). GetItem: the conversation still live after that write, and each usage-of-the-day item before its update; UpdateItem: that item (the batch's priced replies added, COST-3); DeleteItem: the summary again when it was deleted meanwhile. Facts (MEM-31): Query the owner's facts and the new messages, GetItem the conversation and the facts' sources (TransactGetItems), one TransactWrite of the facts, the mark, the charge and the facts whose sources are gone (PutItem, UpdateItem, DeleteItem).",
            ),
            Grant(("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"), "stream"),
            Grant(("dynamodb:ListStreams",), "streams"),
            Grant(("sqs:SendMessage",), "queue:SummarizeDeadLetterQueue"),
        ),
        notes=(
            "Both read the table's stream through event source mappings whose filters send each function only the",
            "records it acts on; a failing batch is bisected and retried a bounded number of times, then its",
            "position goes to the function's dead-letter queue.",
            "One model call per incremental step (LLM timeout 30 s), a few steps at most per invocation.",
            "Every INSERT of a user, assistant or tool message: the recall index takes each stored message",
            "(MEM-5), appended ones too; usage and summaries act on the post's reply only (an assistant",
            "message with a model, ok or error; assistant messages an agent client stores carry no model).",
            "The summarizer's tumbling window makes Lambda name each batch's shard: the usage of the day is",
            "added from these records exactly once per shard watermark (COST-3), off the post's path.",
        ),
    ),
    Function(
        name="PurgeConversation",
        folder="purge_conversation",
        operation="Table stream -> delete a conversation's messages, events and summary after TTL removed it",
        stream=StreamTrigger(
            event="TtlRemoved",
            starting_position="TRIM_HORIZON",
            batch_size=25,
            retries=5,
            max_record_age=86400,
            dead_letter_queue="PurgeDeadLetterQueue",
            filters=(
                '{"eventName": ["REMOVE"], "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]}, "dynamodb": {"Keys": {"sk": {"S": ["~META"]}}, "OldImage": {"type": {"S": ["conversation"]}}}}',
                '{"eventName": ["REMOVE"], "userIdentity": {"type": ["Service"], "principalId": ["dynamodb.amazonaws.com"]}, "dynamodb": {"OldImage": {"type": {"S": ["world"]}}}}',
            ),
        ),
        timeout=300,
        grants=(
            Grant(
                ("dynamodb:Query", "dynamodb:BatchWriteItem", "dynamodb:GetItem"),
                "table",
                "Query (keys only) + BatchWriteItem: the purge. GetItem: a direct invocation checks expiry.",
            ),
            Grant(
                ("s3:ListBucket",),
                "bucket",
                "API-17: the conversation's content parts kept in S3 (its prefix, listed and deleted).",
            ),
            Grant(("s3:DeleteObject",), "blobs"),
            Grant(("dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"), "stream"),
            Grant(("dynamodb:ListStreams",), "streams"),
            Grant(("sqs:SendMessage",), "queue:PurgeDeadLetterQueue"),
        ),
        notes=(
            "Only conversation and world items removed by DynamoDB's TTL process, never a user's or a function's delete.",
        ),
    ),
)

BY_FOLDER = {function.folder: function for function in FUNCTIONS}
BY_NAME = {function.name: function for function in FUNCTIONS}
