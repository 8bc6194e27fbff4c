"""Storage: our message items vs LangChain's DynamoDBChatMessageHistory, both on moto in-process."""

from __future__ import annotations

import contextlib
import functools
import io
import statistics
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from bench import Section, ms, progress, verdict
from bench.dynamodb_meter import MOTO_ITEM_LIMIT, Tally, install, kb, metered, moto_env, moto_fixes

SIZES = (200, 1_000)
CONTENT_CHARS = 500
WINDOW = 10  # the last window: the seed-003 default reach (WIN-2: <= 10 messages)
OWNER = "bench-user"
OUR_TABLE = "chat-history-bench"
PEER_TABLE = "langchain-history-bench"
SESSION = "bench-session"
# DynamoDB's item cap: 400 KB where KB = 1,024 bytes (attribute names + values, UTF-8).
DYNAMODB_ITEM_LIMIT = 400 * 1024
READ_REPEATS = 15
RECENT_TURNS = 50

_FILLER = (
    "The quarterly figures arrived late again, so the team compared last year's margins by region "
    "before the board call, noting which suppliers raised prices and which contracts expire soon. "
)
_FILLER_ZH = "季度报告又迟到了，团队在董事会电话会议之前按地区比较了去年的利润率，并记录了哪些供应商涨价。"


def message_text(index: int, *, chinese: bool = False) -> str:
    """A deterministic message of exactly CONTENT_CHARS characters, distinct per index."""
    head = f"[{index}] "
    filler = _FILLER_ZH if chinese else _FILLER
    body = (filler * (CONTENT_CHARS // len(filler) + 2))[index % len(filler) :]
    return (head + body)[:CONTENT_CHARS]


# -- DynamoDB item size (the documented rule) -------------------------------------------------------------


def dynamodb_value_size(value: Any) -> int:
    """Bytes DynamoDB counts for one attribute value (names inside maps included).

    Strings and binary: their length in bytes (UTF-8); numbers: 1 + significant digits / 2 (rounded up);
    null and boolean: 1; a list or map: 3 bytes + 1 per element + the elements (a map element's name too).
    """
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, int | float | Decimal):
        digits = len(str(abs(value)).replace(".", "").lstrip("0")) or 1
        return 1 + (digits + 1) // 2
    if isinstance(value, dict):
        return 3 + sum(1 + len(str(k).encode("utf-8")) + dynamodb_value_size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return 3 + sum(1 + dynamodb_value_size(v) for v in value)
    raise TypeError(f"no DynamoDB size rule for {type(value).__name__}")


def dynamodb_item_size(item: dict[str, Any]) -> int:
    """Bytes DynamoDB counts for an item: each top-level attribute name plus its value."""
    return sum(len(name.encode("utf-8")) + dynamodb_value_size(value) for name, value in item.items())


# -- the two sides --------------------------------------------------------------------------------


@dataclass
class AppendRun:
    """The state of appending to one conversation when `stored` messages were in."""

    stored: int = 0
    seconds: float = 0.0
    refused_at: int | None = None  # 1-based index of the first message the store cannot take
    refusal: str = ""
    tally: Tally = field(default_factory=Tally)
    # Client seconds per message of the latest turns: the cost of one more turn at this length.
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT_TURNS))

    @property
    def client_seconds(self) -> float:
        return self.seconds - self.tally.server_seconds

    @property
    def recent_client_per_message(self) -> float:
        return statistics.fmean(self.recent) if self.recent else 0.0


@dataclass
class ReadRun:
    """Reading the last window at a checkpoint."""

    seconds: float = 0.0
    server_seconds: float = 0.0
    messages: int = 0
    tally: Tally = field(default_factory=Tally)


@dataclass
class Side:
    """One store's run: an append snapshot and a window read per checkpoint."""

    appends: dict[int, AppendRun] = field(default_factory=dict)
    reads: dict[int, ReadRun] = field(default_factory=dict)


def _reset_pynamodb() -> None:
    """Fresh settings and connections, so clients are created inside this mock and metered."""
    from chat_core.runtime import Runtime, use

    install()
    # A new runtime: the models re-bind with new connections, TransactWrite gets its own.
    previous = use(Runtime.from_env())
    if previous is not None:
        previous.close()


