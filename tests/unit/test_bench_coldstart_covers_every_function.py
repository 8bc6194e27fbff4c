"""PERF-1: the cold-start bench measures every function template.yaml deploys, a new one included, and
its floor row imports the libraries alone."""

from __future__ import annotations

import re
from pathlib import Path

from bench.bench_coldstart import FIRST_CALL, handlers
from bench.coldstart_floor import libraries
from scripts.template_operations import HOOK_FOLDER

REPO = Path(__file__).resolve().parents[2]


def test_the_bench_measures_every_function_of_the_template() -> None:
    """PERF-1: the bench's list comes from functions/routes.py, the table template.yaml is made from."""
    # Given the function folders template.yaml deploys (the pre-traffic hook aside: it runs at deploys)
    template = (REPO / "template.yaml").read_text(encoding="utf-8")
    deployed = sorted(set(re.findall(r"CodeUri: functions/([a-z0-9_]+)/", template)) - {HOOK_FOLDER})
    # When the bench lists what it measures
    measured = handlers()
    # Then it is the same list, and the functions whose first call it times are among them
    assert measured == deployed
    assert set(FIRST_CALL) <= set(measured)
    assert all((REPO / "events" / f"{name}.json").is_file() for name in FIRST_CALL)


def test_the_floor_imports_the_libraries_a_function_loaded_and_nothing_of_ours() -> None:
    """PERF-1: the bench's floor row imports the function's libraries alone: not chat_core, not app.py,
    not the standard library, in the order the function loaded them."""
    # Given the modules a function's import loaded, in order
    loaded = [
        "sys",
        "app",
        "chat_core",
        "chat_core.http.api",
        "boto3",
        "botocore.session",
        "json.decoder",
        "_ssl",
        "__main__",
        "_sysconfigdata__linux_x86_64-linux-gnu",
        "aws_lambda_powertools.event_handler.api_gateway",
        "pydantic",
        "asyncio.events",
    ]
    # When the floor picks what to import
    picked = libraries(loaded)
    # Then it is the libraries' modules alone, in that order
    assert picked == [
        "boto3",
        "botocore.session",
        "aws_lambda_powertools.event_handler.api_gateway",
        "pydantic",
    ]
