"""POST /conversations/{conversation_id}/messages/{message_id}/edit: a new user message beside an old one,
answered by the model on the new branch (API-18)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import branches
from chat_core.http import request_commands as commands
from chat_core.http.api import Response, build_app, caller, idempotency_key, json_response, retry_after_header
from chat_core.http.schemas import EditMessageIn
from chat_core.http.statuses import post_status
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app()


@app.post("/conversations/<conversation_id>/messages/<message_id>/edit")
def edit_message(conversation_id: str, message_id: str, body: EditMessageIn) -> Response[Any]:
    owner = caller(app)
    outcome = branches.edit_message(
        owner,
        conversation_id,
        message_id,
        commands.edit_command(conversation_id, body),
        idempotency_key=idempotency_key(app),
        context=app.lambda_context,
    )
    headers = retry_after_header() if not outcome.reply_stored else None
    return json_response(post_status(outcome), outcome.body, headers)


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer
