"""POST /conversations/{conversation_id}/window: the window a message would be sent with (no model call)."""

from __future__ import annotations

from typing import Any

from chat_core.chat import assembly
from chat_core.http import request_commands as commands
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.schemas import BuildWindowIn
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app()


@app.post("/conversations/<conversation_id>/window")
def build_window(conversation_id: str, body: BuildWindowIn) -> Response[Any]:
    return json_response(
        200, assembly.build_window(caller(app), conversation_id, commands.window_command(body))
    )


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer
