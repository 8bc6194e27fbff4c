"""POST /worlds/{world_id}/prompt: seed 004 prompt factory (history + scene -> OpenAI messages, budgeted)."""

from __future__ import annotations

from typing import Any

from chat_core.dialogue.prompt import PromptBuildConfig, build_structured_prompt
from chat_core.http.api import Response, build_app, caller, json_response
from chat_core.http.dialogue_schemas import PromptIn
from chat_core.http.warm import preload_tokenizer
from chat_core.observability import http_entry

app = build_app()


@app.post("/worlds/<world_id>/prompt")
def build_dialogue_prompt(world_id: str, body: PromptIn) -> Response[Any]:
    owner = caller(app)
    config = PromptBuildConfig.from_mapping(world_id, body.config_mapping())
    return json_response(200, build_structured_prompt(config, owner=owner).to_dict())


lambda_handler = http_entry(app)
preload_tokenizer()  # PERF-2: under SnapStart, the snapshot holds LLM_MODEL's tokenizer
