"""DynamoDB item sizes, computed as DynamoDB bills and limits them, so no write can exceed 400 KB."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any, Final

from chat_core.store.base import TableItem
from chat_core.store.records import ConversationRecord, MessageRecord

#: DynamoDB's hard limit on one item: attribute names plus values.
MAX_ITEM_BYTES: Final = 400 * 1024
#: What the service allows itself, leaving room for attributes other writers add (turn-log counters,
#: pinned flags) and for rounding in the size rules below.
ITEM_BUDGET_BYTES: Final = 380 * 1024


def _text_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _number_bytes(number: str) -> int:
    # "Approximately 1 byte per 2 significant digits, plus 1 byte", at most 21 bytes.
    try:
        with localcontext() as context:
            context.prec = 60  # DynamoDB numbers have up to 38 digits; never round them here
            digits = Decimal(number).normalize().as_tuple().digits
    except InvalidOperation:
        return 21
    return min(21, (len(digits) + 1) // 2 + 1)


def _binary_bytes(value: Any) -> int:
    if isinstance(value, bytes | bytearray):
        return len(value)
    return len(base64.b64decode(str(value)))


def value_bytes(value: Mapping[str, Any]) -> int:
    """Size of one attribute value in DynamoDB JSON ({"S": ...}, {"M": {...}}, ...)."""
    (kind, inner), *_ = value.items()
    if kind == "S":
        return _text_bytes(str(inner))
    if kind == "N":
        return _number_bytes(str(inner))
    if kind == "B":
        return _binary_bytes(inner)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(_text_bytes(str(v)) for v in inner)
    if kind == "NS":
        return sum(_number_bytes(str(v)) for v in inner)
    if kind == "BS":
        return sum(_binary_bytes(v) for v in inner)
    if kind == "M":
        # 3 bytes for the map, then each entry: its name, its value and 1 byte.
        return 3 + sum(_text_bytes(k) + value_bytes(v) + 1 for k, v in inner.items())
    if kind == "L":
        return 3 + sum(value_bytes(v) + 1 for v in inner)
    raise ValueError(f"unknown DynamoDB attribute type {kind!r}")


def item_bytes(attributes: Mapping[str, Mapping[str, Any]]) -> int:
    """Size of an item in DynamoDB JSON: attribute names (UTF-8) plus values."""
    return sum(_text_bytes(name) + value_bytes(value) for name, value in attributes.items())


def model_bytes(item: TableItem | MessageRecord | ConversationRecord) -> int:
    """Size the item (or the item of a record) will have once written (JSON attributes as the strings
    they become)."""
    written = item.to_item() if isinstance(item, MessageRecord | ConversationRecord) else item
    return item_bytes(written.serialize())
