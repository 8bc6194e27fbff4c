"""PERF-1 (cold start): importing a handler loads only what its route needs.

Each functions/<name>/app.py is imported as Lambda does at init (cwd = the function's folder, tracing on
as `Tracing: Active` gives it), in a child forked from an interpreter that has loaded botocore, boto3
and PynamoDB alone (see _FORKER). None may load the X-Ray SDK (the Tracer is
built on the first invocation), tiktoken or sentencepiece (encodings load on the first exact count, TOK-3,
TOK-10), or httpx unless
the function calls the model. `make bench` measures the time; these tests keep the structure from
regressing.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts.template_operations import HOOK_FOLDER
from tests.support.fake_aws import bytecode_env

REPO = Path(__file__).resolve().parents[2]
FUNCTIONS = REPO / "functions"
#: Every handler but the pre-traffic hook's, which runs once per deployment and loads no chat_core.
HANDLERS = sorted(p.parent.name for p in FUNCTIONS.glob("*/app.py") if p.parent.name != HOOK_FOLDER)
#: The functions that call the model on every invocation: the HTTP client is theirs to load.
CALLS_THE_MODEL = frozenset(
    {
        "post_message",
        "chat_completions",
        "stream_chat",
        "summarize_conversation",
        "edit_message",
        "regenerate_message",
        "responses",
        "responses_socket",
    }
)
#: Loaded only by the `__init__` of a package chat_core.lazy_packages defers: every resolver of Powertools'
#: event handler (AppSync), its OpenAPI merge tool, every event class of its data classes.
DEFERRED_INIT_MARKERS = (
    "aws_lambda_powertools.event_handler.appsync",
    "aws_lambda_powertools.event_handler.openapi.merge",
    "aws_lambda_powertools.utilities.data_classes.code_pipeline_job_event",
)
#: The SQS workers: their app.py imports Powertools' batch utility, which imports the data classes, before
#: chat_core is imported to defer them.
IMPORT_POWERTOOLS_BATCH_FIRST = frozenset({"ingest_dialogue_entries", "run_import", "run_user_job"})
WATCHED = ("aws_xray_sdk", "httpx", "tiktoken", "sentencepiece", *DEFERRED_INIT_MARKERS)

_IMPORT = f"""
import json, sys
import app
print(json.dumps(sorted(m for m in {WATCHED!r} if m in sys.modules)))
"""

_INVOKE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import app
from chat_core.observability import tracer
from tests.support import events
from tests.support.lambda_context import LambdaContext
before = (tracer.built, "aws_xray_sdk" in sys.modules)
answer = app.lambda_handler(events.list_conversations(user=None), LambdaContext(function_name="list"))
print(json.dumps({"before": before, "after": [tracer.built, "aws_xray_sdk" in sys.modules],
                  "status": answer["statusCode"]}))
"""


def _lambda_env(function: str, **extra: str) -> dict[str, str]:
    """Roughly what Lambda sets for a function (template.yaml Globals), none of this shell's settings."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
        "AWS_LAMBDA_FUNCTION_NAME": function,
        "LAMBDA_TASK_ROOT": str(FUNCTIONS / function),
        "TABLE_NAME": "chat-history",
        "POWERTOOLS_SERVICE_NAME": "chat-history",
        "POWERTOOLS_METRICS_NAMESPACE": "ChatHistory",
        **bytecode_env(),
        # This checkout's layer, as /opt/python is in Lambda (ahead of any installed copy).
        "PYTHONPATH": str(REPO / "layers" / "chat_core"),
    }
    env.update(extra)
    return env


# Every check runs in a child forked from one interpreter that has imported botocore, boto3 and PynamoDB
# and nothing of the project (PYTHONPATH and the bytecode cache as each child's): every function loads them
# first (the store is PynamoDB's), none of the modules these tests watch is among what they import (checked
# before the first fork), and importing them in each of about a hundred fresh interpreters was more than
# half of this file's CPU. A child takes the check's cwd, environment and arguments, runs its code as
# `python -c` would, and writes its output to files; the forking interpreter answers one JSON line per check.
_FORKER = r"""
import json, os, sys, time, traceback
import boto3, botocore.session, pynamodb.models, pynamodb.transactions
shared = set(sys.modules)
print(json.dumps(sorted(shared)), flush=True)
for line in sys.stdin:
    job = json.loads(line)
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.chdir(job["cwd"])
            os.environ.clear()
            os.environ.update(job["env"])
            time.tzset()
            sys.argv = ["-c", *job["args"]]
            sys.stdout = open(job["out"], "w")
            sys.stderr = open(job["err"], "w")
            exec(compile(job["code"], "<string>", "exec"), {"__name__": "__main__"})
        except BaseException:
            traceback.print_exc()
            status = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    _, code = os.waitpid(pid, 0)
    print(json.dumps(os.waitstatus_to_exitcode(code)), flush=True)
"""


class _Forker:
    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.shared: set[str] = set()
        self.tmp = Path()

    def run(self, function: str, code: str, args: tuple[str, ...], env: dict[str, str]) -> str:
        tmp = self.tmp
        if self.proc is None:
            base = _lambda_env("forker")
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _FORKER],
                cwd=tmp,
                env=base,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert self.proc.stdout is not None
            self.shared = set(json.loads(self.proc.stdout.readline()))
        # What the forking interpreter loaded hides none of what the checks look for.
        watched = {*WATCHED, *POST_PATH, "pydantic", "chat_core", "aws_lambda_powertools"}
        assert not {m for m in self.shared if m.split(".")[0] in watched or m in watched}
        out, err = tmp / "out", tmp / "err"
        job = {
            "cwd": str(FUNCTIONS / function),
            "env": _lambda_env(function, **env),
            "args": list(args),
            "code": code,
            "out": str(out),
            "err": str(err),
        }
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(job) + "\n")
        self.proc.stdin.flush()
        status = json.loads(self.proc.stdout.readline())
        assert status == 0, err.read_text()[-3000:]
        return out.read_text().strip().splitlines()[-1]

    def close(self) -> None:
        if self.proc is not None:
            self.proc.communicate(timeout=60)
            self.proc = None


_FORKER_PROCESS = _Forker()


@pytest.fixture(scope="module", autouse=True)
def _forker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    _FORKER_PROCESS.tmp = tmp_path_factory.mktemp("cold-start")
    yield
    _FORKER_PROCESS.close()


def _run(function: str, code: str, *args: str, **env: str) -> str:
    return _FORKER_PROCESS.run(function, code, args, env)


def test_every_function_is_checked() -> None:
    """PERF-1: the list below covers every function folder (a new one is checked without being named)."""
    # Given the function folders
    # When they are listed
    # Then there are handlers, and the model callers named here still exist
    assert len(HANDLERS) >= 6
    assert set(HANDLERS) >= CALLS_THE_MODEL


@pytest.mark.parametrize("function", HANDLERS)
def test_importing_a_handler_loads_no_tracing_sdk_tokenizer_or_unneeded_http_client(function: str) -> None:
    """PERF-1: no aws_xray_sdk and no tiktoken at import; no httpx unless the function calls the model;
    none of what the deferred Powertools packages' `__init__` would import (other resolvers, events)."""
    # Given a fresh interpreter set up like a Lambda with tracing on
    # When the handler module is imported
    loaded = set(json.loads(_run(function, _IMPORT)))
    # Then the X-Ray SDK, tiktoken and the deferred packages' extras are not loaded, nor httpx where the
    # model is never called (the queue workers import Powertools' batch utility, and with it all of its
    # data classes, before chat_core)
    allowed = {"httpx"} if function in CALLS_THE_MODEL else set()
    if function in IMPORT_POWERTOOLS_BATCH_FIRST:
        allowed.add("aws_lambda_powertools.utilities.data_classes.code_pipeline_job_event")
    assert loaded - allowed == set(), f"{function} imports {sorted(loaded - allowed)} at init"


def test_the_handler_decorator_builds_the_tracer_on_the_first_invocation() -> None:
    """PERF-1: `@tracer.capture_lambda_handler` hands the first call to Powertools' Tracer (built then)."""
    # Given list_conversations imported in a fresh interpreter
    # When it is invoked once (no identity: answered 401 before any DynamoDB call)
    outcome = json.loads(_run("list_conversations", _INVOKE, str(REPO), POWERTOOLS_TRACE_DISABLED="true"))
    # Then the Tracer and the X-Ray SDK did not exist before the call, and did after it
    assert outcome["before"] == [False, False]
    assert outcome["after"] == [True, True]
    assert outcome["status"] == 401


_LOADED_OF_THESE = """
import json, sys
import app
print(json.dumps(sorted(m for m in sys.argv[1].split(",") if m in sys.modules)))
"""
#: The post path (the model client, the turn recorder, Powertools idempotency) and the request models.
POST_PATH = ("chat_core.chat.post", "chat_core.llm.client", "aws_lambda_powertools.utilities.idempotency")
READ_HANDLERS = (
    "get_conversation",
    "list_conversations",
    "get_events",
    "get_tree",
    "get_usage",
    "list_models",
)


@pytest.mark.parametrize("function", READ_HANDLERS)
def test_a_read_handler_does_not_import_the_post_path(function: str) -> None:
    """PERF-1: a read handler's init loads neither the post operation nor the model client."""
    # Given a read handler imported in a fresh interpreter set up like Lambda
    # When its modules are listed
    loaded = json.loads(_run(function, _LOADED_OF_THESE, ",".join(POST_PATH)))
    # Then none of the post path is among them
    assert loaded == []


def test_the_queue_ingestion_imports_no_pydantic() -> None:
    """PERF-1: SQS records are checked by hand (chat_core.http.ingest_message), so pydantic stays out."""
    # Given the ingestion function imported in a fresh interpreter
    # When its modules are listed
    loaded = json.loads(
        _run("ingest_dialogue_entries", _LOADED_OF_THESE, "pydantic,chat_core.http.dialogue_schemas")
    )
    # Then neither pydantic nor the request models were imported
    assert loaded == []


#: Functions whose routes take path parameters and `chat_core.http.query.Query` parameters only: no body,
#: so nothing for Powertools' validation (pydantic) to check.
WITHOUT_BODIES = (
    "create_import",
    "delete_conversation",
    "delete_dialogue",
    "delete_dialogue_entry",
    "delete_message",
    "delete_world",
    "export_world",
    "export_world_s3",
    "get_conversation",
    "get_dialogue_history",
    "get_events",
    "get_import",
    "get_tree",
    "get_usage",
    "import_world",
    "list_conversations",
    "list_dialogues",
    "list_models",
    "list_saves",
    "list_worlds",
    "load_save",
    "memory_facts",
    "revert_load",
    "search_memory",
    "start_import",
    "user_erasure",
    "user_exports",
    "user_imports",
)
_WITHOUT_BODY_CALL = """
import json, re, sys
sys.path.insert(0, sys.argv[1])
import app
from tests.support import events
from tests.support.lambda_context import LambdaContext
at_import = "pydantic" in sys.modules
method, rule = app.app.declared_routes[0]
params = {name: "x1" for name in re.findall(r"<(\\w+)>", rule)}
path = re.sub(r"<(\\w+)>", "x1", rule)
route = re.sub(r"<(\\w+)>", r"{\\1}", rule)
event = events.http_event(method, path, route=route, path_parameters=params, query={"limit": "0"},
                          user=None, raw_body="{}")
answer = app.lambda_handler(event, LambdaContext(function_name="without-body"))
print(json.dumps({"at_import": at_import, "after_call": "pydantic" in sys.modules,
                  "status": answer["statusCode"]}))
"""


@pytest.mark.parametrize("function", WITHOUT_BODIES)
def test_a_function_whose_routes_take_no_body_never_loads_pydantic(function: str) -> None:
    """PERF-1: validation is per route; path and query parameters are read by hand, without pydantic."""
    # Given a function whose routes take path and query parameters only, imported in a fresh interpreter
    # When it is invoked once without identity (a bad limit and a body sent anyway)
    outcome = json.loads(_run(function, _WITHOUT_BODY_CALL, str(REPO), POWERTOOLS_TRACE_DISABLED="true"))
    # Then it answered 401 and pydantic was loaded neither at init nor by the call
    assert outcome == {"at_import": False, "after_call": False, "status": 401}


