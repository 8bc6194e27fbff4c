"""COST-3/COST-4: each owner's usage per day and model, and their budget item, in one partition.

The day items are only ever added to: by the table's stream for priced messages (`add_streamed`, each
message exactly once), inside the transaction that stores a summary (`charge_updates`), and, while
budgets are on, inside the transaction that stores a priced message (`counted_updates`: the message is
marked `counted` and the stream leaves it out). Those last go to a few shard items per day and model
(`sk = DAY#<day>#<model>#<shard>`), so one owner's concurrent posts to different conversations do not
meet on one item. Reads merge a day and model's items: a range of days (GET /usage), or a month's days
with the budget item (one Query, the budget check of a post).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import DoesNotExist, PynamoDBException, UpdateError

from chat_core.engine.costs import ESTIMATED, UNKNOWN, Charge, TokenUse
from chat_core.errors import StoreUnavailable
from chat_core.store import base
from chat_core.store.base import TableItem
from chat_core.store.items import BudgetItem, Message, UsageDay
from chat_core.store.keys import LIMITS_SK, USAGE_DAY_PREFIX, usage_pk
from chat_core.store.records import MessageRecord

#: ("update", item, condition, actions): an entry of a TransactWrite (see conversations._transact).
UsageWrite = tuple[str, Any, Any, list[Any] | None]
#: COST-4: how many items a day and model's usage counted by posts is spread over. Two posts meet on one
#: only when their conversations hash alike (1 in USAGE_SHARDS) and their final writes overlap; the one
#: cancelled retries on the next shard. More shards: fewer meetings, more items in the budget's Query.
USAGE_SHARDS: Final = 8


@dataclass(frozen=True)
class UsageDayRecord:
    """COST-3: one owner's use of one model on one UTC day, as counted by the day item."""

    owner: str | None
    day: str | None
    model: str | None
    calls: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cost_micros: int = 0
    unpriced_calls: int = 0
    estimated_calls: int = 0

    @classmethod
    def of(cls, item: UsageDay) -> UsageDayRecord:
        return cls(
            owner=item.owner,
            day=item.day,
            model=item.model,
            calls=int(item.calls),
            prompt_tokens=int(item.prompt_tokens),
            cached_tokens=int(item.cached_tokens),
            completion_tokens=int(item.completion_tokens),
            reasoning_tokens=int(item.reasoning_tokens),
            cost_micros=int(item.cost_micros),
            unpriced_calls=int(item.unpriced_calls),
            estimated_calls=int(item.estimated_calls),
        )

    def plus(self, other: UsageDayRecord) -> UsageDayRecord:
        """This day and model's counts with another item's of the same day and model added."""
        counts = [f.name for f in fields(self) if f.name not in ("owner", "day", "model")]
        return replace(self, **{name: getattr(self, name) + getattr(other, name) for name in counts})


@dataclass(frozen=True)
class BudgetRecord:
    """COST-4: an administrator's limits for one owner, as the request wrote them."""

    owner: str
    limits: Mapping[str, Any] = field(default_factory=dict)
    updated_at: str = ""
    updated_by: str = ""

    @classmethod
    def of(cls, item: BudgetItem) -> BudgetRecord:
        limits = item.limits if isinstance(item.limits, Mapping) else {}
        return cls(
            owner=item.owner, limits=dict(limits), updated_at=item.updated_at, updated_by=item.updated_by
        )


@dataclass
class _Sum:
    calls: int = 0
    prompt: int = 0
    cached: int = 0
    completion: int = 0
    reasoning: int = 0
    cost: int = 0
    unpriced: int = 0
    estimated: int = 0

    def add(self, charge: Charge) -> None:
        self.calls += 1
        self.prompt += charge.use.prompt
        self.cached += charge.use.cached
        self.completion += charge.use.completion
        self.reasoning += charge.use.reasoning
        if charge.cost_micros is None:
            self.unpriced += 1
        else:
            self.cost += charge.cost_micros
        if charge.status == ESTIMATED:
            self.estimated += 1


def message_of_image(image: Mapping[str, Any] | None) -> MessageRecord | None:
    """The message a stream record's NewImage holds (None: not a message item)."""
    if not image:
        return None
    try:
        item = TableItem.from_raw_data(dict(image))
    except (PynamoDBException, ValueError, KeyError, TypeError):
        return None
    return MessageRecord.of(item) if isinstance(item, Message) else None


def reply_day(message: MessageRecord) -> str:
    """The UTC day a reply's usage counts for: the day it was created."""
    return message.created_at[:10]


