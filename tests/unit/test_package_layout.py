"""The layout of `chat_core` stays as the README's architecture section draws it.

Packages import one way (http -> chat/dialogue -> engine/store/llm), there is no import cycle, and no
module hides an import inside a function to keep another module's cold start light: the layout does
that. A module that grows past about 500 lines is a sign it holds two things.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "layers" / "chat_core" / "chat_core"

#: What each package may import, at run time and under `if TYPE_CHECKING:` alike (an import for types only
#: is still an arrow). `config`, `runtime`, `settings`, `errors` and `observability` are shared by all and
#: import nothing of chat_core's packages: `runtime` (OPS-3) holds what the packages build, each asking it
#: by a key with its own builder, so it needs none of them.
SHARED = {"config", "runtime", "settings", "errors", "observability", "startup"}
MAY_IMPORT: dict[str, set[str]] = {
    "engine": {"engine"},
    "store": {"store", "engine"},
    "llm": {"llm", "engine"},
    "chat": {"chat", "engine", "store", "llm"},
    "dialogue": {"dialogue", "engine", "store"},
    # PRV: a user's data as a whole reads and writes through both domains' stores and models.
    "privacy": {"privacy", "chat", "dialogue", "engine", "store"},
    # The edge builds the defaults it passes in (the model provider a post is given, for one).
    "http": {"http", "chat", "dialogue", "privacy", "engine", "store", "llm"},
    "config": set(),
    "runtime": set(),
    "settings": set(),
    "errors": set(),
    "observability": set(),
    "startup": set(),
}
#: The domain packages: they take commands built at the edge and records handed up by the store.
DOMAIN = {"chat", "dialogue", "privacy"}
#: What the domain never imports besides `http`: the store's PynamoDB item classes stay in `store`.
DOMAIN_MAY_NOT_IMPORT = {"store.items", "store.dialogue_items"}
#: Of `chat`, only the post (and what only it uses) and the summarizer may call the model.
#: (`chat.recording` caps and records what the model answered, so it knows the model client's records.)
MODEL_CALLERS = {"chat.post", "chat.answer", "chat.recording", "chat.summaries", "chat.facts"}
#: Imports deliberately left inside a function, each for a reason other than another module's weight:
#: tiktoken loads with the encoding files on the first exact count (TOK-3), sentencepiece on the first count
#: of a Mistral SentencePiece tokenizer (TOK-10); Powertools' SSM/Secrets
#: parameters are loaded only when an API key is read from a parameter, which most deployments skip.
LAZY_ALLOWED = {
    ("tiktoken",),
    ("sentencepiece",),
    ("aws_lambda_powertools.utilities.parameters",),
    ("botocore.config",),
    # Lambda's SnapStart hooks library: part of the managed runtime, importable nowhere else.
    ("snapshot_restore_py",),
    # MEM-48: the embeddings provider's HTTP client, loaded only where semantic recall is on with a
    # provider (the window routes import `llm.embeddings`, and most deployments never turn it on).
    ("chat_core.llm.embeddings_http",),
    # PERF-1: Powertools' validating middlewares (pydantic), built when the first route that takes a query,
    # header or body parameter registers; a function whose routes take path parameters only never loads them.
    ("aws_lambda_powertools.event_handler.middlewares.openapi_validation",),
}
#: MEM-48..51: semantic recall embeds messages on the stream and the current message on the window path.
MODEL_CALLERS |= {"chat.recall.embedding", "chat.recall.hybrid"}
MAX_LINES = 500
#: Modules that are longer and read better whole, each with the reason. This list only shrinks: an entry
#: may go down or away, never up, and none is added (`test_the_allowances_only_shrink`).
LONG_MODULES = {
    # One selection engine: policies, the selection pass and its stats share private helpers.
    "engine.window": 667,
    # The context manager's one class and the strategies it chooses between.
    "engine.context": 536,
    # The structured prompt's two budget passes and its rendering are one algorithm.
    "dialogue.prompt": 640,
    # The conversation repository: every read and write of the conversation partition (the post's
    # Query, its two transactions, reservations, pins, listing, delete); its transactions share
    # condition builders and the contention handling.
    "store.conversations": 801,
    # The model client: one attempt loop (retries, time budget, failure records) for whole and streamed
    # answers; the stream's event reading and folding live in llm.streaming.
    "llm.client": 539,
    # The dialogue repository: ids, start-or-get, append, the participant index and the merged reads.
    "store.dialogues": 651,
}


#: The allowances as they stood when they were last lowered to the modules' lengths (issue 29): the
#: ceiling `LONG_MODULES` stays under.
FROZEN_ALLOWANCES = {
    "engine.window": 667,
    "engine.context": 536,
    "dialogue.prompt": 640,
    "store.conversations": 801,
    "llm.client": 539,
    "http.api": 547,
    "store.dialogues": 651,
}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module, *, type_checking: bool = True) -> set[str]:
    """chat_core modules imported at module level (those under `if TYPE_CHECKING:` with `type_checking`)."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node) and not type_checking:
                continue
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chat_core"):
                base = node.module.removeprefix("chat_core").lstrip(".")
                for alias in node.names:
                    # `from chat_core.chat import post` names a module; `from x import name` names its module.
                    candidate = f"{base}.{alias.name}".lstrip(".")
                    found.add(candidate if _exists(candidate) else base)
            elif isinstance(node, ast.Import):
                found.update(
                    a.name.removeprefix("chat_core.") for a in node.names if a.name.startswith("chat_core.")
                )
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    found.discard("")
    return found


