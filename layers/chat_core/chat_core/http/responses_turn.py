"""POST /v1/responses (RSP-2, RSP-5): one Responses request as one post, whole or streamed.

The input is planned by `chat.responses` (what is new, where it goes), the turn is an ordinary post
(`chat.post.post_message`) and the answer is the Response object of the stored answer.

Streamed (`stream: true`), the Chat Completions chunks of the model's answer become the Responses
events as they arrive: `response.created` and `response.in_progress` with the first chunk (so a
request refused before the model answers is still a plain JSON error), then per output item
`response.output_item.added`, `response.content_part.added`, `response.output_text.delta`... or
`response.function_call_arguments.delta`..., and once the answer is stored the `.done` events and
`response.completed` (`response.incomplete`, `response.failed`) with the stored Response. Every event
carries its `sequence_number`. The ids are known before the answer is: they name the slot the post
reserved for it (`EventStream.turn_started`), so the first event already carries the stored ids.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from chat_core.chat import post, rate_limit, response_items, response_settings, responses
from chat_core.chat.commands import PostMessage
from chat_core.chat.once import once
from chat_core.errors import InvalidInput, TurnEnded
from chat_core.http import responses_unstored as unstored
from chat_core.http.api import openai_error_body, openai_status
from chat_core.http.conversation_ids import openai_id
from chat_core.http.request_commands import post_command
from chat_core.http.responses_api import (
    ResponseCreateIn,
    answered_settings,
    in_progress_object,
    post_settings,
    response_object,
)
from chat_core.http.responses_compact import compact_before_turn
from chat_core.http.schemas import PostMessageIn
from chat_core.http.statuses import status_for
from chat_core.settings import get_settings
from chat_core.store.records import MessageRecord

if TYPE_CHECKING:
    from chat_core.llm.completion import ChatProvider

Emit = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class ResponseAnswer:
    """The answer of a POST /v1/responses: its status, body (the Response, also when `streamed`: its
    events went out already) and headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    streamed: bool = False


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> ResponseAnswer:
    status = openai_status(status)
    return ResponseAnswer(status, openai_error_body(status, code, message), headers or {})


@dataclass
class _Open:
    kind: str  # "message" | "function_call"
    index: int
    item: dict[str, Any]
    text: str = ""