def use_of(message: MessageRecord, estimated: bool) -> TokenUse:
    """The tokens a priced message's model call used: its reported usage (with the breakdowns kept in
    `extras`), or (`estimated`) its local count."""
    counted = message.local_usage if estimated else message.usage
    if counted is None:
        return TokenUse()
    details = None if estimated or not isinstance(message.extras, dict) else message.extras
    return TokenUse.from_usage(counted.prompt_tokens, counted.completion_tokens, details)


def charge_of(message: MessageRecord) -> Charge:
    """The charge recorded on a priced message (`cost_status` set)."""
    use = use_of(message, message.cost_status == ESTIMATED)
    return Charge(str(message.model or ""), use, message.cost_micros, message.cost_status or UNKNOWN)


def charges_of(message: MessageRecord) -> list[Charge]:
    """COST-3: every model call a stored message adds to its owner's usage: a priced assistant message's
    own, and the turn's other calls it carries (MEM-50: the current message's embedding). The stream and
    a post counting its own reply (budgets on) both count exactly these."""
    if message.role != "assistant":
        return []
    charges = [Charge.from_json(c) for c in message.charges or [] if isinstance(c, Mapping)]
    if message.cost_status is not None:
        charges.insert(0, charge_of(message))
    return [charge for charge in charges if charge.model]


def shard_of(name: str, attempt: int = 0) -> str:
    """COST-4: the shard a write counts its usage in: by the conversation (`name`), moved on by each
    retry so two conversations that met once do not meet again."""
    digest = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=4).digest(), "big")
    return str((digest + attempt) % USAGE_SHARDS)


def charge_updates(
    owner: str, charges: Iterable[tuple[str, Charge]], shard: str | None = None
) -> list[UsageWrite]:
    """The updates that add `charges` ((day, charge) pairs) to the owner's day items (`shard`: to that
    shard's items): one entry per day and model (a transaction may touch an item once). No condition:
    the first update creates the item."""
    sums: dict[tuple[str, str], _Sum] = {}
    for day, charge in charges:
        sums.setdefault((day, charge.model), _Sum()).add(charge)
    writes: list[UsageWrite] = []
    for (day, model), total in sums.items():
        pk, sk = UsageDay.key(owner, day, model, shard)
        writes.append(("update", UsageDay(pk, sk), None, _add_actions(owner, day, model, total)))
    return writes


def counted_updates(
    owner: str, messages: Sequence[MessageRecord], shard: str
) -> tuple[list[MessageRecord], list[UsageWrite]]:
    """COST-4, budgets on: `messages` with each one that adds to the owner's usage marked `counted` (the
    stream leaves those out), and the updates that add them to `shard`'s day items, for the transaction
    that stores them: the usage moves with the messages, once."""
    marked: list[MessageRecord] = []
    charges: list[tuple[str, Charge]] = []
    for message in messages:
        found = charges_of(message)
        if found:
            message = replace(message, counted=True)
            charges += [(reply_day(message), charge) for charge in found]
        marked.append(message)
    return marked, charge_updates(owner, charges, shard) if charges else []


def _add_actions(owner: str, day: str, model: str, total: _Sum) -> list[Any]:
    return [
        TableItem.item_type.set(UsageDay),
        UsageDay.owner.set(owner),
        UsageDay.day.set(day),
        UsageDay.model.set(model),
        UsageDay.calls.add(total.calls),
        UsageDay.prompt_tokens.add(total.prompt),
        UsageDay.cached_tokens.add(total.cached),
        UsageDay.completion_tokens.add(total.completion),
        UsageDay.reasoning_tokens.add(total.reasoning),
        UsageDay.cost_micros.add(total.cost),
        UsageDay.unpriced_calls.add(total.unpriced),
        UsageDay.estimated_calls.add(total.estimated),
    ]


#: A shard's watermark stays on a day item this long after its last update: longer than the stream
#: keeps a record (24 h), so no record of that shard can be delivered again once it is dropped.
WATERMARK_KEPT_S: Final = 2 * 86_400
#: DynamoDB stream sequence numbers are 21 to 40 digits: padded, string order is number order.
_SEQUENCE_WIDTH: Final = 40
_ATTEMPTS: Final = 20


def _sequence(number: str) -> str:
    return number.zfill(_SEQUENCE_WIDTH)


