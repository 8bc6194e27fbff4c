"""PERF-1 (cold start): chat_core.lazy_packages defers the `__init__` of three Powertools packages until a
name they export is used; every caller still sees the package it expects.

Each check runs in a fresh interpreter, since the deferral happens once per process, when chat_core is
first imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.fake_aws import bytecode_env

REPO = Path(__file__).resolve().parents[2]
DEFERRED = (
    "aws_lambda_powertools.event_handler",
    "aws_lambda_powertools.event_handler.openapi",
    "aws_lambda_powertools.utilities.data_classes",
)
#: A module only each package's own `__init__` imports.
MARKERS = {
    "aws_lambda_powertools.event_handler": "aws_lambda_powertools.event_handler.appsync",
    "aws_lambda_powertools.event_handler.openapi": "aws_lambda_powertools.event_handler.openapi.merge",
    "aws_lambda_powertools.utilities.data_classes": (
        "aws_lambda_powertools.utilities.data_classes.code_pipeline_job_event"
    ),
}


def _python(code: str, *args: str, cwd: Path = REPO) -> object:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "TABLE_NAME": "chat-history",
        "POWERTOOLS_TRACE_DISABLED": "true",
        **bytecode_env(),
        "PYTHONPATH": os.pathsep.join([str(REPO / "layers" / "chat_core"), str(REPO)]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_EXPORTS = """
import importlib, json, sys
deferred = sys.argv[1] == "deferred"
if deferred:
    import chat_core  # installs the deferral
found = {}
for name in sys.argv[2].split(","):
    package = importlib.import_module(name)
    exported = {}
    for attribute in package.__all__:
        value = getattr(package, attribute)
        exported[attribute] = f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', value)}"
    found[name] = exported
print(json.dumps(found))
"""


def test_a_deferred_package_still_exports_every_name_its_init_does() -> None:
    """PERF-1: after the deferral, each package's `__all__` names the same objects as without it."""
    # Given one interpreter that imported chat_core first, and one that never did
    # When each reads every name the three packages export
    deferred = _python(_EXPORTS, "deferred", ",".join(DEFERRED))
    plain = _python(_EXPORTS, "plain", ",".join(DEFERRED))
    # Then both saw the same objects, and there were names to see
    assert deferred == plain
    assert isinstance(plain, dict)
    assert all(names for names in plain.values())


_SERVED = """
import importlib, json
import aws_lambda_powertools.event_handler.openapi, aws_lambda_powertools.utilities.data_classes
from chat_core import lazy_packages  # after the packages: their own __init__ ran
wrong, count = [], 0
for package in sorted(lazy_packages.DEFERRED):
    real = importlib.import_module(package)
    for name, submodule in lazy_packages.submodule_exports(real).items():
        count += 1
        if getattr(importlib.import_module(submodule), name) is not getattr(real, name):
            wrong.append(f"{package}.{name}")
print(json.dumps({"wrong": wrong, "count": count}))
"""


def test_the_names_served_from_submodules_are_the_packages_own() -> None:
    """PERF-1: a name a deferred package serves from a submodule is the object its `__init__` exports."""
    # Given the names lazy_packages serves without running a package's __init__
    # When each is compared, in an interpreter where the packages initialised as usual, with the real one
    outcome = _python(_SERVED)
    # Then every one is the same object
    assert outcome["wrong"] == []
    assert outcome["count"] > 40


_SUBMODULE_THEN_NAME = """
import json, sys
import chat_core
import aws_lambda_powertools.event_handler.api_gateway
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEventV2
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSEvent  # takes S3Event from the package
markers = json.loads(sys.argv[1])
before = sorted(m for m in markers.values() if m in sys.modules)
from aws_lambda_powertools.event_handler import AppSyncResolver
import aws_lambda_powertools.event_handler.openapi as openapi
merge = openapi.OpenAPIMerge
middle = sorted(m for m in markers.values() if m in sys.modules)
import aws_lambda_powertools.utilities.data_classes as data_classes
exported = data_classes.__all__
after = sorted(m for m in markers.values() if m in sys.modules)
print(json.dumps({"before": before, "middle": middle, "after": after, "resolver": AppSyncResolver.__name__,
                  "exported": "SQSEvent" in exported}))
"""


