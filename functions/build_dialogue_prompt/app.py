"""POST /worlds/{world_id}/prompt: seed 004 prompt factory (history + scene -> OpenAI messages, budgeted)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from chat_core.dialogue.prompt import PromptBuildConfig, build_structured_prompt
from chat_core.http.api import build_app, caller, json_response
from chat_core.http.dialogue_schemas import PromptIn
from chat_core.observability import logger, metrics, tracer

app = build_app()


@app.post("/worlds/<world_id>/prompt")
def build_dialogue_prompt(world_id: str, body: PromptIn) -> Response[Any]:
    owner = caller(app)
    config = PromptBuildConfig.from_mapping(world_id, body.config_mapping())
    return json_response(200, build_structured_prompt(config, owner=owner).to_dict())


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
