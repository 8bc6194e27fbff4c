"""moto builds a stored item without sizing it again at every attribute.

Installed with `moto_fidelity` (its item 12; the local server and the tests). moto's `Item` puts its
attributes one at a time into a `LimitedSizeDict`, which, to refuse an item past DynamoDB's 400 KB, sums
the size of every attribute already there before adding the next: the work grows with the square of the
attribute count, and each map or list is sized again at every later attribute (2.7 % of the CPU of
tests/integration went there). Here each attribute is sized once, in the same order, against a running
total: the item is refused at the same attribute, with the same error, as moto refuses it (sizes are
never negative, so moto's sum before an attribute is the running total). The item holds the same
`LimitedSizeDict`, so later assignments (an UpdateItem's SET and ADD) are checked by moto as before.
"""

from __future__ import annotations

from typing import Any

from moto.dynamodb.exceptions import ItemSizeTooLarge
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.utilities import bytesize

#: moto's own limit (`LimitedSizeDict.__setitem__`): between DynamoDB's 400 KB and what it accepts.
MAX_ITEM_BYTES = 405_000

original_init: Any = None


def _init(self: Item, hash_key: DynamoType, range_key: DynamoType | None, attrs: dict[str, Any]) -> None:
    self.hash_key = hash_key
    self.range_key = range_key
    values: dict[str, DynamoType] = {}
    total = 0
    for key, value in attrs.items():
        typed = DynamoType(value)
        added = bytesize(key) + typed.size()
        if total + added > MAX_ITEM_BYTES:
            raise ItemSizeTooLarge
        total += added
        values[key] = typed
    self.attrs = LimitedSizeDict()
    dict.update(self.attrs, values)


def install() -> None:
    """Apply the change (idempotent; process-wide; the caller holds moto_fidelity's lock)."""
    global original_init
    if original_init is None:
        original_init = Item.__init__
        Item.__init__ = _init  # type: ignore[method-assign]
