"""The floor of a function's cold start: what its libraries alone cost to import, with no code of ours.

For a few functions, the modules their import loads (in the order it loads them) are split into ours
(chat_core, app.py), the standard library's, and the libraries' (boto3, Powertools, PynamoDB, pydantic,
httpx, ...). A generated module imports the libraries' alone, in that order, from the same task root and
staged layer, under the same blocklist; a second one does the same with pydantic (and so whatever needs it)
made unimportable. Whatever code of ours does, a cold start of that function cannot cost less than its
libraries: this is what the goal is measured against.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import Section, progress

#: A function without a body (reads), one with a small body, and the post path.
FLOOR_FUNCTIONS = ("get_conversation", "set_budget", "post_message")
PYDANTIC = ("pydantic", "pydantic_core", "annotated_types", "typing_inspection")
# Every library the function loaded must import again; with pydantic blocked, those that need it cannot.
_IMPORT_EACH = """
import importlib
for name in {names!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        if not {tolerate!r}:
            raise
"""
_BLOCK_PYDANTIC = f"""
import sys
class _NoPydantic:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {PYDANTIC!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (left out of this floor)", name=name)
sys.meta_path.insert(0, _NoPydantic())
"""


def libraries(loaded: list[str]) -> list[str]:
    """The modules of `loaded` that belong to neither the standard library nor this project."""
    return [
        name
        for name in loaded
        if all(part.isidentifier() for part in name.split("."))
        and not name.startswith("_")
        and name.partition(".")[0] not in sys.stdlib_module_names
        and name != "app"
        and name.partition(".")[0] != "chat_core"
    ]


def measure(
    scratch: Path,
    targets: dict[str, Any],
    loaded: Callable[[str], list[str]],
    run: Callable[..., tuple[dict[str, Any], str]],
    baseline: Any,
    blocked: list[str],
    repeats: int,
) -> tuple[Section, list[list[str]]] | None:
    """The floor section and its summary row, or None when none of FLOOR_FUNCTIONS was measured.

    `loaded(name)`: the modules the function's measured import loaded, in the order it loaded them."""
    names = [n for n in FLOOR_FUNCTIONS if n in targets]
    if not names:
        return None
    progress(f"cold start: the floor (libraries alone) of {', '.join(names)}")
    floors: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for name in names:
        target = targets[name]
        found = libraries(loaded(name))
        counts[name] = len(found)
        for variant, preamble in (("libraries", ""), ("without pydantic", _BLOCK_PYDANTIC)):
            root = scratch / "floor" / f"{name}-{variant.replace(' ', '-')}"
            root.mkdir(parents=True)
            body = _IMPORT_EACH.format(names=found, tolerate=bool(preamble))
            (root / "floor_libraries.py").write_text(preamble + body)
            floors[f"{name} {variant}"] = target.__class__(
                f"{name}: {variant}", "floor_libraries", root, target.layer
            )
    samples: dict[str, list[float]] = {label: [] for label in ["", *names, *floors]}
    for _ in range(repeats):
        for label in samples:
            target = floors.get(label) or targets.get(label) or baseline
            info, _ = run(target, blocked)
            samples[label].append(info["cpu_seconds"])
    cpu = {label: statistics.median(values) for label, values in samples.items()}
    base = cpu[""]
    rows = []
    for name in names:
        libs, bare = cpu[f"{name} libraries"], cpu[f"{name} without pydantic"]
        rows.append(
            [
                name,
                f"{cpu[name] * 1000:.0f} ({cpu[name] / base:.2f}x)",
                str(counts[name]),
                f"{libs * 1000:.0f} ({libs / base:.2f}x)",
                f"{bare * 1000:.0f} ({bare / base:.2f}x)",
                f"{(cpu[name] - libs) * 1000:.0f} ({(cpu[name] - libs) / base:.2f}x)",
            ]
        )
    section: Section = {
        "title": "Cold start: the floor, a function's libraries imported alone (no chat_core, no app.py)",
        "columns": [
            "function",
            "its import: CPU ms (ratio to boto3)",
            "library modules it loads",
            "those libraries alone",
            "those libraries alone, pydantic unimportable",
            "what chat_core and app.py add",
        ],
        "rows": rows,
        "notes": (
            f"CPU medians of {repeats}, interleaved with a bare `import boto3` ({base * 1000:.0f} ms) and "
            "the functions' own imports, in the conditions of the table above. 'Libraries': the modules of "
            "the function's import that are neither the standard library's nor ours, imported one by one "
            "in the order the function loaded them (the standard library modules they need come with "
            "them). With pydantic unimportable, the modules that need it (Powertools' validating "
            "middlewares) are left out too. No code of ours runs in these rows, so no change to chat_core "
            "brings a function's import below them; only importing fewer libraries at init can."
        ),
    }
    post = "post_message" if "post_message" in names else names[-1]
    summary = [
        [
            f"cold start floor: {post}'s libraries imported alone (no chat_core), / bare `import boto3`",
            f"{cpu[f'{post} libraries'] / base:.2f}x; with pydantic unimportable "
            f"{cpu[f'{post} without pydantic'] / base:.2f}x",
            "(reference for <= 1.5)",
            "",
        ]
    ]
    return section, summary
