"""PERF-1: three Powertools packages whose `__init__` imports far more than a handler uses initialize on
first use of a name they export, not when one of their submodules is imported.

- `aws_lambda_powertools.event_handler` imports every resolver it has (AppSync with asyncio, Bedrock
  agents, VPC Lattice, ...) where a handler needs `api_gateway` alone;
- its `openapi` imports the OpenAPI merge tool (ast, fnmatch), which only builds documents;
- `aws_lambda_powertools.utilities.data_classes` imports all of its 40-odd event classes, where the
  resolver needs the proxy events of `api_gateway` only.

Importing a submodule (`aws_lambda_powertools.event_handler.api_gateway`) then loads that submodule and
what it imports, as with any package whose `__init__` is empty. A name of the package that is not a
submodule (`from aws_lambda_powertools.event_handler import AppSyncResolver`) runs the package's own
`__init__` first, into the same module object, so every caller sees the package it expects; the names
`api_gateway` takes from `data_classes` come from their own submodules (a test checks they are the
objects the package exports). This is PEP 562's module `__getattr__`, which lazy_loader (Scientific
Python's SPEC 1) builds on. `chat_core/__init__` installs it before any of chat_core imports Powertools'
event handler; where the package is already imported (a process that imported it first) nothing changes.
Measured by `make bench` (bench_coldstart): about 30 ms of CPU off every HTTP function's import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any

#: The names `event_handler.api_gateway` imports from `data_classes`, and the submodule defining each.
DATA_CLASS_MODULES: Mapping[str, str] = {
    "ALBEvent": "alb_event",
    "APIGatewayProxyEvent": "api_gateway_proxy_event",
    "APIGatewayProxyEventV2": "api_gateway_proxy_event",
    "BedrockAgentEvent": "bedrock_agent_event",
    "LambdaFunctionUrlEvent": "lambda_function_url_event",
    "VPCLatticeEvent": "vpc_lattice",
    "VPCLatticeEventV2": "vpc_lattice",
}
#: The names of `event_handler` that come from the submodules a handler imports anyway (its `types`, which
#: the validating middlewares import, takes `ApiGatewayResolver` from the package).
EVENT_HANDLER_MODULES: Mapping[str, str] = {
    "ALBResolver": "api_gateway",
    "APIGatewayHttpResolver": "api_gateway",
    "APIGatewayRestResolver": "api_gateway",
    "ApiGatewayResolver": "api_gateway",
    "CORSConfig": "api_gateway",
    "Response": "api_gateway",
    "DependencyResolutionError": "depends",
    "Depends": "depends",
    "Request": "request",
}
#: Each package deferred, with the names it serves from their submodules without running its `__init__`.
DEFERRED: Mapping[str, Mapping[str, str]] = {
    "aws_lambda_powertools.event_handler": EVENT_HANDLER_MODULES,
    "aws_lambda_powertools.event_handler.openapi": {},
    "aws_lambda_powertools.utilities.data_classes": DATA_CLASS_MODULES,
}

_lock = threading.RLock()


def install() -> None:
    """Defer the packages of DEFERRED that no one has imported yet."""
    for name, names in DEFERRED.items():
        if name not in sys.modules:
            defer(name, names)


def defer(name: str, names: Mapping[str, str]) -> ModuleType:
    """Put package `name` into sys.modules without running its `__init__` (run on first use of a name)."""
    spec = importlib.util.find_spec(name)  # imports the parent packages, as an import would
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not a package that can be deferred", name=name)
    package = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def __getattr__(attribute: str) -> Any:
        if attribute.startswith("__") and attribute != "__all__":
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        if attribute in names:
            return getattr(importlib.import_module(f"{name}.{names[attribute]}"), attribute)
        if importlib.util.find_spec(f"{name}.{attribute}") is not None:
            return importlib.import_module(f"{name}.{attribute}")  # `from package import submodule`
        with _lock:
            if package.__dict__.get("__getattr__") is __getattr__:
                del package.__dict__["__getattr__"]
                try:
                    loader.exec_module(package)  # the package's own __init__, into this module
                except BaseException:
                    package.__getattr__ = __getattr__  # type: ignore[method-assign]
                    raise
        return getattr(package, attribute)

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, package)
    return package
