"""API-8, API-9: recorded answers of every HTTP route of template.yaml, replayed and compared.

A scripted scenario calls every route of the local server (the real handlers, the stand-in model) over
real HTTP, with a success and the typical errors (400 bad body, 404 another user's resource, 409, 422,
401, 403, 429, 502), and records each answer: method and path template, status, the headers a client
reads, and the body (JSON; the event sequence of a stream; the lines of a JSON Lines file; length and
SHA-256 of a static file). One server serves the whole scenario; one file per resource family.

Values that change from run to run become placeholders that keep the shape: key names, nesting and
JSON types stay, and one value keeps one placeholder throughout a family's file (`<id:3>` is the same
conversation wherever it appears). Ids (ULID, UUID, 32-hex, `chatcmpl-`) become `<id:N>`, cursors
`<cursor:N>`; timestamps, dates and HTTP dates `<timestamp>`, `<date>`, `<http-date>`; the server's
and the model's URLs `<server>` and `<model>`; presigned URLs `<presigned-url>`; latencies, retry
delays, request ids and Unix times `<ms>:float`, `<seconds>:int`, `<request-id>:str`, `<unix-time>:int`
(the placeholder names the type); the few values that race with a background worker `<racy>:int`.

This guards the rule of the coming reorganisation of the code (request models as commands, response
models in the layer, store records, routes from one table): the wire is unchanged. The files under
tests/golden/answers/ were recorded from the code before that change; a moved field, a renamed key, a
new header or another status is a difference, shown as a diff of the family's file. When a change of
the wire is intended, rewrite the files and review their diff:

    GOLDEN_UPDATE=1 pytest tests/golden/test_golden_answers.py
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.golden.recording import ADMIN_GROUP, Recorder, differences, dump, normalise
from tests.golden.scenario_chat import conversations, messages, openai, usage
from tests.golden.scenario_memory import memory
from tests.golden.scenario_memory_items import memory_items
from tests.golden.scenario_memory_search import memory_search
from tests.golden.scenario_responses import responses
from tests.golden.scenario_user_data import user_data
from tests.golden.scenario_worlds import console, world_files, worlds
from tests.support.local_server import ServerProcess
from tests.support.openai_standin import OpenAIStandin

ANSWERS = Path(__file__).with_name("answers")
FAMILIES = (
    "conversations",
    "messages",
    "openai",
    "usage",
    "worlds",
    "world_files",
    "console",
    "responses",
    "memory",
    "memory_search",
    "memory_items",
    "user_data",
)


@pytest.fixture(scope="module")
def golden_server(
    standin: OpenAIStandin, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One local server for the whole scenario: the stand-in model, an administrators' group, no snapshots."""
    process = ServerProcess(
        tmp_path_factory.mktemp("golden-data"),
        env={
            "LLM_BASE_URL": standin.base_url,
            "LLM_MODEL": "standin-model",
            "LLM_MAX_RETRIES": "1",
            "ADMIN_GROUP": ADMIN_GROUP,
            "BUDGETS_ENABLED": "true",
            "PRICES": json.dumps({"standin-model": {"input": 1, "output": 4}}),
        },
        args=["--no-persist"],
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def recording(golden_server: ServerProcess, standin: OpenAIStandin) -> dict[str, list[dict[str, Any]]]:
    """The scenario, run once against the server; its answers normalised, by family."""
    standin.set_mode("ok")
    rec = Recorder(golden_server.url)
    conversations(rec)
    messages(rec, standin)
    openai(rec, standin)
    usage(rec)
    worlds(rec)
    world_files(rec)
    console(rec)
    responses(rec)
    memory(rec)
    memory_search(rec)
    memory_items(rec)
    user_data(rec)  # last: it erases its user
    urls = {golden_server.url: "<server>", standin.base_url: "<model>"}
    return {family: normalise(calls, urls) for family, calls in rec.families.items()}


def test_the_golden_answers_cover_every_route_of_the_openapi_document() -> None:
    """API-8: every route of template.yaml (the golden OpenAPI document lists them all) has recorded
    answers; with the replay below equal to the files, the scenario calls every route."""
    # Given the routes of the golden OpenAPI document
    document = json.loads((ANSWERS.parent / "openapi.json").read_text(encoding="utf-8"))
    routes = {f"{method.upper()} {path}" for path, item in document["paths"].items() for method in item}
    # When the recorded requests are gathered from every family's file
    recorded = {
        call["request"]
        for file in ANSWERS.glob("*.json")
        for call in json.loads(file.read_text(encoding="utf-8"))
    }
    # Then no route is missing
    assert sorted(routes - recorded) == []


def test_recorded_answers_equal_the_golden_copy(recording: dict[str, list[dict[str, Any]]]) -> None:
    """API-8, API-9: the scenario's answers equal tests/golden/answers/<family>.json, family by family
    (one test, so that the scenario runs once per session, also under xdist)."""
    # Given the scenario's answers, by family
    assert tuple(recording) == FAMILIES
    if os.environ.get("GOLDEN_UPDATE") == "1":
        ANSWERS.mkdir(exist_ok=True)
        for family, calls in recording.items():
            (ANSWERS / f"{family}.json").write_text(dump(calls), encoding="utf-8")
    # Then each family's are the recorded ones, call by call, and no family's file is left over
    report = ""
    for family, calls in recording.items():
        golden_file = ANSWERS / f"{family}.json"
        golden = json.loads(golden_file.read_text(encoding="utf-8")) if golden_file.exists() else []
        report += differences(family, golden, calls)
    if report:
        pytest.fail("the answers differ from the golden copy:\n" + report, pytrace=False)
    assert sorted(file.stem for file in ANSWERS.glob("*.json")) == sorted(FAMILIES)
