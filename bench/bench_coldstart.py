"""Cold start: import time of each Lambda handler module in a fresh interpreter, as a ratio to boto3's."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import os
import re
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from bench import Section, progress, verdict

REPO = Path(__file__).resolve().parent.parent
FUNCTIONS = REPO / "functions"
LAYER_REQUIREMENTS = REPO / "layers" / "chat_core" / "requirements.txt"
PROJECT_DISTRIBUTION = "chat-history-service"  # the editable install that provides chat_core
REPEATS = 7
# The heavy pieces under the handlers, each timed on top of an already imported boto3 (which every
# handler pays anyway), to size what a change would save. They share dependencies: savings do not add up.
PIECES = (
    ("aws_xray_sdk.core", "X-Ray SDK: Powertools Tracer resolves it even with tracing disabled"),
    ("pydantic", "pydantic (request/response models)"),
    ("chat_core.schemas", "chat_core.schemas: pydantic plus building the service's models"),
    ("httpx", "httpx (chat_core.provider's HTTP client)"),
    ("aws_lambda_powertools.event_handler", "Powertools event handler (routing, validation)"),
    ("aws_lambda_powertools.utilities.idempotency", "Powertools idempotency"),
    ("pynamodb.models", "PynamoDB"),
    ("chat_core.conversations", "chat_core.conversations with everything it imports"),
)
GOAL = 2.0
TOP_PACKAGES = 12
IMPORTTIME_RUNS = 3
FIXES = (
    "(1) the X-Ray SDK: Powertools' Tracer resolves its default provider `aws_xray_sdk.core.xray_recorder` "
    "when constructed, so chat_core.observability's module-level `Tracer()` pays for it even with "
    "tracing disabled; building the Tracer on first use, or relying on Lambda's own tracing (Tracing: "
    "Active traces the invocation without the SDK, without the DynamoDB/HTTP subsegments), removes it; "
    "(2) chat_core.schemas builds every pydantic model at import: `defer_build=True` moves each model's "
    "build to its first use, so a handler pays only for the models it validates; "
    "(3) chat_core.conversations imports every feature (provider/httpx, summaries, turn log, tool "
    "messages, resilience) for every conversation handler: importing them where used keeps the read-only "
    "handlers (list, detail, events, window) light."
)

# Run in the child: block what the layer would not contain, time the import, report what got loaded.
_CHILD = r"""
import json, sys, time
blocked = frozenset(json.loads(sys.argv[2]))

class _NotInLayer:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the Lambda layer)", name=name)
        return None

sys.meta_path.insert(0, _NotInLayer())
for name in filter(None, sys.argv[3].split(",")):
    __import__(name)  # untimed: what the measured import finds already loaded
