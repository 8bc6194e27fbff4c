"""Cold start: import time of each Lambda handler module in a fresh interpreter, as a ratio to boto3's."""

from __future__ import annotations

import compileall
import importlib.metadata as metadata
import json
import os
import py_compile
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from bench import Section, coldstart_floor, progress, verdict

REPO = Path(__file__).resolve().parent.parent
FUNCTIONS = REPO / "functions"
LAYER = REPO / "layers" / "chat_core"
LAYER_REQUIREMENTS = LAYER / "requirements.txt"
PROJECT_DISTRIBUTION = "chat-history-service"  # the editable install that provides chat_core
REPEATS = 7
# What a handler may pull in, each timed on top of an already imported boto3 (which every handler pays
# anyway), to size what it costs and what a change would save. They share dependencies: savings do not
# add up. chat_core comes from the staged layer, with its bytecode.
PIECES = (
    ("pydantic", "pydantic (request and response models)"),
    (
        "chat_core.http.schemas",
        "chat_core.http.schemas: pydantic plus the service's models, each built on first use (defer_build)",
    ),
    (
        "aws_lambda_powertools.event_handler",
        "Powertools event handler, the whole package (an HTTP handler loads its API Gateway resolver "
        "alone: chat_core.lazy_packages)",
    ),
    ("pynamodb.models", "PynamoDB: every handler that touches the table"),
    (
        "chat_core.http.api",
        "chat_core.http.api: the handlers' resolver, error mapping and Powertools logger/metrics",
    ),
    (
        "chat_core.chat.reads",
        "chat_core.chat.reads: what the read-only handlers import (no model client, no idempotency)",
    ),
    (
        "chat_core.chat.post",
        "chat_core.chat.post: the post path (model client, window engine, Powertools idempotency)",
    ),
    (
        "chat_core.engine.tokens",
        "chat_core.engine.tokens: the estimator (tiktoken and its encodings load on first use)",
    ),
    ("httpx", "httpx: imported with the routes of the functions that call the model, by no other"),
    (
        "aws_lambda_powertools.utilities.idempotency",
        "Powertools idempotency: imported with post_message's routes only",
    ),
    (
        "aws_xray_sdk.core",
        "X-Ray SDK: imported by the first traced invocation (LazyTracer), or by a SnapStart init",
    ),
)
GOAL = 1.5
TOP_PACKAGES = 12
IMPORTTIME_RUNS = 3
DONE = (
    "Already done for this goal: (1) chat_core.observability's LazyTracer builds Powertools' Tracer, and so "
    "imports the X-Ray SDK and patches botocore/httpx, on the first invocation instead of at import; "
    "(2) the request/response models use `defer_build`, so a handler builds only the models it validates; "
    "(3) chat_core.chat holds one module per operation: the read-only handlers import chat.reads, delete or "
    "pins, which never import the post path (llm/httpx, window, summaries, Powertools idempotency); "
    "post_message imports it at init; (4) `make build` ships the layer compiled "
    "(layers/chat_core/Makefile, unchecked-hash bytecode), since Lambda's read-only /opt never keeps a .pyc; "
    "(5) the API functions run under SnapStart (template parameter SnapStart, docs/deploy.md): their init, "
    "the Tracer included, runs when a version is published, and a cold start resumes from the snapshot "
    "and pays only the first call (the 'SnapStart init' row's first call); (6) the Tracer patches botocore "
    "and PynamoDB, and httpx/requests only where the function imported them (X-Ray's patch_all imported "
    "both into every function's first call); (7) the queue ingestion checks its SQS messages by hand "
    "(no pydantic in its cold start); (8) Powertools' validation (pydantic) runs per route: a route of path "
    "parameters and `chat_core.http.query.Query` parameters (read by hand, as pydantic would) never loads "
    "it, so the HTTP functions without a request body import no pydantic, at init or on a request; "
    "(9) chat_core.lazy_packages defers the `__init__` of Powertools' event_handler, its openapi and its "
    "data_classes to the first use of a name they export, so an HTTP function loads the API Gateway "
    "resolver and its two proxy events, not every resolver (AppSync's with asyncio, Bedrock's, ...) and "
    "every event class: 77 modules fewer in each. "
    "The routes are not deferred to "
    "the first invocation: on demand that moves the same CPU onto the first request (measured: post_message "
    "24 ms import + 638 ms first call against 590 + 58), and off the request path whenever Lambda "
    "initializes an environment ahead of a request."
)

