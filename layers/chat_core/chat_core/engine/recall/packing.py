"""What recall sends within its budget: the best hits, with the turns around a hit when they help (MEM-53).

One best-first queue holds the scored messages and, once a message is taken, the turns just before and
after it on its path as candidates of their own, scored NEIGHBOUR_SHARE of the hit's score (or their own
score when higher). So a neighbour comes before the weaker hits only when the hit stands well above them
(its score margin), and after every hit worth taking when the budget has room left: how many neighbours
come is decided by the scores and the budget, never a fixed count. The turns stay units: a tool call
with all its results or nothing (the caller's `unit`).

A message whose score falls below MIN_RELATIVE of the best is not taken as a hit: what recall does not
use goes back to the recency window (the share adapts to what recall finds). A unit that does not fit the
budget left is skipped whole, never cut, and reported in `Packed.did_not_fit` (MEM-54).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

#: A neighbour's score as a share of its hit's (tuned on LoCoMo's tuning half; docs/recall.md).
NEIGHBOUR_SHARE: Final = 0.7
#: Hits scoring below this share of the best are left to recency.
MIN_RELATIVE: Final = 0.15


@dataclass(frozen=True)
class Unit:
    """Messages sent together (a message, or a tool call with all its results), its score and cost;
    `neighbour_of`: the hit it was brought by, if it came as a neighbour."""

    seqs: tuple[int, ...]
    score: float
    tokens: int
    neighbour_of: int | None = None


@dataclass
class Packed:
    """The units taken, in the order they were chosen, and the hits that did not fit (skipped whole)."""

    units: list[Unit] = field(default_factory=list)
    did_not_fit: list[Unit] = field(default_factory=list)

    @property
    def seqs(self) -> list[int]:
        return sorted(s for u in self.units for s in u.seqs)


def pack(
    scores: Mapping[int, float],
    budget: int,
    *,
    unit: Callable[[int], Sequence[int] | None],
    cost: Callable[[int], int],
    neighbours: Callable[[int], Sequence[int]],
    excluded: Callable[[int], bool] = lambda seq: False,
    max_units: int | None = None,
) -> Packed:
    """Units best first within `budget` tokens; `unit(seq)` is the seq's group (None: not whole),
    `neighbours(seq)` the seqs just before and after it on its path, `excluded` what is already sent."""
    packed = Packed()
    if not scores or budget <= 0:
        return packed
    best = max(scores.values())
    floor = best * MIN_RELATIVE
    queue: list[tuple[float, int, int, int]] = [(-s, -seq, seq, 0) for seq, s in scores.items() if s >= floor]
    heapq.heapify(queue)
    taken: set[int] = set()
    room = budget
    while queue and room > 0:
        negative, _, seq, by = heapq.heappop(queue)
        if seq in taken or excluded(seq):
            continue
        members = unit(seq)
        if members is None or any(m in taken or excluded(m) for m in members):
            continue
        tokens = sum(cost(m) for m in members)
        found = Unit(tuple(members), -negative, tokens, by or None)
        if tokens > room:
            if not by:
                packed.did_not_fit.append(found)
            continue
        packed.units.append(found)
        taken.update(members)
        room -= tokens
        if max_units is not None and len(packed.units) >= max_units:
            break
        if by:
            continue  # a neighbour brings no neighbours of its own: the context of a hit, not a chain
        for near in {n for m in (members[0], members[-1]) for n in neighbours(m)} - taken:
            near_score = max(scores.get(near, 0.0), -negative * NEIGHBOUR_SHARE)
            heapq.heappush(queue, (-near_score, -near, near, seq))
    return packed