class EventStream:
    """The Responses events of one streamed answer (see the module): a post's chunk sink."""

    def __init__(self, emit: Emit, request: ResponseCreateIn, model: str) -> None:
        self.emit_raw, self.request, self.model = emit, request, model
        self.sequence = 0
        self.started = False
        self.items: list[_Open] = []
        self.calls: dict[int, _Open] = {}
        self.where: tuple[str, int] = ("", 0)
        #: Items the response shows before its answer (RSP-10: a compaction done before the turn).
        self.leading: list[dict[str, Any]] = []

    def turn_started(self, conversation_id: str, reply_seq: int) -> None:
        """Where the post will store the answer (called by the post before it asks the model)."""
        self.where = (conversation_id, reply_seq)

    def send(self, kind: str, **fields: Any) -> None:
        self.emit_raw({"type": kind, "sequence_number": self.sequence, **fields})
        self.sequence += 1

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        rid = response_items.response_id(*self.where)
        snapshot = in_progress_object(self.request, rid, self.model, int(time.time()))
        snapshot["conversation"] = {"id": openai_id(self.where[0])}
        self.send("response.created", response=snapshot)
        self.send("response.in_progress", response=snapshot)
        for item in self.leading:
            opened = self._open(item["type"], item)
            self.send("response.output_item.done", output_index=opened.index, item=item)

    def _open(self, kind: str, item: dict[str, Any]) -> _Open:
        opened = _Open(kind, len(self.items), item)
        self.items.append(opened)
        self.send("response.output_item.added", output_index=opened.index, item=dict(item))
        return opened

    def __call__(self, chunk: dict[str, Any]) -> None:
        self.chunk(chunk)

    def chunk(self, chunk: dict[str, Any]) -> None:
        """One Chat Completions chunk of the model's answer."""
        self.start()
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                self._text(delta["content"])
            for call in delta.get("tool_calls") or []:
                self._call(call)

    def _text(self, text: str) -> None:
        current = self.items[-1] if self.items and self.items[-1].kind == "message" else None
        if current is None:
            item = {
                "id": response_items.item_id("msg", *self.where),
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            }
            current = self._open("message", item)
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            self.send(
                "response.content_part.added",
                item_id=item["id"],
                output_index=current.index,
                content_index=0,
                part=part,
            )
        current.text += text
        self.send(
            "response.output_text.delta",
            item_id=current.item["id"],
            output_index=current.index,
            content_index=0,
            delta=text,
            logprobs=[],
        )

    def _call(self, call: dict[str, Any]) -> None:
        index = int(call.get("index", 0))
        current = self.calls.get(index)
        function = call.get("function") or {}
        if current is None:
            item = {
                "id": response_items.item_id("fc", *self.where, index),
                "type": "function_call",
                "status": "in_progress",
                "call_id": call.get("id") or "",
                "name": function.get("name") or "",
                "arguments": "",
            }
            current = self.calls[index] = self._open("function_call", item)
        if function.get("arguments"):
            current.text += function["arguments"]
            self.send(
                "response.function_call_arguments.delta",
                item_id=current.item["id"],
                output_index=current.index,
                delta=function["arguments"],
            )

    def finish(self, response: dict[str, Any]) -> None:
        """The stored Response: the events of items not streamed, every `.done`, then the last event."""
        self.start()
        for index, item in enumerate(response["output"]):
            if index < len(self.leading):
                continue  # sent whole at the start
            streamed = self.items[index] if index < len(self.items) else None
            if streamed is None:
                self._replay_item(item)
            self._done(index, item)
        kind = {"completed": "response.completed", "incomplete": "response.incomplete"}.get(
            response["status"], "response.failed"
        )
        self.send(kind, response=response)

    def _replay_item(self, item: dict[str, Any]) -> None:
        opened = self._open(
            item["type"],
            {
                **item,
                "status": "in_progress",
                **({"content": []} if item["type"] == "message" else {"arguments": ""}),
            },
        )
        if item["type"] == "message":
            for part_index, part in enumerate(item["content"]):
                empty = {**part, "text": ""} if part["type"] == "output_text" else {**part, "refusal": ""}
                self.send(
                    "response.content_part.added",
                    item_id=item["id"],
                    output_index=opened.index,
                    content_index=part_index,
                    part=empty,
                )
                if part["type"] == "output_text" and part["text"]:
                    self.send(
                        "response.output_text.delta",
                        item_id=item["id"],
                        output_index=opened.index,
                        content_index=part_index,
                        delta=part["text"],
                        logprobs=[],
                    )
        elif item["arguments"]:
            self.send(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=opened.index,
                delta=item["arguments"],
            )

    def _done(self, index: int, item: dict[str, Any]) -> None:
        if item["type"] == "message":
            for part_index, part in enumerate(item["content"]):
                if part["type"] == "output_text":
                    self.send(
                        "response.output_text.done",
                        item_id=item["id"],
                        output_index=index,
                        content_index=part_index,
                        text=part["text"],
                        logprobs=[],
                    )
                else:
                    self.send(
                        "response.refusal.done",
                        item_id=item["id"],
                        output_index=index,
                        content_index=part_index,
                        refusal=part["refusal"],
                    )
                self.send(
                    "response.content_part.done",
                    item_id=item["id"],
                    output_index=index,
                    content_index=part_index,
                    part=part,
                )
        elif item["type"] == "function_call":
            self.send(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        self.send("response.output_item.done", output_index=index, item=item)


def create_response(
    owner: str,
    request: ResponseCreateIn,
    *,
    idempotency_key: str | None = None,
    context: Any = None,
    provider: ChatProvider | None = None,
    emit: Emit | None = None,
) -> ResponseAnswer:
    """RSP-2: one Responses request as one post (see the module); with `emit`, streamed (RSP-5);
    `store: false` as `http.responses_unstored` says."""
    request.unsupported()
    if request.stream and emit is None:
        raise InvalidInput(
            "stream: true is served by the streaming URL (stack output StreamUrl); this endpoint answers "
            "whole responses",
            field="stream",
        )
    if request.store is False:
        return _unstored(owner, request, idempotency_key, context, provider, emit)
    return _respond(owner, request, idempotency_key, context, provider, emit, None)


def _unstored(
    owner: str,
    request: ResponseCreateIn,
    idempotency_key: str | None,
    context: Any,
    provider: ChatProvider | None,
    emit: Emit | None,
) -> ResponseAnswer:
    """`store: false` (http.responses_unstored): the answer recorded under the Idempotency-Key, then
    the conversation it was made in deleted for good; a retry is answered (and streamed) from the record."""
    made: list[str] = []
    held = unstored.HeldLast(emit) if emit is not None else None
    emit = held or emit

    def run() -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            answer = _respond(owner, request, None, context, provider, emit, made)
        except BaseException:
            unstored.drop(owner, made)
            raise
        return {"answer": answer}, unstored.record(answer.status, answer.body, answer.headers)

    def replay(kept: Mapping[str, Any]) -> dict[str, Any]:
        status, body, headers = unstored.answer_of(kept)
        if emit is None or status != 200:
            return {"answer": ResponseAnswer(status, body, headers)}
        events = EventStream(emit, request, str(body.get("model") or ""))
        where = response_items.parse_response_id(str(body.get("id") or ""))
        if where is not None:
            events.turn_started(*where)
        events.finish(body)
        return {"answer": ResponseAnswer(200, body, headers, streamed=True)}

    body = unstored.hashed_body(request)
    try:
        answered = once(unstored.ONCE_NAME, owner, idempotency_key, body, run, replay, context)
        unstored.drop(owner, made)  # after the answer is recorded (a replay made nothing)
    finally:
        if held is not None:
            held.release()  # the last event once the conversation is gone
    result: ResponseAnswer = answered["answer"]
    return result


def _command(turn: PostMessageIn, request: ResponseCreateIn, previous: MessageRecord | None) -> PostMessage:
    """The post of a Responses request: its instructions for this turn only, its settings kept with
    the answer, or named on the answer it continues when they are the same (a request that keeps
    nothing keeps no settings either)."""
    command = post_command(turn)
    as_sent = dict(command.as_sent)
    if request.instructions is not None:
        as_sent["instructions"] = request.instructions
    # A store: false answer is marked so the table stream's consumers leave its turn alone (RSP-9, MEM-5):
    # its partition is deleted in the same request, and nothing of it may be indexed or embedded.
    kept = (
        response_settings.shared(answered_settings(request), previous)
        if request.store is not False
        else {"store": False}
    )
    return replace(
        command,
        instructions=request.instructions,
        answer_settings=kept or None,
        as_sent=as_sent,
        kept=request.store is not False,
    )


def _respond(
    owner: str,
    request: ResponseCreateIn,
    idempotency_key: str | None,
    context: Any,
    provider: ChatProvider | None,
    emit: Emit | None,
    made: list[str] | None,
) -> ResponseAnswer:
    """The request as one post; the conversations it wrote in go to `made` (when given)."""
    if request.input is None:
        raise InvalidInput("input is required", field="input")
    model = request.model or get_settings().llm_model
    settings = post_settings(request)
    given = response_items.input_messages(request.input)
    plan = responses.plan_response(
        owner,
        given,
        previous_response_id=request.previous_response_id,
        conversation_id=request.conversation_id(),
        instructions=request.instructions,
    )
    if request.store is False and plan.conversation is not None:
        raise InvalidInput(
            "store: false is served for a response that continues nothing (no previous_response_id or "
            "conversation): a continued conversation is stored",
            field="store",
        )
    if request.truncation == "disabled":
        responses.check_fits(owner, plan, model)
    body: dict[str, Any] = {"model": model, **settings}
    if plan.content is not None:
        body["content"] = plan.content
    if plan.recorded:
        body["messages"] = plan.recorded
    if plan.conversation is not None:
        body["conversation_id"] = plan.conversation.conversation_id
    if request.recall is not None:
        body["recall"] = request.recall
    try:
        turn = PostMessageIn.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "input"
        raise InvalidInput(f"input: {where}: {first.get('msg', 'invalid')}", field="input") from exc
    command = _command(turn, request, plan.previous)
    post.check_before_io(
        command, new=plan.conversation is None and not plan.prefix and plan.system_prompt is None
    )
    # OPS-4: a turn that writes before its post (a new conversation, the system prompt, the active
    # path moved, appended input) is counted against the rate limit before that write; any other, by
    # the post (so a retry answered from its Idempotency-Key is not counted).
    admitted = responses.writes_before_post(plan)
    if admitted:
        rate_limit.check(owner)
    kept = request.store is not False
    conversation_id = responses.open_response(owner, plan, model, idempotency_key, kept=kept)
    if made is not None and conversation_id is not None:
        made.append(conversation_id)
    compacted = compact_before_turn(owner, request, plan, conversation_id, model, context)
    if conversation_id is not None and turn.conversation_id is None:
        command = _command(
            turn.model_copy(update={"conversation_id": conversation_id}), request, plan.previous
        )
    events = EventStream(emit, request, model) if emit is not None else None
    if events is not None and compacted is not None:
        events.leading.append(compacted)
    outcome = post.post_message(
        owner,
        command,
        idempotency_key=idempotency_key,
        context=context,
        provider=provider,
        on_chunk=events,
        admitted=admitted,
    )
    conversation_id = str(outcome.body["conversation_id"])
    if made is not None:
        made.append(conversation_id)
    headers = {"X-Conversation-Id": conversation_id}
    answer = outcome.body.get("assistant_message")
    if answer is None:
        error = TurnEnded("the turn reached MAX_TURN_STEPS model calls; the tool results are stored")
        return _error(status_for(error), error.code, error.message, headers)
    if outcome.model_failed and not (events is not None and events.started):
        message = str((answer.get("error") or {}).get("message") or "the model provider failed")
        return _error(502, "provider_failed", message, headers)
    previous = plan.previous
    previous_id = response_items.response_id(conversation_id, previous.seq) if previous is not None else None
    output = response_items.message_items(answer) if answer.get("status") != "error" else []
    if compacted is not None:
        output.insert(0, compacted)
    shown = request.model_dump(mode="json", exclude_none=True)
    response = response_object(conversation_id, answer, output, settings=shown, previous_id=previous_id)
    if request.store is False:
        response["conversation"] = None
    if not outcome.reply_stored:
        headers["X-Reply-Stored"] = "false"  # REL-4: the caller still gets the answer
    if events is not None:
        events.finish(response)
        return ResponseAnswer(200, response, headers, streamed=True)
    return ResponseAnswer(200, response, headers)
