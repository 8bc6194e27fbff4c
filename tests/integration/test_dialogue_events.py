"""The sample events in events/ for the dialogue functions (`sam local invoke -e ...`) work as shipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.functions import invoke, load
from tests.support.lambda_context import LambdaContext

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EVENTS = Path(__file__).resolve().parents[2] / "events"


def event(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    return data


def test_seed004_sample_events_run_in_order(chat_service: None) -> None:
    """Seed 004 via the shipped events: add entries, read history, build the prompt, export, import."""
    # Given the sample entries are added
    added = invoke("add_dialogue_entries", event("add_dialogue_entries"))
    assert added.status == 201, added.body
    # When history and the prompt are asked for with the sample events
    history = invoke("get_dialogue_history", event("get_dialogue_history"))
    prompt = invoke("build_dialogue_prompt", event("build_dialogue_prompt"))
    # Then they answer with the stored lines
    assert history.status == 200
    assert [e["content"] for e in history.body["primary"]] == ["Zorg, we need to talk.", "Talk fast, human."]
    assert prompt.status == 200, prompt.body
    assert prompt.body["messages"][-1]["content"].endswith("Will you join the raid?")
    # And export and the sample import (into the empty save2) succeed
    exported = load("export_world").lambda_handler(
        event("export_world"), LambdaContext(function_name="export")
    )
    assert exported["statusCode"] == 200
    assert exported["body"].count("\n") == 4  # header, one dialogue, two entries
    imported = invoke("import_world", event("import_world"))
    assert imported.status == 201, imported.body


def test_sample_sqs_event_reports_its_poisoned_record(chat_service: None) -> None:
    """The sample SQS batch holds one good and one poisoned message: only the poisoned one is reported."""
    result = load("ingest_dialogue_entries").lambda_handler(
        event("ingest_dialogue_entries"), LambdaContext(function_name="ingest_dialogue_entries")
    )
    assert result == {"batchItemFailures": [{"itemIdentifier": "2e1424d4-f796-459a-8184-9c92662be6da"}]}


def test_a_batch_whose_every_record_is_invalid_reports_each_one(chat_service: None) -> None:
    """API-5 for queues: when every record is bad (not JSON, wrong shape, text that is not valid Unicode)
    the function answers a partial-batch response naming each record instead of failing the invocation,
    so alarms on function errors mean real errors and SQS redelivers (then dead-letters) only those."""
    sample = event("ingest_dialogue_entries")
    template = sample["Records"][0]
    bodies = [
        "not json",
        json.dumps({"owner": "alice"}),
        '{"owner": "alice", "world_id": "w1", "participants": ["a"], '
        '"entry": {"participant_id": "a", "content": "\\ud800", "game_tick": 1}}',
    ]
    records = [{**template, "messageId": f"bad-{n}", "body": body} for n, body in enumerate(bodies)]
    result = load("ingest_dialogue_entries").lambda_handler(
        {"Records": records}, LambdaContext(function_name="ingest_dialogue_entries")
    )
    assert result == {"batchItemFailures": [{"itemIdentifier": f"bad-{n}"} for n in range(len(bodies))]}