def _exists(dotted: str) -> bool:
    path = PACKAGE.joinpath(*dotted.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _graph(*, type_checking: bool = True) -> dict[str, set[str]]:
    """Every module's chat_core imports, TYPE_CHECKING ones included unless told otherwise."""
    return {
        name: _imports(ast.parse(path.read_text()), type_checking=type_checking)
        for name, path in _modules()
        if name
    }


def _top(module: str) -> str:
    return module.split(".")[0]


def test_packages_import_only_downwards() -> None:
    """Architecture (README): http -> chat/dialogue -> engine/store/llm; engine imports no other package.
    A `TYPE_CHECKING` import counts: a type the domain borrows from the edge is still an arrow upwards."""
    # Given every chat_core module's imports, those for types only included
    graph = _graph()
    # When each import is checked against what the importer's package may import
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if _top(target) not in MAY_IMPORT.get(_top(module), set()) | SHARED
    )
    # Then none points upwards or sideways
    assert wrong == []


def test_only_the_post_and_the_summarizer_reach_the_model() -> None:
    """Architecture (README): of the chat operations, only the post path and the summarizer import `llm`."""
    # Given the chat package's run-time imports (a type of the model client's is no call to it)
    graph = _graph(type_checking=False)
    # When the modules importing the model client are listed
    callers = {
        m for m, targets in graph.items() if m.startswith("chat.") and any(_top(t) == "llm" for t in targets)
    }
    # Then they are the post path and the summarizer
    assert callers <= MODEL_CALLERS


def test_chat_core_has_no_import_cycle() -> None:
    """Architecture (README): no two modules import each other, directly or around a loop, not even for
    types only."""
    # Given the module-level import graph, `TYPE_CHECKING` imports included
    graph = _graph()
    # When it is walked depth first
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def walk(node: str, trail: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
            if state.get(target) == 1:
                cycles.append([*trail[trail.index(target) :], target])
            elif target not in state:
                walk(target, [*trail, target])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    # Then there is no cycle
    assert cycles == []


def test_the_domain_knows_neither_the_edge_nor_the_items() -> None:
    """Architecture (README): `chat` and `dialogue` take plain commands and get frozen records: they
    import nothing of `http` (its request models) and no PynamoDB item of `store.items` or
    `store.dialogue_items`, not even for types."""
    # Given the domain packages' imports, those for types only included
    graph = _graph()
    # When the imports of the edge or of the item classes are listed
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _top(module) in DOMAIN
        for target in targets
        if _top(target) == "http" or target in DOMAIN_MAY_NOT_IMPORT
    )
    # Then there are none
    assert wrong == []


@pytest.mark.parametrize(("name", "path"), list(_modules()), ids=lambda v: str(v))
def test_no_import_hides_inside_a_function(name: str, path: Path) -> None:
    """Architecture (README): cold-start lightness comes from the layout, not from function-local imports."""
    # Given a chat_core module
    tree = ast.parse(path.read_text())
    # When imports inside functions are collected
    hidden = {
        (sub.module if isinstance(sub, ast.ImportFrom) else sub.names[0].name,)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node)
        if isinstance(sub, (ast.Import, ast.ImportFrom))
    }
    # Then there are none but the documented lazy loads of optional third-party code
    assert hidden <= LAZY_ALLOWED, f"{name}: {sorted(hidden - LAZY_ALLOWED)}"


@pytest.mark.parametrize(("name", "path"), list(_modules()), ids=lambda v: str(v))
def test_modules_stay_small_enough_to_read(name: str, path: Path) -> None:
    """Architecture (README): one module holds one thing; about 500 lines is where that stops being true."""
    # Given a chat_core module
    # When its lines are counted
    lines = len(path.read_text().splitlines())
    # Then it is within the limit
    assert lines <= LONG_MODULES.get(name, MAX_LINES), f"{name} has {lines} lines"


def test_the_allowances_only_shrink() -> None:
    """Architecture (README): a long module's allowance may go down or away, never up, and none is added."""
    # Given the allowances and the ceiling they were frozen at
    # When each allowance is compared with its frozen value
    risen = {
        name: lines for name, lines in LONG_MODULES.items() if lines > FROZEN_ALLOWANCES.get(name, MAX_LINES)
    }
    # Then none rose and none is new
    assert risen == {}
    assert MAX_LINES <= 500


def test_no_two_modules_share_a_name() -> None:
    """Architecture (README): a module's own name says which one it is (not `usage` in two packages)."""
    # Given every chat_core module's last name (packages' __init__ aside)
    names: dict[str, list[str]] = {}
    for dotted, path in _modules():
        if path.name != "__init__.py":
            names.setdefault(dotted.rsplit(".", 1)[-1], []).append(dotted)
    # When names held by more than one module are listed
    shared = {name: modules for name, modules in names.items() if len(modules) > 1}
    # Then there are none
    assert shared == {}


@pytest.mark.parametrize(("name", "path"), list(_modules()), ids=lambda v: str(v))
def test_no_assert_guards_a_runtime_invariant(name: str, path: Path) -> None:
    """API-5: an invariant the code relies on raises a domain error (a 500 with the request id, or the
    caller's 404), never an `assert`, which `python -O` removes so the code would go on with a None."""
    # Given a chat_core module
    tree = ast.parse(path.read_text())
    # When its assert statements are listed
    asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    # Then there are none
    assert asserts == [], f"{name}: assert at lines {asserts}"