sys.stderr.write("--bench-import-start--\n")
sys.stderr.flush()
cpu_started, started = time.process_time(), time.perf_counter()
__import__(sys.argv[1])
elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
tokens = sys.modules.get("chat_core.tokens")
print(json.dumps({
    "seconds": elapsed,
    "cpu_seconds": cpu,
    "modules": len(sys.modules),
    "tiktoken_imported": "tiktoken" in sys.modules,
    "encodings_loaded": sorted(getattr(tokens, "_loaded", {}) or {}) if tokens else [],
    "tokens_imported": tokens is not None,
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


def layer_blocklist() -> list[str]:
    """Top-level modules installed in .venv that the Lambda would not have (dev, test and bench tools).

    The Lambda has the runtime's boto3/botocore and the layer's requirements (with their dependencies);
    anything else in the dev venv (rich, click, moto, langchain, pytest...) must not leak into the figure:
    httpx, for one, imports its command-line interface when rich and click happen to be importable.
    """
    wanted = [
        line.split("#")[0].strip()
        for line in LAYER_REQUIREMENTS.read_text(encoding="utf-8").splitlines()
        if line.split("#")[0].strip()
    ]
    allowed = _closure([*wanted, "boto3", PROJECT_DISTRIBUTION])
    allowed_modules: set[str] = set()
    other_modules: set[str] = set()
    for dist in metadata.distributions():
        name = _normalize(dist.metadata["Name"] or "")
        (allowed_modules if name in allowed else other_modules).update(_top_levels(dist))
    blocked = other_modules - allowed_modules - set(sys.stdlib_module_names) - {"_distutils_hack"}
    return sorted(blocked)


def handlers() -> list[str]:
    return sorted(p.parent.name for p in FUNCTIONS.glob("*/app.py"))


def _lambda_env(function: str, **extra: str) -> dict[str, str]:
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


def _run(
    module: str,
    cwd: Path,
    env: dict[str, str],
    blocked: list[str],
    importtime: bool = False,
    preload: tuple[str, ...] = (),
) -> tuple[dict[str, Any], str]:
    command = [sys.executable, *(["-X", "importtime"] if importtime else []), "-c", _CHILD, module]
    command += [json.dumps(blocked), ",".join(preload)]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"importing {module} in {cwd.name} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


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
    blocked = layer_blocklist()
    names = handlers()
    targets: list[tuple[str, str, Path, dict[str, str]]] = [
        ("import boto3", "boto3", REPO, _lambda_env("baseline"))
    ]
    targets += [(name, "app", FUNCTIONS / name, _lambda_env(name)) for name in names]
    variant = "post_message, tracing disabled (POWERTOOLS_TRACE_DISABLED=true)"
    if "post_message" in names:
        targets.append(
            (
                variant,
                "app",
                FUNCTIONS / "post_message",
                _lambda_env("post_message", POWERTOOLS_TRACE_DISABLED="true"),
            )
        )
        # The same import with the whole dev venv importable, to show why the layer's view matters.
        targets.append(
            (
                "post_message, dev venv (nothing blocked)",
                "app",
                FUNCTIONS / "post_message",
                _lambda_env("post_message"),
            )
        )
    unblocked = {"post_message, dev venv (nothing blocked)"}
    # CPU time of the importing process is the primary figure: other processes on a shared machine
    # stretch wall time, not the CPU the import needs. Wall time is shown beside it.
    samples: dict[str, list[float]] = {label: [] for label, *_ in targets}
    wall: dict[str, list[float]] = {label: [] for label, *_ in targets}
    facts: dict[str, dict[str, Any]] = {}
    for repeat in range(REPEATS):
        progress(f"cold start: round {repeat + 1}/{REPEATS} over {len(targets)} fresh interpreters")
        for label, module, cwd, env in targets:  # interleaved: drift on a shared machine hits all alike
            info, _ = _run(module, cwd, env, [] if label in unblocked else blocked)
            samples[label].append(info["cpu_seconds"])
            wall[label].append(info["seconds"])
            facts[label] = info
    progress(f"cold start: -X importtime per handler ({IMPORTTIME_RUNS} runs each)")
    runs: dict[str, list[Counter[str]]] = {label: [] for label, *_ in targets}
    for _ in range(IMPORTTIME_RUNS):
        for label, module, cwd, env in targets:
            _, stderr = _run(module, cwd, env, [] if label in unblocked else blocked, importtime=True)
            runs[label].append(self_time_by_package(stderr))
    breakdown = {label: _median_counter(found) for label, found in runs.items()}

    progress("cold start: heavy pieces on top of boto3")
    piece_env = _lambda_env("post_message")
    piece_samples: dict[str, list[float]] = {module: [] for module, _ in PIECES}
    for _ in range(REPEATS):
        for module, _label in PIECES:
            info, _ = _run(module, FUNCTIONS / "post_message", piece_env, blocked, preload=("boto3",))
            piece_samples[module].append(info["cpu_seconds"])

    baseline = statistics.median(samples["import boto3"])
    rows: list[list[Any]] = []
    for label, *_ in targets:
        median = statistics.median(samples[label])
        ratio = median / baseline
        info = facts[label]
        is_baseline = label == "import boto3"
        rows.append(
            [
                label,
                f"{median * 1000:.0f}",
                f"{statistics.median(wall[label]) * 1000:.0f}",
                "" if is_baseline else f"{(median - baseline) * 1000:.0f}",
                f"{ratio:.2f}",
                f"{statistics.median(wall[label]) / statistics.median(wall['import boto3']):.2f}",
                "" if is_baseline else verdict(ratio <= GOAL),
                info["modules"],
                "" if is_baseline else ("yes" if info["tiktoken_imported"] else "no"),
                "" if is_baseline else (", ".join(info["encodings_loaded"]) or "none"),
                _top(breakdown[label], 4),
            ]
        )
    heaviest = (
        "post_message"
        if "post_message" in breakdown
        else max(names, key=lambda n: statistics.median(samples[n]))
    )
    totals = breakdown[heaviest]
    whole = sum(totals.values()) or 1
    package_rows = [
        [name, f"{value / 1000:.1f}", f"{value / whole:.0%}"]
        for name, value in totals.most_common(TOP_PACKAGES)
    ]
    package_rows.append(["(all)", f"{whole / 1000:.1f}", "100%"])
    post = statistics.median(samples.get("post_message", samples[names[0]]))
    piece_rows = [
        [
            f"`{module}`",
            label,
            f"{statistics.median(piece_samples[module]) * 1000:.0f}",
            f"{statistics.median(piece_samples[module]) / post:.0%}",
        ]
        for module, label in PIECES
    ]
    encodings_loaded = sorted({e for label in facts for e in facts[label]["encodings_loaded"]})
    notes = (
        f"Each figure: a fresh `{Path(sys.executable).name}` process per run (cwd = the function's folder, "
        f"as Lambda's task root), CPU time (process_time) and wall time around `import app` only "
        f"(interpreter start excluded); medians of {REPEATS}, runs interleaved across targets. The ratio "
        "uses CPU time: on a shared machine other processes stretch wall time, not the work the import does; "
        "on a Lambda vCPU the two are close. Environment as Lambda gives it: template.yaml Globals, "
        "`AWS_LAMBDA_FUNCTION_NAME` set and tracing active (Tracing: Active), nothing of the shell's. Only "
        "the runtime's boto3/botocore and the layer's requirements (with their dependencies) are importable: "
        f"{len(blocked)} top-level modules of the dev venv are blocked (rich, click, moto, langchain, ...), "
        "since e.g. httpx imports its CLI when rich and click are present. Goal: ratio <= "
        f"{GOAL} to a bare `import boto3` in the same conditions. tiktoken encodings loaded at import: "
        f"{', '.join(encodings_loaded) or 'none'} (TOK-3: they load on first count). 'top' = share of "
        f"`-X importtime` self time by top-level package (median of {IMPORTTIME_RUNS} extra runs each)."
    )
    ratios = {n: statistics.median(samples[n]) / baseline for n in names}
    wall_base = statistics.median(wall["import boto3"])
    wall_ratios = {n: statistics.median(wall[n]) / wall_base for n in names}

    def spread(values: dict[str, float]) -> str:
        text = f"{min(values.values()):.2f}x to {max(values.values()):.2f}x"
        return text + (f" (post_message {values['post_message']:.2f}x)" if "post_message" in values else "")

    summary = [
        [
            "cold start: handler import / bare `import boto3`",
            f"CPU: {spread(ratios)}; wall: {spread(wall_ratios)}; over {len(names)} handlers; "
            f"boto3 alone {baseline * 1000:.0f} ms CPU",
            f"<= {GOAL}",
            verdict(max(ratios.values()) <= GOAL),
        ],
        [
            "cold start: tiktoken encodings loaded at import",
            ", ".join(encodings_loaded) or "none",
            "none (lazy, TOK-3)",
            verdict(not encodings_loaded),
        ],
    ]
    return [
        {
            "title": "Cold start: handler module import vs a bare `import boto3` (fresh interpreter per run)",
            "summary": summary,
            "columns": [
                "handler",
                "CPU median (ms)",
                "wall median (ms)",
                "CPU over boto3 (ms)",
                "ratio to boto3 (CPU)",
                "ratio (wall)",
                f"<= {GOAL}",
                "modules loaded",
                "tiktoken imported",
                "encodings loaded",
                "top (self time share)",
            ],
            "rows": rows,
            "notes": notes,
        },
        {
            "title": f"Cold start: what dominates `{heaviest}` (-X importtime self time by package)",
            "columns": ["package", "self time (ms, under -X importtime)", "share"],
            "rows": package_rows,
            "notes": "-X importtime adds its own overhead, so read the shares, not the absolute times.",
        },
        {
            "title": "Cold start: the heavy pieces, each imported on top of boto3 (fresh interpreter each)",
            "columns": ["module", "what", "CPU median (ms)", "share of post_message's import"],
            "rows": piece_rows,
            "notes": (
                f"CPU time, median of {REPEATS}; `import boto3` done first and not timed (every "
                "handler pays it and it is the baseline). Pieces share dependencies (pydantic under the "
                "event handler and the schemas, botocore under the X-Ray SDK), so the savings of removing "
                f"several do not add up. To meet <= {GOAL}x a handler must import in <= "
                f"{GOAL * baseline * 1000:.0f} ms of CPU here, i.e. "
                f"{(post - GOAL * baseline) * 1000:.0f} ms less than post_message does now. "
                f"What would get there: {FIXES}"
            ),
        },
    ]