def test_a_submodule_loads_alone_and_a_package_name_runs_the_init() -> None:
    """PERF-1: importing a submodule runs no `__init__` of a deferred package, nor does a name the
    `__init__` takes from a submodule (that submodule alone loads); a name the `__init__` defines itself
    (`__all__`) runs it, and the name is there."""
    # Given an interpreter that imported chat_core, Powertools' API Gateway resolver and the SQS events
    # When it then asks for names the packages take from other submodules, then for one they define
    outcome = _python(_SUBMODULE_THEN_NAME, json.dumps(MARKERS))
    # Then no package __init__ had run before; each name loaded its submodule; __all__ ran the __init__
    submodules = sorted(MARKERS[p] for p in DEFERRED if "data_classes" not in p)
    assert outcome == {
        "before": [],
        "middle": submodules,
        "after": sorted(MARKERS.values()),
        "resolver": "AppSyncResolver",
        "exported": True,
    }


_ALREADY_IMPORTED = """
import json, sys
import aws_lambda_powertools.event_handler
import chat_core
package = sys.modules["aws_lambda_powertools.event_handler"]
print(json.dumps({"getattr": "__getattr__" in vars(package), "resolver": "AppSyncResolver" in vars(package)}))
"""


def test_a_package_imported_before_chat_core_is_left_as_it_is() -> None:
    """PERF-1: where Powertools' event handler was imported first, chat_core does not replace it."""
    # Given an interpreter that imported the event handler, then chat_core
    outcome = _python(_ALREADY_IMPORTED)
    # Then the package is the one its __init__ built
    assert outcome == {"getattr": False, "resolver": True}


_BODY_CALL = """
import json, sys
sys.path.insert(0, sys.argv[1])
import app
from tests.support import events
from tests.support.lambda_context import LambdaContext
markers = json.loads(sys.argv[2])
event = events.post_message({"content": "hello"}, user=None)
answer = app.lambda_handler(event, LambdaContext(function_name="post_message"))
loaded = sorted(m for m in markers.values() if m in sys.modules)
print(json.dumps({"status": answer["statusCode"], "loaded": loaded, "validated": "pydantic" in sys.modules}))
"""


def test_a_validated_first_call_runs_no_deferred_init() -> None:
    """PERF-1: post_message's first call (its body validated by Powertools, then 401) runs none of the
    deferred `__init__`s: the validating middlewares take what they need from submodules."""
    # Given post_message imported in a fresh interpreter from its own folder, as Lambda does
    # When it is invoked once without identity
    outcome = _python(_BODY_CALL, str(REPO), json.dumps(MARKERS), cwd=REPO / "functions" / "post_message")
    # Then it answered 401 after validating, and no deferred package's __init__ ran
    assert outcome == {"status": 401, "loaded": [], "validated": True}


_BATCH = """
import json, sys
import chat_core
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)
def handle(record):
    if record.body == "bad":
        raise ValueError("bad")
    return record.body
event = {"Records": [
    {"messageId": str(i), "body": body, "receiptHandle": "r", "attributes": {}, "messageAttributes": {},
     "md5OfBody": "", "eventSource": "aws:sqs", "eventSourceARN": "arn:aws:sqs:us-east-1:1:q",
     "awsRegion": "us-east-1"}
    for i, body in enumerate(["ok", "bad", "ok"])]}
answer = process_partial_response(event=event, record_handler=handle, processor=processor, context=None)
print(json.dumps({"answer": answer, "init_ran": sys.argv[1] in sys.modules}))
"""


def test_powertools_batch_works_over_the_deferred_data_classes() -> None:
    """PERF-1: Powertools' batch utility, imported after chat_core, reads SQS records from the deferred
    data classes (whose submodules import names from the package) and reports the failed one."""
    # Given an interpreter that imported chat_core, then Powertools' batch utility
    # When a batch of three SQS records, one of which fails, is processed
    marker = MARKERS["aws_lambda_powertools.utilities.data_classes"]
    outcome = _python(_BATCH, marker)
    # Then the failed record alone is reported, and the data classes' __init__ never ran
    assert outcome == {"answer": {"batchItemFailures": [{"itemIdentifier": "1"}]}, "init_ran": False}