def add_streamed(
    owner: str, day: str, model: str, charges: Sequence[tuple[str, Charge]], shard: str, now: float
) -> int:
    """COST-3: add `charges` ((stream sequence number, charge) of one shard's records) that the day item
    does not hold yet; returns how many were added.

    Exactly once, whatever Lambda redelivers: within a shard records first arrive in order, and the day
    item keeps, per shard, the newest sequence number it added (its watermark). One consistent GetItem,
    then one UpdateItem that adds the records above the watermark and moves it, conditioned on the
    item's `watermark_version` being the one read (another shard's update in between: read again).
    Watermarks older than WATERMARK_KEPT_S are dropped in the same update.
    """
    base.bind()
    pk, sk = UsageDay.key(owner, day, model)
    target = UsageDay(pk, sk)
    for _ in range(_ATTEMPTS):
        try:
            held: UsageDay | None = UsageDay.get(pk, sk, consistent_read=True)
        except DoesNotExist:
            held = None
        except (PynamoDBException, ClientError, BotoCoreError) as exc:
            raise base.store_error(exc) from exc
        marks = dict(held.watermarks) if held is not None and isinstance(held.watermarks, Mapping) else {}
        version = (
            int(held.watermark_version) if held is not None and held.watermark_version is not None else None
        )
        mark = marks.get(shard)
        newest = str(mark[0]) if isinstance(mark, list) and mark else ""
        fresh = [(number, charge) for number, charge in charges if _sequence(number) > newest]
        if not fresh:
            return 0
        total = _Sum()
        for _, charge in fresh:
            total.add(charge)
        kept = {
            name: value
            for name, value in marks.items()
            if isinstance(value, list) and len(value) == 2 and now - float(value[1]) < WATERMARK_KEPT_S
        }
        kept[shard] = [max(_sequence(number) for number, _ in fresh), int(now)]
        condition = (
            UsageDay.watermark_version.does_not_exist()
            if version is None
            else UsageDay.watermark_version == version
        )
        actions = [
            *_add_actions(owner, day, model, total),
            UsageDay.watermarks.set(kept),
            UsageDay.watermark_version.set((version or 0) + 1),
        ]
        try:
            target.update(actions=actions, condition=condition, add_version_condition=False)
        except UpdateError as exc:
            if exc.cause_response_code == "ConditionalCheckFailedException":
                continue  # another shard's records reached the item first: read it again
            raise base.store_error(exc) from exc
        except (PynamoDBException, ClientError, BotoCoreError) as exc:
            raise base.store_error(exc) from exc
        return len(fresh)
    raise StoreUnavailable("the usage of the day stayed busy; the stream retries the batch")


def _query(owner: str, condition: Any) -> list[TableItem]:
    base.bind()
    try:
        return list(TableItem.query(usage_pk(owner), condition, consistent_read=True))
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def _merged(items: Sequence[TableItem]) -> list[UsageDayRecord]:
    """One record per day and model: the stream's item and the shards posts counted in, added up (in
    key order, so in day order)."""
    merged: dict[tuple[str | None, str | None], UsageDayRecord] = {}
    for item in items:
        if not isinstance(item, UsageDay):
            continue
        found = UsageDayRecord.of(item)
        held = merged.get((found.day, found.model))
        merged[(found.day, found.model)] = found if held is None else held.plus(found)
    return list(merged.values())


def read_days(owner: str, first_day: str, last_day: str) -> list[UsageDayRecord]:
    """The owner's days from `first_day` to `last_day` (YYYY-MM-DD, inclusive), in day order."""
    items = _query(
        owner, TableItem.sk.between(f"{USAGE_DAY_PREFIX}{first_day}", f"{USAGE_DAY_PREFIX}{last_day}#~")
    )
    return _merged(items)


def read_since(owner: str, first_day: str) -> tuple[list[UsageDayRecord], BudgetRecord | None]:
    """COST-4, one Query: the owner's days from `first_day` on (shards included), and their budget
    ("~LIMITS" sorts after every day)."""
    items = _query(owner, TableItem.sk >= f"{USAGE_DAY_PREFIX}{first_day}")
    days = _merged(items)
    limits = next((BudgetRecord.of(item) for item in items if isinstance(item, BudgetItem)), None)
    return days, limits


def get_limits(owner: str) -> BudgetRecord | None:
    base.bind()
    try:
        return BudgetRecord.of(BudgetItem.get(usage_pk(owner), LIMITS_SK, consistent_read=True))
    except BudgetItem.DoesNotExist:
        return None
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def put_limits(budget: BudgetRecord) -> None:
    base.bind()
    pk, sk = BudgetItem.key(budget.owner)
    item = BudgetItem(
        pk,
        sk,
        owner=budget.owner,
        limits=dict(budget.limits),
        updated_at=budget.updated_at,
        updated_by=budget.updated_by,
    )
    try:
        item.save()
    except (PynamoDBException, ClientError, BotoCoreError) as exc:
        raise base.store_error(exc) from exc


def sum_days(days: Sequence[UsageDayRecord]) -> tuple[int, int]:
    """(tokens, micro-dollars) of `days`: prompt plus completion tokens, and the known costs."""
    tokens = sum(d.prompt_tokens + d.completion_tokens for d in days)
    return tokens, sum(d.cost_micros for d in days)
