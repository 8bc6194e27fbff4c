"""moto's UpdateExpressions parsed once per text and checked without rebuilding lookups per node.

Installed with `moto_fidelity` (the local server and the tests). Answers, errors and written items are
moto's own; only repeated work goes:

1. An UpdateItem parses its UpdateExpression twice (the handler checks its names and values, the backend
   applies it), each time from the text. A parsed expression is kept by its text (the 512 most recent):
   the handler only reads it and the backend validates and applies a deep copy (moto's
   `Validator.__init__`), so the kept tree is never changed. A text that fails to parse is not kept and
   fails again, with the same error, every time.
2. Validating an UpdateExpression walks its tree ten times (one check per walk). At every node moto's walk
   rebuilt the check's table of node types (a dict of bound methods, then a tuple of its keys) twice. The
   walk here builds it once per walk; the nodes are visited, processed and replaced in the same order.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

# Both modules are excluded from moto's typing (`# type: ignore` at their top): used as Any here.
expressions: Any = importlib.import_module("moto.dynamodb.parsing.expressions")
ast_nodes: Any = importlib.import_module("moto.dynamodb.parsing.ast_nodes")

_original_make: Any = None
_original_traverse: Any = None


@functools.lru_cache(maxsize=512)
def _parsed(expression: str) -> Any:
    return _original_make(expression)


def _make(cls: type, expression: str) -> Any:
    return _parsed(expression)  # moto has no subclass of UpdateExpressionParser


def _traverse(self: Any, node: Any) -> Any:
    processors = tuple(self._processing_map().items())
    kinds = tuple(kind for kind, _ in processors)
    return _walk(self, node, -1, processors, kinds)


def _walk(
    traverser: Any,
    node: Any,
    child_id: int,
    processors: tuple[tuple[type, Any], ...],
    kinds: tuple[type, ...],
) -> Any:
    # moto's DepthFirstTraverser.traverse_node_recursively, with its per-node lookups hoisted.
    if isinstance(node, ast_nodes.Node):
        parent_node = node.parent
        if node.children is not None:
            for i, child_node in enumerate(node.children):
                traverser.pre_processing_of_child(node, i)
                _walk(traverser, child_node, i, processors, kinds)
        if isinstance(node, kinds):
            node = next(processor for kind, processor in processors if isinstance(node, kind))(node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
    return node


def install() -> None:
    """Apply both changes (idempotent; process-wide; the caller holds moto_fidelity's lock)."""
    global _original_make, _original_traverse
    if _original_make is None:
        _original_make = expressions.UpdateExpressionParser.make
        expressions.UpdateExpressionParser.make = classmethod(_make)
    if _original_traverse is None:
        _original_traverse = ast_nodes.DepthFirstTraverser.traverse
        ast_nodes.DepthFirstTraverser.traverse = _traverse