def _read(read_window: Callable[[], Any], count: Callable[[Any], int]) -> ReadRun:
    """One metered read, then the median time of READ_REPEATS more (moto's share measured alongside)."""
    result = ReadRun()
    with metered() as result.tally:
        result.messages = count(read_window())
    samples, server = [], []
    for _ in range(READ_REPEATS):
        with metered() as tally:
            started = time.process_time()
            read_window()
            samples.append(time.process_time() - started)
        server.append(tally.server_seconds)
    result.seconds = statistics.median(samples)
    result.server_seconds = statistics.median(server)
    return result


def ours(size: int, checkpoints: tuple[int, ...]) -> Side:
    """Our store, the post path's functions: TransactWrite #1 and #2 per turn, one Query for the window."""
    from chat_core.engine import tokens
    from chat_core.store import conversations as store
    from chat_core.store import items
    from chat_core.store.keys import new_id
    from chat_core.store.records import ConversationRecord, MessageRecord
    from moto import mock_aws

    from tests.support.table import create_table

    # Stored token counts (TOK-5) are computed before timing: these rows measure the store.
    texts = [message_text(i) for i in range(1, size + 1)]
    counts = [
        tokens.count_message_tokens(
            {"role": "user" if i % 2 == 0 else "assistant", "content": t}, model="gpt-4o-mini"
        )
        for i, t in enumerate(texts)
    ]
    side = Side()
    with moto_env(TABLE_NAME=OUR_TABLE), mock_aws():
        create_table(OUR_TABLE)
        _reset_pynamodb()
        conversation_id = new_id()
        now = "2026-01-01T00:00:00.000Z"
        run_ = AppendRun()
        with metered() as tally:
            started = time.process_time()
            conversation = ConversationRecord.of(
                items.Conversation.new(
                    OWNER, conversation_id, model="gpt-4o-mini", created_at=now, updated_at=now
                )
            )
            store.create_conversation(conversation)
            run_.seconds += time.process_time() - started
        run_.tally = tally
        for _ in range(size // 2):
            with metered() as turn_tally:
                started = time.process_time()
                seq = int(conversation.next_seq)
                user = MessageRecord.of(
                    items.Message.new(
                        OWNER,
                        conversation_id,
                        seq,
                        message_id=new_id(),
                        role="user",
                        content=texts[seq - 1],
                        created_at=now,
                        tokens=counts[seq - 1],
                    )
                )
                store.append_user_message(conversation, user, now)
                conversation = replace(
                    conversation, next_seq=seq + 2
                )  # what the next post's Query would return
                reply = MessageRecord.of(
                    items.Message.new(
                        OWNER,
                        conversation_id,
                        seq + 1,
                        message_id=new_id(),
                        role="assistant",
                        content=texts[seq],
                        status="ok",
                        created_at=now,
                        tokens=counts[seq],
                        model="gpt-4o-mini",
                    )
                )
                store.record_reply(conversation, reply, now, reported=(0, 0, 0), local=(0, 0))
                elapsed = time.process_time() - started
            _add_turn(run_, turn_tally, elapsed, 2)
            if run_.stored in checkpoints:
                side.appends[run_.stored] = _snapshot(run_)
                recent = store.read_recent(OWNER, conversation_id, WINDOW)
                assert int(recent.messages[-1].seq) == run_.stored  # the window really is the newest
                side.reads[run_.stored] = _read(
                    lambda: store.read_recent(OWNER, conversation_id, WINDOW), lambda r: len(r.messages)
                )
    return side


@dataclass
class FixedReplyModel:
    """The model, stubbed: a fixed completion with usage, no network (`reply` picks its text)."""

    reply: Callable[[int], str] = lambda call: message_text(0)
    calls: int = 0

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        time_budget_s: float | None = None,
        options: Any = None,
    ) -> Any:
        from chat_core.llm.completion import Completion, Usage

        self.calls += 1
        return Completion(
            content=self.reply(self.calls),
            model=model,
            usage=Usage(prompt_tokens=1_000, completion_tokens=110, total_tokens=1_110),
            usage_reported=True,
            tool_calls=None,
            finish_reason="stop",
            raw={},
            latency_ms=1.0,
        )


