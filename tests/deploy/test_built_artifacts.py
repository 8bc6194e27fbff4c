"""What `make build ARCH=...` produces runs where Lambda runs it.

For each architecture the template's Architecture parameter allows, `sam build` (through `make build`,
which hands the same value to the template and to the layer's wheel selection) builds every function
and the layer. Every compiled extension in the layer must be for that architecture (a layer of the other
one builds cleanly and then fails every import). For this machine's architecture, each handler is
imported from the built artifacts in a fresh interpreter whose path holds only the function's folder and
the layer's `python/` folder, as Lambda's /var/task and /opt/python, without the dev venv.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURES = ("arm64", "x86_64")
ELF_MACHINE = {0xB7: "arm64", 0x3E: "x86_64"}  # e_machine: EM_AARCH64, EM_X86_64
NATIVE = {"aarch64": "arm64", "arm64": "arm64", "x86_64": "x86_64", "AMD64": "x86_64"}.get(platform.machine())

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=ARCHITECTURES)
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    architecture = str(request.param)
    target = tmp_path_factory.mktemp(f"build-{architecture}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH"))}
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
    return architecture, target


def _elf_machine(path: Path) -> str:
    header = path.read_bytes()[:20]
    assert header[:4] == b"\x7fELF", f"{path} is not an ELF file"
    return ELF_MACHINE.get(int.from_bytes(header[18:20], "little"), f"unknown 0x{header[18:20].hex()}")


def _functions(build_dir: Path) -> list[Path]:
    return sorted(p for p in build_dir.iterdir() if p.is_dir() and (p / "app.py").exists())


def test_every_compiled_extension_matches_the_architecture(built: tuple[str, Path]) -> None:
    """A layer built for an architecture carries only extensions for it (pydantic_core, tiktoken...)."""
    architecture, build_dir = built
    extensions = list((build_dir / "ChatCoreLayer" / "python").rglob("*.so"))
    assert extensions, "the layer holds no compiled extension: pydantic_core at least is expected"
    wrong = {
        str(p.relative_to(build_dir)): _elf_machine(p) for p in extensions if _elf_machine(p) != architecture
    }
    assert not wrong, f"built for {architecture} but holds: {wrong}"
    template = (build_dir / "template.yaml").read_text(encoding="utf-8")
    assert "Architecture" in template


IMPORT_CHECK = """
import importlib.util, json, sys
function_dir, layer_dir = sys.argv[1], sys.argv[2]
stdlib = [p for p in sys.path if p.endswith(("lib/python3.12", "lib-dynload", ".zip"))]
sys.path[:] = [function_dir, layer_dir, *stdlib]
spec = importlib.util.spec_from_file_location("app", function_dir + "/app.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
assert callable(module.lambda_handler)
print(json.dumps({"ok": True, "chat_core": sys.modules["chat_core"].__file__}))
"""


def test_every_handler_imports_from_the_built_artifacts(built: tuple[str, Path]) -> None:
    """Each function's handler imports with only its folder and the layer on the path (this machine's
    architecture; the other one is checked by its extensions above)."""
    architecture, build_dir = built
    if architecture != NATIVE:
        pytest.skip(f"{architecture} code does not run on this {platform.machine()} machine")
    layer = build_dir / "ChatCoreLayer" / "python"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TABLE_NAME": "chat-history",
        "POWERTOOLS_SERVICE_NAME": "chat-history",
        "POWERTOOLS_METRICS_NAMESPACE": "ChatHistory",
    }
    functions = _functions(build_dir)
    assert len(functions) >= 10
    for function in functions:
        # -I: no user site, no PYTHON* variables; -S: no site-packages at all (the dev venv is not there).
        result = subprocess.run(
            [sys.executable, "-I", "-S", "-c", IMPORT_CHECK, str(function), str(layer)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, f"{function.name} does not import:\n{result.stderr[-2000:]}"
        assert json.loads(result.stdout.strip().splitlines()[-1])["chat_core"].startswith(str(layer))