# Run in the child: block what the layer would not contain, count the modules compiled from source, time
# the import, report what got loaded.
_CHILD = r"""
import json, sys, time
import importlib._bootstrap_external as _external
blocked = frozenset(json.loads(sys.argv[2]))

class _NotInLayer:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the Lambda layer)", name=name)
        return None

sys.meta_path.insert(0, _NotInLayer())
compiled = []
_source_to_code = _external.SourceLoader.source_to_code

def _counted(self, data, path, *args, **kwargs):  # only called when no usable .pyc exists
    compiled.append(path)
    return _source_to_code(self, data, path, *args, **kwargs)

_external.SourceLoader.source_to_code = _counted
for name in filter(None, sys.argv[3].split(",")):
    __import__(name)  # untimed: what the measured import finds already loaded
compiled.clear()
sys.stderr.write("--bench-import-start--\n")
sys.stderr.flush()
cpu_started, started = time.process_time(), time.perf_counter()
__import__(sys.argv[1])
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
imported = list(sys.modules)  # what the import loaded, in order (before any first call)
tokens = sys.modules.get("chat_core.engine.tokens")
encodings = sys.modules.get("chat_core.engine.tokens.encodings")
first_call_cpu = None
status = None
if len(sys.argv) > 4 and sys.argv[4]:
    class _Context:
        function_name = "bench"
        function_version = "$LATEST"
        memory_limit_in_mb = 512
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
        aws_request_id = "bench-request"
        log_group_name = log_stream_name = "bench"

        def get_remaining_time_in_millis(self):
            return 29000

    with open(sys.argv[4], encoding="utf-8") as file:
        event = json.load(file)
    handler = getattr(sys.modules[sys.argv[1]], "lambda_handler")
    call_started = time.process_time()
    answer = handler(event, _Context())
    first_call_cpu = time.process_time() - call_started
    status = answer.get("statusCode") if isinstance(answer, dict) else None
print(json.dumps({
    "first_call_cpu_seconds": first_call_cpu,
    "first_call_status": status,
    "seconds": elapsed,
    "cpu_seconds": cpu,
    "modules": len(sys.modules),
    "module_names": imported,
    "tiktoken_imported": "tiktoken" in sys.modules,
    "encodings_loaded": sorted(getattr(encodings, "_loaded", {}) or {}) if encodings else [],
    "tokens_imported": tokens is not None,
    "chat_core_file": getattr(sys.modules.get("chat_core"), "__file__", None),
    "compiled_from_source": compiled,
}))
"""