def test_the_list_of_functions_without_bodies_is_every_such_function() -> None:
    """PERF-1: the list above is every function whose routes take path and Query parameters only."""
    # Given each HTTP function's route functions, read from their source
    found = set()
    for folder in FUNCTIONS.glob("*/app.py"):
        tree = ast.parse(folder.read_text())
        routes = [
            (fn, dec.args[0].value)
            for fn in tree.body
            if isinstance(fn, ast.FunctionDef)
            for dec in fn.decorator_list
            if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) and dec.func.attr in VERBS
        ]
        # When a function's every route takes only its rule's <name> parameters and Query parameters
        if routes and all(
            all(
                a.arg in re.findall(r"<(\w+)>", rule)
                or (a.annotation is not None and "Query(" in ast.unparse(a.annotation))
                for a in fn.args.args + fn.args.kwonlyargs
            )
            for fn, rule in routes
        ):
            found.add(folder.parent.name)
    # Then they are exactly the list the test above checks
    assert found == set(WITHOUT_BODIES)


VERBS = frozenset({"get", "post", "put", "patch", "delete"})


_TRACED_INVOKE = """
import json, sys
sys.path.insert(0, sys.argv[1])
import app
from tests.support import events
from tests.support.lambda_context import LambdaContext
answer = app.lambda_handler(events.list_conversations(user=None), LambdaContext(function_name="list"))
watched = ("aws_xray_sdk", "httpx", "requests")
print(json.dumps({"status": answer["statusCode"], "loaded": sorted(m for m in watched if m in sys.modules)}))
"""


def test_a_traced_first_call_patches_no_http_client_the_function_never_imports() -> None:
    """PERF-1: with tracing on, the first call builds the Tracer, which patches the AWS clients only:
    X-Ray's patch_all would import httpx and requests into a function that never uses them."""
    # Given list_conversations imported with tracing on (Tracing: Active)
    # When it is invoked once (no identity: answered 401 before any DynamoDB call)
    outcome = json.loads(_run("list_conversations", _TRACED_INVOKE, str(REPO)))
    # Then the X-Ray SDK was loaded, and neither HTTP client
    assert outcome == {"status": 401, "loaded": ["aws_xray_sdk"]}


_ENCODINGS_LOADED = """
import json, sys
import app
from chat_core.engine.tokens import encodings
print(json.dumps(sorted(encodings._loaded)))
"""
#: The functions that count tokens for their requests with the conversation's model (PERF-2).
COUNTS_TOKENS = (
    "append_messages",
    "build_dialogue_prompt",
    "build_window",
    "chat_completions",
    "create_conversation",
    "edit_message",
    "openai_conversations",
    "post_message",
    "regenerate_message",
    "responses",
    "update_conversation",
)


@pytest.mark.parametrize("function", COUNTS_TOKENS)
def test_under_snapstart_a_counting_function_loads_its_models_tokenizer_at_init(function: str) -> None:
    """PERF-2: a SnapStart init of a function that counts loads LLM_MODEL's tokenizer into the snapshot."""
    # Given a fresh interpreter initialised by SnapStart, the deployment's model a Qwen one
    env = {"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start", "LLM_MODEL": "Qwen/Qwen3-32B"}
    # When the handler module is imported
    loaded = json.loads(_run(function, _ENCODINGS_LOADED, **env))
    # Then the model's own tokenizer is loaded, and no other
    assert loaded == ["qwen2"]


def test_on_demand_and_in_other_functions_nothing_loads_at_init() -> None:
    """PERF-1/PERF-2: an on-demand init loads no tokenizer; a SnapStart init of a function that never
    counts does not import the counting code."""
    # Given post_message on demand, and list_worlds under SnapStart
    # When each handler module is imported
    on_demand = json.loads(_run("post_message", _ENCODINGS_LOADED, LLM_MODEL="Qwen/Qwen3-32B"))
    snapped = _run(
        "list_worlds",
        "import json, sys, app; print(json.dumps('chat_core.engine.tokens' in sys.modules))",
        AWS_LAMBDA_INITIALIZATION_TYPE="snap-start",
    )
    # Then nothing is loaded
    assert on_demand == []
    assert json.loads(snapped) is False