@contextlib.contextmanager
def chat_service(model: FixedReplyModel) -> Iterator[Any]:
    """`post_message` with `model` answering and its logs/metrics kept off stdout."""
    from chat_core.chat import post
    from chat_core.observability import logger, metrics
    from chat_core.runtime import Runtime, use

    use(Runtime.from_env())  # a runtime of this run's settings
    logger.setLevel("ERROR")
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(io.StringIO()),  # Powertools prints EMF when 100 metrics pile up
    ):
        # No Lambda context here, so Powertools cannot tell the idempotency record the time left.
        warnings.filterwarnings("ignore", message="Couldn't determine the remaining time left")
        yield functools.partial(post.post_message, provider=model)
        metrics.clear_metrics()


def ours_posting(size: int, checkpoints: tuple[int, ...]) -> Side:
    """The whole post path per turn: `post_message` (Query, TransactWrite #1, model stub, TransactWrite #2).

    Writes everything a real post writes (turn-log events, counters, exact token counts), so its bytes
    are what the service really sends; its time includes token counting and the window.
    """
    from chat_core.engine import tokens
    from chat_core.http.request_commands import post_command
    from chat_core.http.schemas import PostMessageIn
    from moto import mock_aws

    from tests.support.table import create_table

    tokens.count_tokens("warm", "gpt-4o-mini")  # a warm Lambda: the encoding is loaded already (TOK-3)
    side = Side()
    model = FixedReplyModel(reply=lambda call: message_text(2 * call))
    with moto_env(TABLE_NAME=OUR_TABLE), mock_aws(), chat_service(model) as post_message:
        create_table(OUR_TABLE)
        _reset_pynamodb()
        run_ = AppendRun()
        conversation_id: str | None = None
        for turn in range(size // 2):
            request = PostMessageIn(conversation_id=conversation_id, content=message_text(2 * turn + 1))
            with metered() as turn_tally:
                started = time.process_time()
                outcome = post_message(OWNER, post_command(request))
                elapsed = time.process_time() - started
            assert not outcome.model_failed, outcome.body
            assert outcome.reply_stored, outcome.body
            conversation_id = str(outcome.body["conversation_id"])
            _add_turn(run_, turn_tally, elapsed, 2)
            if run_.stored in checkpoints:
                side.appends[run_.stored] = _snapshot(run_)
    return side


def _add_turn(run_: AppendRun, turn: Tally, elapsed: float, stored: int) -> None:
    run_.stored += stored
    run_.seconds += elapsed
    run_.recent.append((elapsed - turn.server_seconds) / stored)
    total = run_.tally
    total.calls.update(turn.calls)
    total.sent += turn.sent
    total.received += turn.received
    total.sent_by_op.update(turn.sent_by_op)
    total.received_by_op.update(turn.received_by_op)
    total.server_seconds += turn.server_seconds


def _snapshot(run_: AppendRun) -> AppendRun:
    return AppendRun(
        run_.stored, run_.seconds, run_.refused_at, run_.refusal, run_.tally.copy(), deque(run_.recent)
    )


def _peer_table(client: Any) -> None:
    """The table DynamoDBChatMessageHistory expects: partition key `SessionId` (string), nothing else."""
    client.create_table(
        TableName=PEER_TABLE,
        AttributeDefinitions=[{"AttributeName": "SessionId", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "SessionId", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )


def peer_entries(size: int, *, chinese: bool = False) -> list[dict[str, Any]]:
    """The message dicts the peer stores, oldest first (langchain_core.messages_to_dict)."""
    from langchain_core.messages import AIMessage, HumanMessage, messages_to_dict

    return messages_to_dict(
        [
            HumanMessage(message_text(i, chinese=chinese))
            if i % 2
            else AIMessage(message_text(i, chinese=chinese))
            for i in range(1, size + 1)
        ]
    )


def peer_item_sizes(entries: list[dict[str, Any]]) -> list[int]:
    """DynamoDB size of the peer's item {"SessionId", "History": [...]} after each message."""
    running = len(b"SessionId") + len(SESSION.encode()) + len(b"History") + 3
    sizes = []
    for entry in entries:
        running += 1 + dynamodb_value_size(entry)
        sizes.append(running)
    return sizes


def peer(size: int, checkpoints: tuple[int, ...]) -> tuple[Side, list[int]]:
    """LangChain: add_messages([human, ai]) per turn (as RunnableWithMessageHistory does), then .messages.

    A turn whose item would pass DynamoDB's 400 KB (documented rule, computed) is refused and the run
    stops there, as it would on DynamoDB; moto's own check is looser (see `moto_limits`).
    """
    import boto3
    from langchain_community.chat_message_histories import DynamoDBChatMessageHistory
    from langchain_core.messages import messages_from_dict
    from moto import mock_aws

    entries = peer_entries(size)
    objects = messages_from_dict(entries)
    sizes = peer_item_sizes(entries)
    side = Side()
    with moto_env(), mock_aws():
        _peer_table(boto3.client("dynamodb", region_name="us-east-1"))
        run_ = AppendRun()
        with metered() as run_.tally:
            started = time.process_time()
            history = DynamoDBChatMessageHistory(table_name=PEER_TABLE, session_id=SESSION)
            run_.seconds += time.process_time() - started
        for turn in range(size // 2):
            over = [i + 1 for i in (2 * turn, 2 * turn + 1) if sizes[i] > DYNAMODB_ITEM_LIMIT]
            if over:
                run_.refused_at = over[0]
                run_.refusal = f"item would be {sizes[over[0] - 1]:,} bytes > {DYNAMODB_ITEM_LIMIT:,}"
                break
            with metered() as turn_tally:
                started = time.process_time()
                history.add_messages(objects[2 * turn : 2 * turn + 2])
                elapsed = time.process_time() - started
            _add_turn(run_, turn_tally, elapsed, 2)
            if run_.stored in checkpoints:
                side.appends[run_.stored] = _snapshot(run_)
                side.reads[run_.stored] = _read(lambda: history.messages[-WINDOW:], len)
        for checkpoint in checkpoints:
            if checkpoint not in side.appends:
                side.appends[checkpoint] = _snapshot(run_)
                side.reads[checkpoint] = _read(lambda: history.messages[-WINDOW:], len)
    return side, sizes


# -- moto's own item limit, checked with real puts ------------------------------------------------------


def moto_value_size(value: Any) -> int:
    """moto's measure of a value (DynamoType.size): names + values, no list/map overhead."""
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, int | float | Decimal):
        return len(str(value))
    if isinstance(value, dict):
        return sum(len(str(k).encode("utf-8")) + moto_value_size(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(moto_value_size(v) for v in value)
    raise TypeError(f"no moto size rule for {type(value).__name__}")


@dataclass(frozen=True)
class MotoLimits:
    """Where unpatched moto refuses the peer's item, predicted by its measure and confirmed by real calls."""

    put_refused_at: int
    put_confirmed: bool
    update_refused_at: int
    update_confirmed: bool
    accepts_dynamodb_limit: bool


def moto_limits(entries: list[dict[str, Any]], dynamodb_refused_at: int) -> MotoLimits:
    """PutItem of the whole history at k-1 and k messages, and UpdateItem from k-1 to k (as the peer does)."""
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws

    base_size = len(b"SessionId") + len(SESSION.encode()) + len(b"History")
    moto_sizes, running = [], base_size
    for entry in entries:
        running += moto_value_size(entry)
        moto_sizes.append(running)
    put_at = next(i + 1 for i, s in enumerate(moto_sizes) if s > MOTO_ITEM_LIMIT)
    # UpdateItem: moto adds the old History to the new one (see dynamodb_meter.moto_fixes).
    update_at = next(
        k
        for k in range(2, len(entries) + 1)
        if moto_sizes[k - 2] + len(b"History") + (moto_sizes[k - 1] - base_size + len(b"History"))
        > MOTO_ITEM_LIMIT
    )

    def accepted(call: Callable[[], Any]) -> bool:
        try:
            call()
        except ClientError as exc:
            if "exceeded the maximum allowed size" in str(exc):
                return False
            raise
        return True

    with moto_env(), mock_aws():
        resource = boto3.resource("dynamodb", region_name="us-east-1")
        _peer_table(resource.meta.client)
        table = resource.Table(PEER_TABLE)

        def put(k: int) -> bool:
            return accepted(lambda: table.put_item(Item={"SessionId": SESSION, "History": entries[:k]}))

        def update(k: int) -> bool:
            assert put(k - 1)
            return accepted(
                lambda: table.update_item(
                    Key={"SessionId": SESSION},
                    UpdateExpression="set History = :h",
                    ExpressionAttributeValues={":h": entries[:k]},
                )
            )

        put_ok = put(put_at - 1) and not put(put_at)
        update_ok = update(update_at - 1) and not update(update_at)
        accepts_limit = put(dynamodb_refused_at)
    return MotoLimits(put_at, put_ok, update_at, update_ok, accepts_limit)


# -- report --------------------------------------------------------------------------------------


def _ratio(theirs: float, our: float) -> str:
    if our <= 0:
        return "n/a"
    value = theirs / our
    return f"{value:,.0f}x" if value >= 10 else f"{value:.1f}x"


def _per(value: float, count: int) -> float:
    return value / max(count, 1)


def _append_rows(size: int, store_only: AppendRun, posting: AppendRun, lc: AppendRun) -> list[list[Any]]:
    def row(name: str, run_: AppendRun) -> list[Any]:
        stored = f"{run_.stored:,}"
        if run_.refused_at is not None:
            stored += f" (refused at {run_.refused_at:,})"
        return [
            f"{size:,}",
            name,
            stored,
            f"{run_.tally.total_calls:,}",
            kb(run_.tally.sent),
            kb(run_.tally.received),
            ms(run_.client_seconds),
            f"{_per(run_.client_seconds, run_.stored) * 1000:.2f}",
            f"{run_.recent_client_per_message * 1000:.2f}",
            ms(run_.tally.server_seconds),
        ]

    our = posting
    ratio = [
        f"{size:,}",
        "LangChain / ours (post path), per stored message",
        "",
        _ratio(_per(lc.tally.total_calls, lc.stored), _per(our.tally.total_calls, our.stored)),
        _ratio(_per(lc.tally.sent, lc.stored), _per(our.tally.sent, our.stored)),
        _ratio(_per(lc.tally.received, lc.stored), _per(max(our.tally.received, 1), our.stored)),
        "",
        _ratio(_per(lc.client_seconds, lc.stored), _per(our.client_seconds, our.stored)),
        _ratio(lc.recent_client_per_message, our.recent_client_per_message),
        _ratio(_per(lc.tally.server_seconds, lc.stored), _per(our.tally.server_seconds, our.stored)),
    ]
    return [
        row("ours: store functions (TransactWrite #1 + #2 per turn)", store_only),
        row("ours: post path (post_message per turn)", posting),
        row("LangChain: add_messages per turn", lc),
        ratio,
    ]


def _read_rows(size: int, our: ReadRun, lc: ReadRun, held: tuple[int, int]) -> list[list[Any]]:
    def row(name: str, read: ReadRun, count: int) -> list[Any]:
        return [
            f"{size:,}",
            f"{count:,}",
            name,
            read.messages,
            read.tally.describe_calls(),
            kb(read.tally.sent),
            kb(read.tally.received),
            ms(read.seconds - read.server_seconds),
            ms(read.server_seconds),
        ]

    return [
        row(f"ours: read_recent (1 Query: conversation + newest {WINDOW})", our, held[0]),
        row(f"LangChain: .messages[-{WINDOW}:] (GetItem of the whole history)", lc, held[1]),
        [
            f"{size:,}",
            "",
            "LangChain / ours",
            "",
            "",
            "",
            _ratio(lc.tally.received, our.tally.received),
            _ratio(lc.seconds - lc.server_seconds, our.seconds - our.server_seconds),
            _ratio(lc.server_seconds, our.server_seconds),
        ],
    ]


def _confirmed(ok: bool) -> str:
    return "confirmed" if ok else "NOT confirmed"


def _failure_row(refused: int | None, sizes: list[int], limits: MotoLimits | None, size: int) -> list[Any]:
    content = f"{CONTENT_CHARS}-char English"
    if refused is None or limits is None:
        return [content, f"not within {size:,}", "", "", ""]
    put, update = limits.put_refused_at, limits.update_refused_at
    return [
        content,
        f"message {refused:,} ({sizes[refused - 2]:,} → {sizes[refused - 1]:,} bytes)",
        f"message {put:,} ({_confirmed(limits.put_confirmed)}: {put - 1:,} accepted, {put:,} refused)",
        f"message {update:,} ({_confirmed(limits.update_confirmed)})",
        "yes" if limits.accepts_dynamodb_limit else "no",
    ]


def run() -> list[Section]:
    size = max(SIZES)
    with moto_fixes():
        progress("storage: warm-up (one-off process costs land on no side)")
        ours(4, ())
        ours_posting(4, ())
        peer(4, ())
        progress(f"storage: ours, store functions, appending {size:,} messages (snapshots at {SIZES})")
        our = ours(size, SIZES)
        progress(f"storage: ours, post_message per turn, appending {size:,} messages")
        posting = ours_posting(size, SIZES)
        progress(f"storage: LangChain DynamoDBChatMessageHistory, appending up to {size:,} messages")
        lc, lc_sizes = peer(size, SIZES)
    refused = lc.appends[size].refused_at
    progress("storage: moto's own item limit (PutItem / UpdateItem probes, unpatched moto)")
    entries = peer_entries(size)
    limits = moto_limits(entries, refused) if refused else None

    append_rows: list[list[Any]] = []
    read_rows: list[list[Any]] = []
    for checkpoint in SIZES:
        append_rows += _append_rows(
            checkpoint, our.appends[checkpoint], posting.appends[checkpoint], lc.appends[checkpoint]
        )
        read_rows += _read_rows(
            checkpoint,
            our.reads[checkpoint],
            lc.reads[checkpoint],
            (our.appends[checkpoint].stored, lc.appends[checkpoint].stored),
        )

    failure_rows: list[list[Any]] = [_failure_row(refused, lc_sizes, limits, size)]
    zh_sizes = peer_item_sizes(peer_entries(size, chinese=True))
    zh = next((i + 1 for i, s in enumerate(zh_sizes) if s > DYNAMODB_ITEM_LIMIT), None)
    failure_rows.append(
        [
            f"{CONTENT_CHARS}-char Chinese (computed only)",
            f"message {zh:,}" if zh else f"not within {size:,}",
            "not run",
            "not run",
            "",
        ]
    )
    for name, side in (("ours, store", our), ("ours, post path", posting), ("LangChain", lc)):
        final = side.appends[size]
        progress(
            f"storage {name}: {final.stored:,} stored, {final.tally.describe_calls()}, "
            f"{final.seconds:.1f}s ({final.tally.server_seconds:.1f}s in moto)"
        )

    append_notes = (
        f"{CONTENT_CHARS}-character messages appended as user+assistant turns to one conversation, each "
        f"store on its own fresh moto table, one after the other in the same process; the {SIZES[0]:,} "
        f"rows are the {size:,} runs read when {SIZES[0]:,} messages were in. Ours, store functions: the "
        f"two TransactWriteItems of a post (`append_user_message`: user message + sequence reservation; "
        f"`record_reply`: reply + totals; token counts computed before timing) after one PutItem creating "
        f"the conversation. Ours, post path: `post_message` per turn with the model stubbed (fixed "
        f"500-character replies; encoding loaded before timing, as in a warm Lambda): what the service "
        f"really does and writes (one Query, both transactions with the turn log's events, exact token "
        f"counts, the window); the ratio row compares with this row, so it is the conservative one. "
        f"LangChain: one `add_messages([human, ai])` per turn, as `RunnableWithMessageHistory` does: it "
        f"reads the whole item (GetItem) and writes it back whole (UpdateItem); it stops where DynamoDB "
        f"would refuse the item (table below), and since a turn adds two messages the one before the "
        f"refused message is lost with it. Calls, KB sent (request bodies) and KB read (response bodies) "
        f"are totals. Times are CPU time of this process (`process_time`: other processes on a shared "
        f"machine stretch wall time, not the work done), split into moto's (timed around its request "
        f"handler) and the client's (the rest: our code or LangChain's, PynamoDB or boto3, botocore); "
        f"in-process moto is not DynamoDB, so its time is shown but is not a latency. "
        f"'Last {2 * RECENT_TURNS}': mean client CPU per message over the latest {RECENT_TURNS} turns, "
        f"i.e. what one more turn costs at that length; each side ran a 4-message warm-up first, so "
        f"one-off process "
        f"costs (imports, first botocore model loads) land on neither. moto runs with three bench-only "
        f"fixes (bench/dynamodb_meter.py `moto_fixes`): no whole-table copy per TransactWriteItems (moto's"
        f" rollback backup made each of our appends O(table): 130 ms per message at 200 and 336 ms at "
        f"1,000 before the fix), UpdateItem's size check counting the replaced attribute once (see the "
        f"limit table), and attribute values passed through its response serializer as they are (same "
        f"bytes)."
    )
    read_notes = (
        f"Calls and bytes of one read; CPU times (as above) are medians of {READ_REPEATS}, client side and "
        "moto's side apart. "
        f"Ours reads the conversation item and the newest {WINDOW} messages in one strongly consistent Query "
        "(API-4), whatever the length; the peer can only GetItem its whole history and slice it in Python. "
        "'held' is what each store held when read (the peer stops at DynamoDB's item limit)."
    )
    failure_notes = (
        f"DynamoDB caps an item at 400 KB = {DYNAMODB_ITEM_LIMIT:,} bytes: attribute names and values in "
        "UTF-8, plus 3 bytes per list or map and 1 per element (map entry names included), 1 byte for null "
        "or boolean (AWS's item size rules), computed here on exactly what the peer writes. The peer keeps "
        "the whole history as one list of message maps (type, content, additional_kwargs, "
        "response_metadata, name, id, example/tool_calls...), so every conversation stops there. moto "
        f"enforces its own approximation: names + values without the list/map overhead, limit "
        f"{MOTO_ITEM_LIMIT:,} bytes, checked here by real PutItem calls at the predicted boundary; on "
        "UpdateItem "
        "(the peer's write) it adds the replaced value to the new one, so unpatched moto refuses the peer at "
        "about half the real size. Our items hold one message each (at most ~20 KB: 5,000 characters of "
        "4-byte UTF-8), so no conversation length is refused."
    )
    final_ours, final_lc = posting.appends[size], lc.appends[size]
    read_ours, read_lc = our.reads[size], lc.reads[size]
    summary = [
        [
            f"storage: append {size:,} messages of {CONTENT_CHARS} characters",
            f"ours: all {final_ours.stored:,} stored, "
            f"{_per(final_ours.tally.sent, final_ours.stored) / 1000:.1f} KB sent per message (post path); "
            f"LangChain: stops at {final_lc.stored:,} (DynamoDB's 400 KB item), "
            f"{_per(final_lc.tally.sent, final_lc.stored) / 1000:.0f} KB sent per message",
            "no length limit",
            verdict(final_ours.stored == size),
        ],
        [
            f"storage: read the last {WINDOW} messages",
            f"ours: {read_ours.tally.describe_calls()}, {kb(read_ours.tally.received)} KB at {size:,} held; "
            f"LangChain: {read_lc.tally.describe_calls()}, {kb(read_lc.tally.received)} KB at "
            f"{final_lc.stored:,} held ({_ratio(read_lc.tally.received, read_ours.tally.received)} more)",
            "read independent of length",
            verdict(read_ours.tally.received <= 1.05 * our.reads[min(SIZES)].tally.received),
        ],
    ]
    return [
        {
            "title": "Storage: appending messages, ours vs LangChain DynamoDBChatMessageHistory (moto)",
            "summary": summary,
            "columns": [
                "messages",
                "store",
                "stored",
                "DynamoDB calls",
                "KB sent",
                "KB read",
                "client CPU (ms)",
                "client CPU ms / message",
                f"client CPU ms / message, last {2 * RECENT_TURNS}",
                "moto CPU (ms)",
            ],
            "rows": append_rows,
            "notes": append_notes,
        },
        {
            "title": f"Storage: reading the last window ({WINDOW} messages)",
            "columns": [
                "messages",
                "held",
                "read",
                "returned",
                "DynamoDB calls",
                "KB sent",
                "KB read",
                "client CPU (ms)",
                "moto CPU (ms)",
            ],
            "rows": read_rows,
            "notes": read_notes,
        },
        {
            "title": "Storage: where LangChain's one-item history hits the 400 KB item limit",
            "columns": [
                "content",
                "DynamoDB refuses (computed, AWS rule)",
                "moto PutItem refuses",
                "moto UpdateItem refuses (unpatched)",
                "moto accepts DynamoDB's refused item",
            ],
            "rows": failure_rows,
            "notes": failure_notes,
        },
    ]