def _closure(requirements: list[str]) -> set[str]:
    """Distribution names (normalized) the requirements pull in, extras and markers honoured."""
    seen: set[str] = set()
    pending = [Requirement(r) for r in requirements]
    while pending:
        req = pending.pop()
        name = _normalize(req.name)
        key = name + "[" + ",".join(sorted(req.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        seen.add(name)
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for raw in requires:
            sub = Requirement(raw)
            if sub.marker is None:
                pending.append(sub)
                continue
            environments = [{"extra": extra} for extra in req.extras] or [{"extra": ""}]
            if any(sub.marker.evaluate(env) for env in environments):
                pending.append(sub)
    return {s for s in seen if "[" not in s}


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _top_levels(dist: metadata.Distribution) -> set[str]:
    text = dist.read_text("top_level.txt")
    if text:
        return {line.strip() for line in text.splitlines() if line.strip()}
    names = set()
    for file in dist.files or ():
        first = file.parts[0] if file.parts else ""
        if (
            not first
            or first.endswith((".dist-info", ".egg-info", ".data"))
            or first in ("..", "__pycache__")
        ):
            continue
        if first.endswith(".py"):
            names.add(first[:-3])
        elif first.endswith((".so", ".pyd")):
            names.add(first.split(".")[0])
        elif "." not in first:
            names.add(first)
    return names


def layer_requirements() -> list[str]:
    """layers/chat_core/requirements.txt without comments: what the layer build installs."""
    return [
        line.split("#")[0].strip()
        for line in LAYER_REQUIREMENTS.read_text(encoding="utf-8").splitlines()
        if line.split("#")[0].strip()
    ]


def layer_blocklist() -> list[str]:
    """Top-level modules installed in .venv that the Lambda would not have (dev, test and bench tools).

    The Lambda has the runtime's boto3/botocore and the layer's requirements (with their dependencies);
    anything else in the dev venv (rich, click, moto, langchain, pytest...) must not leak into the figure:
    httpx, for one, imports its command-line interface when rich and click happen to be importable.
    """
    allowed = _closure([*layer_requirements(), "boto3", PROJECT_DISTRIBUTION])
    allowed_modules: set[str] = set()
    other_modules: set[str] = set()
    for dist in metadata.distributions():
        name = _normalize(dist.metadata["Name"] or "")
        (allowed_modules if name in allowed else other_modules).update(_top_levels(dist))
    blocked = other_modules - allowed_modules - set(sys.stdlib_module_names) - {"_distutils_hack"}
    return sorted(blocked)


def handlers() -> list[str]:
    """Every function of template.yaml, by folder: the table the template is generated from
    (functions/routes.py), so a new function is measured without being named here."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from functions.routes import FUNCTIONS as TABLE

    return sorted(function.folder for function in TABLE)


#: Functions whose first invocation is timed too (an anonymous request from events/<name>.json, answered
#: 401 by the route after the routes are imported, the resolver built and the request validated; no
#: DynamoDB call): one per kind of route, from the heaviest (the post path) to the lightest.
FIRST_CALL = ("post_message", "get_conversation", "create_conversation", "list_models")
EVENTS = REPO / "events"


def anonymous_event(name: str, scratch: Path) -> Path:
    """events/<name>.json without the caller's identity, written to `scratch`: the route answers 401
    before any call to DynamoDB, so the first call's figure is the function's own start-up work."""
    event = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    event.get("requestContext", {}).pop("authorizer", None)
    path = scratch / f"{name}-anonymous.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return path


# -- the staged copies: what Lambda's /opt/python and /var/task would hold ------------------------------

_NOT_SHIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", "tests")


def stage_chat_core(root: Path, *, compiled: bool) -> Path:
    """chat_core copied into `root` as the layer ships it, compiled as layers/chat_core/Makefile does.

    compiled=True: `compileall --invalidation-mode unchecked-hash`, paths recorded as /opt/python: Python
    loads the bytecode without looking at the source's mtime, as in the read-only layer. compiled=False:
    sources only, so every import compiles (the child runs with PYTHONDONTWRITEBYTECODE=1 and writes none).
    """
    shutil.copytree(LAYER / "chat_core", root / "chat_core", ignore=_NOT_SHIPPED)
    if compiled:
        ok = compileall.compile_dir(
            root / "chat_core",
            quiet=1,
            stripdir=str(root),
            prependdir="/opt/python",
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        if not ok:
            raise RuntimeError(f"compileall failed on {root / 'chat_core'}")
    return root


def stage_layer_without_bytecode(root: Path) -> Path:
    """The whole layer as SAM's python3.12 build method made it: dependencies and chat_core, no .pyc.

    The dependencies are the dev venv's copies of the layer's requirements (same pins), their files
    listed by each distribution's RECORD, without its __pycache__ and console scripts.
    """
    wanted = _closure(layer_requirements())
    for dist in metadata.distributions():
        if _normalize(dist.metadata["Name"] or "") not in wanted:
            continue
        for file in dist.files or ():
            if ".." in file.parts or "__pycache__" in file.parts or file.suffix in (".pyc", ".pyo"):
                continue
            source = Path(str(dist.locate_file(file)))
            if source.is_file():
                (root / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, root / file)
    return stage_chat_core(root, compiled=False)


def stage_task_roots(root: Path, names: list[str]) -> dict[str, Path]:
    """Each function's folder without caches, as SAM ships it to /var/task (sources: app.py compiles)."""
    roots = {
        name: Path(shutil.copytree(FUNCTIONS / name, root / name, ignore=_NOT_SHIPPED)) for name in names
    }
    roots[""] = root / "_boto3_only"
    roots[""].mkdir()
    return roots


def _lambda_env(function: str, task_root: Path, **extra: str) -> dict[str, str]:
    """What Lambda sets (template.yaml Globals, tracing active); nothing of this shell's environment."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_LAMBDA_FUNCTION_NAME": function,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
        # Powertools treats a process without LAMBDA_TASK_ROOT as "not in Lambda" (tracing off).
        "LAMBDA_TASK_ROOT": str(task_root),
        "TABLE_NAME": "chat-history",
        "POWERTOOLS_SERVICE_NAME": "chat-history",
        "POWERTOOLS_METRICS_NAMESPACE": "ChatHistory",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "LLM_MODEL": "gpt-4o-mini",
        "RETENTION_DAYS": "30",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update(extra)
    return env


@dataclass(frozen=True)
class Target:
    """One import to time: a module, imported from a task root with a staged layer on PYTHONPATH."""

    label: str
    module: str
    task_root: Path
    layer: Path | None  # the staged /opt/python, or None (a bare boto3 function has no layer)
    compiled: bool = True  # whether that layer's chat_core ships bytecode
    blocked: bool = True  # whether the dev venv's extra packages are hidden
    env: dict[str, str] = field(default_factory=dict)
    first_call: Path | None = None  # an event to invoke the handler with once, after the import

    def environment(self) -> dict[str, str]:
        env = _lambda_env(self.task_root.name, self.task_root, **self.env)
        if self.layer is not None:
            env["PYTHONPATH"] = str(self.layer)  # ahead of site-packages, as /opt/python is in Lambda
        return env


def _run(
    target: Target,
    blocked: list[str],
    importtime: bool = False,
    preload: tuple[str, ...] = (),
    module: str | None = None,
) -> tuple[dict[str, Any], str]:
    name = module or target.module
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", _CHILD, name]
    command += [json.dumps(blocked if target.blocked else []), ",".join(preload)]
    if target.first_call is not None and module is None and not importtime:
        command.append(str(target.first_call))
    done = subprocess.run(
        command,
        cwd=target.task_root,
        env=target.environment(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"importing {name} for {target.label!r} failed:\n{done.stderr[-2000:]}")
    info: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    _check_layer(target, info)
    return info, done.stderr


def _check_layer(target: Target, info: dict[str, Any]) -> None:
    """The figure is only worth something if chat_core came from the staged layer, compiled or not as said."""
    where = info["chat_core_file"]
    if where is None or target.layer is None:
        return
    package = target.layer / "chat_core"
    if not Path(where).is_relative_to(package):
        raise RuntimeError(f"{target.label}: chat_core was imported from {where}, not from {package}")
    from_source = [p for p in info["compiled_from_source"] if Path(p).is_relative_to(package)]
    if target.compiled and from_source:
        raise RuntimeError(f"{target.label}: the layer's bytecode was not used for {from_source[:3]}")
    if not target.compiled and not from_source:
        raise RuntimeError(f"{target.label}: chat_core was expected to compile from source, and did not")


def self_time_by_package(stderr: str) -> Counter[str]:
    """-X importtime's self time (µs) summed per top-level package, for imports after the marker."""
    _, _, after = stderr.partition("--bench-import-start--\n")
    totals: Counter[str] = Counter()
    for line in after.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        fields = line.split(":", 1)[1].split("|")
        if len(fields) != 3:
            continue
        totals[fields[2].strip().partition(".")[0]] += int(fields[0])
    return totals


def _median_counter(runs: list[Counter[str]]) -> Counter[str]:
    """Per package, the median of its self time over the runs (one slow run does not move it)."""
    packages = {name for run in runs for name in run}
    return Counter({name: int(statistics.median(run.get(name, 0) for run in runs)) for name in packages})


def _top(totals: Counter[str], n: int) -> str:
    whole = sum(totals.values()) or 1
    return ", ".join(f"{name} {value / whole:.0%}" for name, value in totals.most_common(n))


def run() -> list[Section]:
    with tempfile.TemporaryDirectory(prefix="bench-coldstart-") as scratch:
        return _measure(Path(scratch))


def _measure(scratch: Path) -> list[Section]:
    blocked = layer_blocklist()
    names = handlers()
    progress("cold start: staging the layer (chat_core compiled as `make build` does, and as source)")
    compiled_layer = stage_chat_core(scratch / "layer-bytecode", compiled=True)
    source_layer = stage_chat_core(scratch / "layer-source", compiled=False)
    bare_layer = stage_layer_without_bytecode(scratch / "layer-no-bytecode")
    tasks = stage_task_roots(scratch / "task", names)

    baseline = Target("import boto3", "boto3", tasks[""], None)
    compiled = {
        name: Target(
            name,
            "app",
            tasks[name],
            compiled_layer,
            first_call=anonymous_event(name, scratch) if name in FIRST_CALL else None,
        )
        for name in names
    }
    source = {
        name: Target(f"{name} (source)", "app", tasks[name], source_layer, compiled=False) for name in names
    }
    extras: list[Target] = []
    if "post_message" in names:
        post = tasks["post_message"]
        # The init SnapStart snapshots (AWS_LAMBDA_INITIALIZATION_TYPE=snap-start): the routes and the
        # Tracer (chat_core.startup); its first call is what a request pays after a restore.
        snap = {"AWS_LAMBDA_INITIALIZATION_TYPE": "snap-start"}
        extras = [
            Target(
                "post_message, SnapStart init (routes and Tracer, then snapshotted)",
                "app",
                post,
                compiled_layer,
                env=snap,
                first_call=anonymous_event("post_message", scratch),
            ),
            Target(
                "post_message, SnapStart init, tracing disabled (POWERTOOLS_TRACE_DISABLED=true)",
                "app",
                post,
                compiled_layer,
                env={**snap, "POWERTOOLS_TRACE_DISABLED": "true"},
            ),
            # The same import with the whole dev venv importable, to show why the layer's view matters.
            Target(
                "post_message, SnapStart init, dev venv (nothing blocked)",
                "app",
                post,
                compiled_layer,
                blocked=False,
                env=snap,
            ),
            # The layer as it was before `BuildMethod: makefile`: dependencies and chat_core all source.
            Target(
                "post_message, SnapStart init, no bytecode anywhere in the layer (SAM's python3.12 build "
                "method)",
                "app",
                post,
                bare_layer,
                compiled=False,
                env=snap,
            ),
        ]
    targets = [baseline, *compiled.values(), *source.values(), *extras]
    # CPU time of the importing process is the primary figure: other processes on a shared machine
    # stretch wall time, not the CPU the import needs. Wall time is shown beside it.
    samples: dict[str, list[float]] = {t.label: [] for t in targets}
    wall: dict[str, list[float]] = {t.label: [] for t in targets}
    first_calls: dict[str, list[float]] = {t.label: [] for t in targets if t.first_call is not None}
    facts: dict[str, dict[str, Any]] = {}
    for repeat in range(REPEATS):
        progress(f"cold start: round {repeat + 1}/{REPEATS} over {len(targets)} fresh interpreters")
        for target in targets:  # interleaved: drift on a shared machine hits all alike
            info, _ = _run(target, blocked)
            samples[target.label].append(info["cpu_seconds"])
            if target.first_call is not None:
                if info["first_call_status"] != 401:
                    raise RuntimeError(
                        f"{target.label}: the anonymous first call got {info['first_call_status']}"
                    )
                first_calls[target.label].append(info["first_call_cpu_seconds"])
            wall[target.label].append(info["seconds"])
            facts[target.label] = info
    leftovers = sorted(str(p) for p in source_layer.rglob("__pycache__"))
    if leftovers:
        raise RuntimeError(f"the source-only layer got bytecode written into it: {leftovers[:3]}")

    progress(f"cold start: -X importtime per handler, layer with bytecode ({IMPORTTIME_RUNS} runs each)")
    profiled = [baseline, *compiled.values(), *extras]
    runs: dict[str, list[Counter[str]]] = {t.label: [] for t in profiled}
    for _ in range(IMPORTTIME_RUNS):
        for target in profiled:
            _, stderr = _run(target, blocked, importtime=True)
            runs[target.label].append(self_time_by_package(stderr))
    breakdown = {label: _median_counter(found) for label, found in runs.items()}

    progress("cold start: pieces on top of boto3")
    piece_target = compiled.get("post_message") or next(iter(compiled.values()))
    piece_samples: dict[str, list[float]] = {module: [] for module, _ in PIECES}
    for _ in range(REPEATS):
        for module, _label in PIECES:
            info, _ = _run(piece_target, blocked, preload=("boto3",), module=module)
            piece_samples[module].append(info["cpu_seconds"])

    floor = coldstart_floor.measure(
        scratch, compiled, lambda name: facts[name]["module_names"], _run, baseline, blocked, REPEATS
    )

    def cpu(label: str) -> float:
        return statistics.median(samples[label])

    def wall_ms(label: str) -> float:
        return statistics.median(wall[label])

    base = cpu(baseline.label)
    wall_base = wall_ms(baseline.label)

    def compiled_count(label: str) -> int:
        return len(facts[label]["compiled_from_source"])

    rows: list[list[Any]] = [
        [
            baseline.label,
            f"{base * 1000:.0f}",
            f"{wall_base * 1000:.0f}",
            "",
            "1.00",
            "1.00",
            "",
            "",
            "",
            "",
            "",
            "",
            facts[baseline.label]["modules"],
            "",
            "",
            _top(breakdown[baseline.label], 4),
        ],
    ]

    def first_call(label: str) -> str:
        found = first_calls.get(label)
        return f"{statistics.median(found) * 1000:.0f}" if found else ""

    def import_and_first_call(label: str) -> str:
        found = first_calls.get(label)
        return f"{(cpu(label) + statistics.median(found)) * 1000:.0f}" if found else ""

    for target in [*compiled.values(), *extras]:
        label, info = target.label, facts[target.label]
        twin = source.get(label)
        rows.append(
            [
                label,
                f"{cpu(label) * 1000:.0f}",
                f"{wall_ms(label) * 1000:.0f}",
                f"{(cpu(label) - base) * 1000:.0f}",
                f"{cpu(label) / base:.2f}",
                f"{wall_ms(label) / wall_base:.2f}",
                # The SnapStart rows are an init that runs when a version is published, not a cold start.
                verdict(cpu(label) / base <= GOAL) if label in compiled else "(init, in the snapshot)",
                first_call(label),
                import_and_first_call(label),
                f"{cpu(twin.label) * 1000:.0f}" if twin else "",
                f"{cpu(twin.label) / base:.2f}" if twin else "",
                f"{compiled_count(label)} / {compiled_count(twin.label)}" if twin else compiled_count(label),
                info["modules"],
                "yes" if info["tiktoken_imported"] else "no",
                ", ".join(info["encodings_loaded"]) or "none",
                _top(breakdown[label], 4),
            ]
        )
    heaviest = max(names, key=lambda n: cpu(n))
    # The heaviest init there is: post_message's under SnapStart (its routes and the Tracer).
    profiled_label = extras[0].label if extras else heaviest
    totals = breakdown[profiled_label]
    whole = sum(totals.values()) or 1
    package_rows = [
        [name, f"{value / 1000:.1f}", f"{value / whole:.0%}"]
        for name, value in totals.most_common(TOP_PACKAGES)
    ]
    package_rows.append(["(all)", f"{whole / 1000:.1f}", "100%"])
    piece_rows = [
        [
            f"`{module}`",
            label,
            f"{statistics.median(piece_samples[module]) * 1000:.0f}",
            f"{statistics.median(piece_samples[module]) / cpu(profiled_label):.0%}",
        ]
        for module, label in PIECES
    ]
    # On demand nothing may load at import (TOK-3); a SnapStart init loads LLM_MODEL's on purpose (PERF-2).
    on_demand = {t.label for t in targets if "AWS_LAMBDA_INITIALIZATION_TYPE" not in t.env}
    encodings_loaded = sorted(
        {e for label in on_demand & facts.keys() for e in facts[label]["encodings_loaded"]}
    )
    compiled_app_only = all(compiled_count(n) <= 1 for n in names)
    notes = (
        f"Each figure: a fresh `{Path(sys.executable).name}` process per run, CPU time (process_time) and "
        f"wall time around `import app` only (interpreter start excluded); medians of {REPEATS}, runs "
        "interleaved across targets. What is imported is what Lambda loads. The task root (cwd and "
        "`LAMBDA_TASK_ROOT`) is a copy of the function's folder without caches, as SAM ships it (so app.py "
        "itself compiles at init, as in Lambda). chat_core comes from a staged copy of the layer placed on "
        "PYTHONPATH ahead of site-packages, as /opt/python is: compiled exactly as "
        "layers/chat_core/Makefile compiles it for `make build` (compileall, unchecked-hash: the bytecode is "
        "used without checking the source), or, in the 'chat_core from source' columns, with no bytecode at "
        "all, which is what every cold start paid before the layer shipped bytecode: Lambda's /opt is "
        "read-only, so no .pyc is ever written there. The layer's dependencies come from the dev venv, "
        "compiled, as the built layer ships them; the row 'no bytecode anywhere in the layer' stages them as "
        "sources too (the layer as SAM's python3.12 build method made it). 'compiled at import' counts the "
        "modules Python compiled from source during the import (layer with bytecode / chat_core from "
        "source); with the layer's bytecode it is app.py alone"
        + ("" if compiled_app_only else " (NOT the case in this run)")
        + ". The ratio uses CPU time: on a shared machine other processes stretch wall time, not the work "
        "the import does; on a Lambda vCPU the two are close. Environment as Lambda gives it: template.yaml "
        "Globals, `AWS_LAMBDA_FUNCTION_NAME` and `LAMBDA_TASK_ROOT` set, tracing active (Tracing: Active), "
        "nothing of the shell's. Only the runtime's boto3/botocore and the layer's requirements (with their "
        f"dependencies) are importable: {len(blocked)} top-level modules of the dev venv are blocked (rich, "
        "click, moto, langchain, ...), since e.g. httpx imports its CLI when rich and click are present. "
        f"Goal: ratio <= {GOAL} to a bare `import boto3` in the same conditions. tiktoken encodings loaded "
        f"at import on demand: {', '.join(encodings_loaded) or 'none'} (TOK-3: they load on first count). "
        "'top' = "
        f"share of `-X importtime` self time by top-level package (median of {IMPORTTIME_RUNS} extra runs "
        "each, layer with bytecode). The 'SnapStart init' rows set "
        "AWS_LAMBDA_INITIALIZATION_TYPE=snap-start, so the init also builds the Tracer "
        "(chat_core.startup) and loads LLM_MODEL's tokenizer (PERF-2), as the snapshot keeps them. "
        "'first call "
        "CPU': the CPU of the first invocation after the import, for "
        + ", ".join(FIRST_CALL)
        + ": events/<function>.json without the caller's identity, answered 401 by the route once the "
        "routes are imported, the resolver built, the request validated and the Tracer built (tracing "
        "active on demand; built at init under SnapStart), before any DynamoDB call. 'import + first call' "
        "is what an on-demand cold start costs before its first answer; under SnapStart a cold start is the "
        "restore (Lambda's, not measured here) plus the SnapStart row's first call."
    )
    ratios = {n: cpu(n) / base for n in names}
    source_ratios = {n: cpu(source[n].label) / base for n in names}
    wall_ratios = {n: wall_ms(n) / wall_base for n in names}

    def spread(values: dict[str, float]) -> str:
        text = f"{min(values.values()):.2f}x to {max(values.values()):.2f}x"
        return text + (f" (post_message {values['post_message']:.2f}x)" if "post_message" in values else "")

    summary = [
        [
            "cold start: handler import / bare `import boto3` (layer built by `make build`: bytecode)",
            f"CPU: {spread(ratios)}; wall: {spread(wall_ratios)}; over {len(names)} handlers; "
            f"boto3 alone {base * 1000:.0f} ms CPU",
            f"<= {GOAL}",
            verdict(max(ratios.values()) <= GOAL),
        ],
        [
            "cold start: the same with chat_core compiled from source at every cold start (no .pyc)",
            f"CPU: {spread(source_ratios)}",
            "(reference)",
            "",
        ],
    ]
    bare_label = next((t.label for t in extras if t.layer == bare_layer), None)
    if bare_label:
        summary.append(
            [
                "cold start: post_message's SnapStart init with no bytecode anywhere in the layer (the "
                "previous build)",
                f"CPU: {cpu(bare_label) / base:.2f}x ({cpu(bare_label) * 1000:.0f} ms; "
                f"{compiled_count(bare_label)} modules compiled at import)",
                "(reference)",
                "",
            ]
        )
    summary.append(
        [
            "cold start: tiktoken encodings loaded at import (on demand)",
            ", ".join(encodings_loaded) or "none",
            "none (lazy, TOK-3)",
            verdict(not encodings_loaded),
        ]
    )
    if "post_message" in first_calls and extras and extras[0].label in first_calls:
        snapped = extras[0].label
        summary.append(
            [
                "cold start under SnapStart (the API functions): post_message's first call after a restore, "
                "CPU / bare `import boto3`",
                f"{float(first_call(snapped)) / (base * 1000):.2f}x ({first_call(snapped)} ms; the init, "
                f"{cpu(snapped) * 1000:.0f} ms, runs when a version is published; on demand: import + first "
                f"call {import_and_first_call('post_message')} ms)",
                f"<= {GOAL} (plus Lambda's restore)",
                verdict(float(first_call(snapped)) / (base * 1000) <= GOAL),
            ]
        )
    budget = GOAL * base
    gap = cpu(heaviest) - budget
    if floor:
        summary += floor[1]
    sections: list[Section] = [
        {
            "title": "Cold start: handler module import vs a bare `import boto3` (fresh interpreter per run)",
            "summary": summary,
            "columns": [
                "handler (layer with bytecode)",
                "CPU median (ms)",
                "wall median (ms)",
                "CPU over boto3 (ms)",
                "ratio to boto3 (CPU)",
                "ratio (wall)",
                f"<= {GOAL}",
                "first call CPU (ms)",
                "import + first call CPU (ms)",
                "chat_core from source: CPU (ms)",
                "chat_core from source: ratio (CPU)",
                "compiled at import (bytecode / source)",
                "modules loaded",
                "tiktoken imported",
                "encodings loaded",
                "top (self time share)",
            ],
            "rows": rows,
            "notes": notes,
        },
        {
            "title": f"Cold start: what dominates `{profiled_label}` (-X importtime)",
            "columns": ["package", "self time (ms, under -X importtime)", "share"],
            "rows": package_rows,
            "notes": "-X importtime adds its own overhead, so read the shares, not the absolute times.",
        },
        {
            "title": "Cold start: the pieces, each imported on top of boto3 (fresh interpreter each)",
            "columns": ["module", "what", "CPU median (ms)", f"share of `{profiled_label}`"],
            "rows": piece_rows,
            "notes": (
                f"CPU time, median of {REPEATS}; `import boto3` done first and not timed (every handler pays "
                "it and it is the baseline); chat_core from the staged layer with bytecode. Pieces share "
                "dependencies (pydantic under the event handler and the schemas, botocore under PynamoDB and "
                "the X-Ray SDK), so their costs do not add up. Each row's 'what' says who imports it at "
                f"init. Goal <= {GOAL}x: a handler must import in <= {budget * 1000:.0f} ms "
                f"of CPU here; {heaviest}, the heaviest, is "
                + (f"{gap * 1000:.0f} ms over it. " if gap > 0 else f"{-gap * 1000:.0f} ms under it. ")
                + DONE
            ),
        },
    ]
    return [*sections, floor[0]] if floor else sections
