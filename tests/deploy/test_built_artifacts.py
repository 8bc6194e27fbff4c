"""What `make build ARCH=...` produces runs where Lambda runs it.

For each architecture the template's Architecture parameter allows, `make build` (which hands the same
value to the template and to the layer's wheel selection) builds every function and the layer into a
temporary folder. Every compiled file in the build must be for that architecture: a layer of the other
one builds cleanly and then fails every import. For this machine's architecture, each handler is also
imported from the built artifacts in an interpreter whose path holds only the function's folder and
the layer's `python/` folder (Lambda's /var/task and /opt/python) and the standard library: no dev venv,
no site-packages, no PYTHON* variables (a child forked per function from one that loaded the shared
libraries from the layer). Selected with `-m build` (`make test-build`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_local.template import load_template, load_yaml

from scripts.template_operations import HOOK

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURES = ("arm64", "x86_64")
ELF_MACHINE = {0xB7: "arm64", 0x3E: "x86_64"}  # e_machine: EM_AARCH64, EM_X86_64
NATIVE = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "x86_64", "AMD64": "x86_64"}.get(platform.machine())
REGION = "us-east-1"

pytestmark = [pytest.mark.build, pytest.mark.slow]


@pytest.fixture(scope="module", params=ARCHITECTURES)
def built(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    architecture = str(request.param)
    target = tmp_path_factory.mktemp(f"build-{architecture}")
    # Nothing of the caller's venv or make (`make test-build ARCH=...`) leaks into this build.
    leaks = ("VIRTUAL_ENV", "PYTHON", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "LAYER_ARCH", "ARCH", "BUILD_DIR")
    env = {k: v for k, v in os.environ.items() if not k.startswith(leaks)}
    result = subprocess.run(
        ["make", "--no-print-directory", "build", f"ARCH={architecture}", f"BUILD_DIR={target}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert result.returncode == 0, (
        f"make build ARCH={architecture} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    yield architecture, target
    shutil.rmtree(target, ignore_errors=True)  # about 80 MB per architecture


def _layer_python(build_dir: Path) -> Path:
    """The built layer's python/ folder, found from the built template (what Lambda mounts at /opt)."""
    resources = load_yaml(build_dir / "template.yaml")["Resources"]
    [layer] = [r for r in resources.values() if r["Type"] == "AWS::Serverless::LayerVersion"]
    return build_dir / str(layer["Properties"]["ContentUri"]) / "python"


def _elf_machine(path: Path) -> str | None:
    with path.open("rb") as handle:
        header = handle.read(20)
    if header[:4] != b"\x7fELF":
        return None
    return ELF_MACHINE.get(int.from_bytes(header[18:20], "little"), f"unknown 0x{header[18:20].hex()}")


def test_the_build_holds_only_compiled_code_for_its_architecture(built: tuple[str, Path]) -> None:
    """A build for an architecture carries compiled extensions (pydantic_core, tiktoken...) for it alone,
    and its template can only be deployed with that architecture."""
    architecture, build_dir = built
    machines = {
        str(p.relative_to(build_dir)): machine
        for p in build_dir.rglob("*")
        if p.is_file() and not p.is_symlink() and (machine := _elf_machine(p))
    }
    layer = str(_layer_python(build_dir).relative_to(build_dir))
    assert any(p.startswith(layer) for p in machines), "the layer holds no compiled extension at all"
    wrong = {p: m for p, m in machines.items() if m != architecture}
    assert not wrong, f"built for {architecture}, but these compiled files are not: {wrong}"

    template = load_yaml(build_dir / "template.yaml")
    parameter = template["Parameters"]["Architecture"]
    assert (parameter["Default"], parameter["AllowedValues"]) == (architecture, [architecture]), (
        "make build must pin the built template's Architecture to what it built"
    )
    assert template["Globals"]["Function"]["Architectures"] == [{"Ref": "Architecture"}]
    [layer_resource] = [
        r for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::LayerVersion"
    ]
    assert layer_resource["Properties"]["CompatibleArchitectures"] == [{"Ref": "Architecture"}]
    assert layer_resource["Metadata"]["BuildArchitecture"] == architecture


