"""PERF-1: three Powertools packages whose `__init__` imports far more than a handler uses initialize on
first use of a name they export, not when one of their submodules is imported.

- `aws_lambda_powertools.event_handler` imports every resolver it has (AppSync's with asyncio, Bedrock
  agents', VPC Lattice's, ...) where a handler needs `api_gateway` alone;
- its `openapi` imports the OpenAPI merge tool (ast, fnmatch), which only builds documents;
- `aws_lambda_powertools.utilities.data_classes` imports all of its 40-odd event classes, where the
  resolver needs the API Gateway proxy events and a worker its SQS records.

`install()` (run by `chat_core/__init__`, importing nothing) puts a finder first on `sys.meta_path`. When
one of these packages is imported, the finder hands Python the package's own spec with a loader that
does not run the `__init__`; the module gets a PEP 562 `__getattr__` instead:

- a name the `__init__` takes from a submodule (`from .sqs_event import SQSEvent`, read from its source
  on first use) imports that submodule alone and returns the name, so the package's own submodules,
  which import names from the package, never wait on its `__init__`;
- `from package import submodule` imports the submodule;
- any other name runs the package's `__init__` into the same module, and every caller sees the package
  it expects.

Where the package was imported before chat_core, nothing changes. lazy_loader (Scientific Python's
SPEC 1) builds on the same `__getattr__`. Measured by `make bench` (bench_coldstart).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import threading
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

DEFERRED = frozenset(
    {
        "aws_lambda_powertools.event_handler",
        "aws_lambda_powertools.event_handler.openapi",
        "aws_lambda_powertools.utilities.data_classes",
    }
)

_lock = threading.RLock()


def install() -> None:
    """Defer, from now on, the `__init__` of the packages of DEFERRED not imported yet."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


class _Finder:
    """Finds a deferred package as the other finders would, with a loader that defers its `__init__`."""

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if name not in DEFERRED:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and spec.submodule_search_locations is not None:
                    spec.loader = cast("Loader", _DeferredInit(spec.loader))
                return spec
        return None


class _DeferredInit:
    """A package's loader that gives the module a `__getattr__` instead of running its `__init__`."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def __getattr__(self, name: str) -> Any:  # anything else a loader offers (resources, source)
        return getattr(self.loader, name)

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self.loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        module.__getattr__ = _FirstUse(module, self.loader)  # type: ignore[method-assign]


class _FirstUse:
    """A deferred package's `__getattr__`: serves a name from its submodule, or runs the `__init__`."""

    def __init__(self, package: ModuleType, loader: Any) -> None:
        self.package, self.loader = package, loader
        self.exports: dict[str, str] | None = None

    def __call__(self, attribute: str) -> Any:
        package, name = self.package, self.package.__name__
        if attribute.startswith("__") and attribute != "__all__":
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        with _lock:
            if self.exports is None:
                self.exports = submodule_exports(package)
        submodule = self.exports.get(attribute)
        if submodule:
            value = getattr(importlib.import_module(submodule), attribute)
            setattr(package, attribute, value)  # as the `__init__` binds it: found directly from now on
            return value
        if importlib.util.find_spec(f"{name}.{attribute}") is not None:
            return importlib.import_module(f"{name}.{attribute}")  # `from package import submodule`
        with _lock:
            if package.__dict__.get("__getattr__") is self:
                del package.__dict__["__getattr__"]
                package.__loader__ = self.loader
                if package.__spec__ is not None:
                    package.__spec__.loader = self.loader
                try:
                    self.loader.exec_module(package)  # the package's own __init__, into this module
                except BaseException:
                    package.__getattr__ = self  # type: ignore[method-assign]
                    raise
        return getattr(package, attribute)


def submodule_exports(package: ModuleType) -> dict[str, str]:
    """The names a package's `__init__` imports from its own submodules: name -> the submodule's name
    (`from .sqs_event import SQSEvent`, or the absolute spelling), read from its source."""
    origin = getattr(package.__spec__, "origin", None)
    if not origin or not origin.endswith(".py"):
        return {}
    try:
        with open(origin, encoding="utf-8") as source:
            tree = ast.parse(source.read(), origin)
    except (OSError, SyntaxError, ValueError):
        return {}
    name = package.__name__
    found: dict[str, str] = {}
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or node.module is None:
            continue
        if node.level == 1:
            module = f"{name}.{node.module}"
        elif node.level == 0 and node.module.startswith(f"{name}."):
            module = node.module
        else:
            continue
        for alias in node.names:
            found[alias.asname or alias.name] = module
    return found