# Lambda's bootstrap, reduced: sys.path is the task folder, the layer and the standard library; the
# handler's module is imported by name and its function looked up. Every module loaded must come from
# those folders (the stdlib entries are the interpreter's own, with -I -S: no site-packages at all).
# One interpreter imports the libraries every function shares (from the layer alone, before any
# function's folder is on the path), then forks a child per function, which takes the function's
# environment and imports its handler: a fresh interpreter a function cost a second of CPU, mostly in
# importing the same libraries 50 times. The children report one JSON line each on stdout.
IMPORT_CHECK = """
import importlib, json, os, sys, time, traceback
layer_dir = sys.argv[1]
functions = json.load(sys.stdin)
stdlib = [p for p in sys.path if p]
sys.path[:] = [layer_dir, *stdlib]
for shared in SHARED:
    importlib.import_module(shared)

def allowed(path, function_dir):
    if path.startswith((function_dir + "/", layer_dir + "/")):
        return True
    return path.startswith(tuple(p + "/" for p in stdlib)) and "/site-packages/" not in path

def check(function_dir, handler, env):
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    sys.path[:] = [function_dir, layer_dir, *stdlib]
    module_name, _, attribute = handler.rpartition(".")
    module = importlib.import_module(module_name.replace("/", "."))
    if not callable(getattr(module, attribute, None)):
        return f"{handler}: {attribute} is not a callable of {module.__file__}"
    elsewhere = sorted(
        f"{name} ({m.__file__})" for name, m in list(sys.modules.items())
        if getattr(m, "__file__", None) and not allowed(m.__file__, function_dir)
    )
    if elsewhere:
        return "loaded from outside the function, the layer and the stdlib: " + ", ".join(elsewhere)
    return None

for function in functions:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            error = check(function["dir"], function["handler"], function["env"])
            answer = {"error": error, "traceback": ""}
        except BaseException as exc:
            answer = {"error": repr(exc), "traceback": traceback.format_exc()}
        answer["chat_core"] = getattr(sys.modules.get("chat_core"), "__file__", None)
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        answer = json.loads(pipe.read() or b'{"error": "the child died", "traceback": ""}')
    os.waitpid(pid, 0)
    print(json.dumps({"id": function["id"], **answer}), flush=True)
""".replace(
    "SHARED",
    repr(
        (
            "pydantic",
            "botocore.session",
            "botocore.client",
            "pynamodb.models",
            "httpx",
            # Powertools' resolver, logger and metrics, which chat_core's HTTP and job modules import: a
            # child then costs its handler and chat_core, about half of what it cost with these.
            "aws_lambda_powertools.event_handler.api_gateway",
            "aws_lambda_powertools.logging",
            "aws_lambda_powertools.metrics",
        )
    ),
)


def test_every_handler_imports_from_the_built_artifacts(built: tuple[str, Path]) -> None:
    """Each function's handler imports in a clean interpreter with only its folder and the layer on the
    path, with the environment the template gives it (this machine's architecture; the other one is
    checked by its compiled files above, since its extensions cannot load here)."""
    architecture, build_dir = built
    if architecture != NATIVE:
        pytest.skip(f"{architecture} extensions do not load on this {platform.machine()} machine")
    # The base interpreter, not the venv's: nothing of the dev venv is reachable even by accident.
    python = getattr(sys, "_base_executable", sys.executable)
    layer = _layer_python(build_dir)
    functions = load_template(build_dir / "template.yaml", region=REGION, table_name="chat-history").functions
    assert len(functions) >= 10, f"only {sorted(functions)} in the built template"
    failures = []
    base = {
        "PATH": "/usr/bin:/bin",
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    }
    requests = [
        {
            "id": spec.logical_id,
            "dir": str(spec.code_uri),
            "handler": spec.handler,
            "env": {
                **base,
                "AWS_LAMBDA_FUNCTION_NAME": spec.logical_id,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
                "LAMBDA_TASK_ROOT": str(spec.code_uri),
                "_HANDLER": spec.handler,
                **spec.environment,
            },
        }
        for spec in functions.values()
    ]
    result = subprocess.run(
        [python, "-I", "-S", "-c", IMPORT_CHECK, str(layer)],
        input=json.dumps(requests),
        env=base,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    answers = {a["id"]: a for a in map(json.loads, result.stdout.splitlines())}
    assert set(answers) == set(functions), (
        f"no answer for {set(functions) - set(answers)}:\n{result.stderr[-3000:]}"
    )
    for spec in functions.values():
        answer = answers[spec.logical_id]
        if answer["error"] is not None:
            failures.append(
                (f"{spec.logical_id} ({spec.handler}): {answer['error']}", answer["traceback"][-2000:])
            )
            continue
        origin = answer["chat_core"]
        if origin is None and spec.logical_id == HOOK:
            # The pre-traffic hook (OPS-7) runs the smoke test with boto3 alone, no chat_core.
            continue
        if origin is None or not origin.startswith(str(layer)):
            failures.append((f"{spec.logical_id}: chat_core came from {origin}, not the layer", ""))
    assert not failures, (
        f"{len(failures)} of {len(functions)} handlers do not import from the {architecture} build "
        f"({build_dir}):\n"
        + "\n".join(summary for summary, _ in failures)
        + "\n\nfirst traceback:\n"
        + failures[0][1]
    )
