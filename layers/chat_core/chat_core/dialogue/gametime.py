"""Game time: pluggable calendars that turn integer game ticks into readable timestamps (seed 004)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from chat_core.errors import InvalidGameTick, InvalidInput

# RimWorld's GenDate constants. Tick 0 is the first hour of 5500 Aprimay 1 in this calendar; the game
# itself shifts the clock by the map's longitude, which a history service cannot know, so we don't.
RIMWORLD_TICKS_PER_HOUR: Final = 2_500
RIMWORLD_TICKS_PER_DAY: Final = 60_000
RIMWORLD_DAYS_PER_QUADRUM: Final = 15
RIMWORLD_QUADRUMS: Final = ("Aprimay", "Jugust", "Septober", "Decembary")
# Northern-hemisphere seasons, the game's default reading: Aprimay is spring, Decembary is winter.
RIMWORLD_SEASONS_ZH: Final = ("春季", "夏季", "秋季", "冬季")
RIMWORLD_START_YEAR: Final = 5500

# A C# long is what the game stores; anything larger did not come from a game clock.
MAX_GAME_TICK: Final = 2**63 - 1


@runtime_checkable
class Calendar(Protocol):
    """Anything that renders a game tick as the bracketed timestamp put in front of a prompt line."""

    @property
    def name(self) -> str:
        """The name the calendar is registered and selected by."""
        ...

    def format(self, tick: int) -> str:
        """Readable timestamp for `tick`, e.g. `[Time: 5500 Aprimay 5, 13h]`."""
        ...


def check_tick(tick: object) -> int:
    """`tick` if it is a valid game tick (an int in 0..2**63-1); otherwise InvalidGameTick."""
    # bool is an int subclass; True as a tick is always a client bug.
    if isinstance(tick, bool) or not isinstance(tick, int):
        raise InvalidGameTick(f"game_tick must be an integer, got {type(tick).__name__}")
    if tick < 0:
        raise InvalidGameTick(f"game_tick must be >= 0, got {tick}")
    if tick > MAX_GAME_TICK:
        raise InvalidGameTick(f"game_tick must be <= {MAX_GAME_TICK}, got {tick}")
    return tick


@dataclass(frozen=True)
class GameDate:
    """A tick broken down on a year / quadrum / day / hour calendar. `day` and `quadrum_index` as shown."""

    year: int
    quadrum_index: int  # 0-based
    quadrum: str
    day: int  # 1-based day of the quadrum
    hour: int  # 0..hours_per_day-1


@dataclass(frozen=True)
class QuadrumCalendar:
    """A year of equal quadrums of equal days of equal hours; RimWorld's shape, parameterised.

    `style` picks the rendering: "en" -> `[Time: 5500 Aprimay 5, 13h]`,
    "zh" -> `[时间: 5500年 春季第5天, 13时]` (quadrum shown as its season name).
    """

    name: str = "rimworld"
    ticks_per_hour: int = RIMWORLD_TICKS_PER_HOUR
    ticks_per_day: int = RIMWORLD_TICKS_PER_DAY
    days_per_quadrum: int = RIMWORLD_DAYS_PER_QUADRUM
    quadrums: tuple[str, ...] = RIMWORLD_QUADRUMS
    seasons_zh: tuple[str, ...] = RIMWORLD_SEASONS_ZH
    start_year: int = RIMWORLD_START_YEAR
    style: str = "en"

    def __post_init__(self) -> None:
        if self.ticks_per_hour <= 0 or self.ticks_per_day <= 0 or self.days_per_quadrum <= 0:
            raise ValueError("calendar periods must be positive")
        if self.ticks_per_day % self.ticks_per_hour:
            raise ValueError("ticks_per_day must be a multiple of ticks_per_hour")
        if not self.quadrums or len(self.seasons_zh) != len(self.quadrums):
            raise ValueError("a calendar needs quadrum names and one Chinese season name per quadrum")
        if self.style not in ("en", "zh"):
            raise ValueError(f"unknown calendar style {self.style!r}; use 'en' or 'zh'")

    def date(self, tick: int) -> GameDate:
        """Break `tick` down into year, quadrum, day (1-based) and hour."""
        tick = check_tick(tick)
        days = tick // self.ticks_per_day
        hour = (tick % self.ticks_per_day) // self.ticks_per_hour
        quadrums_total = days // self.days_per_quadrum
        index = quadrums_total % len(self.quadrums)
        return GameDate(
            year=self.start_year + quadrums_total // len(self.quadrums),
            quadrum_index=index,
            quadrum=self.quadrums[index],
            day=days % self.days_per_quadrum + 1,
            hour=hour,
        )

    def format(self, tick: int) -> str:
        """`[Time: 5500 Aprimay 5, 13h]` or, in the "zh" style, `[时间: 5500年 春季第5天, 13时]`."""
        d = self.date(tick)
        if self.style == "zh":
            return f"[时间: {d.year}年 {self.seasons_zh[d.quadrum_index]}第{d.day}天, {d.hour}时]"
        return f"[Time: {d.year} {d.quadrum} {d.day}, {d.hour}h]"


@dataclass(frozen=True)
class TickCalendar:
    """Fallback for games without a calendar: the raw tick, `[Tick 123456]`."""

    name: str = "ticks"

    def format(self, tick: int) -> str:
        """`[Tick <n>]`."""
        return f"[Tick {check_tick(tick)}]"


RIMWORLD: Final = QuadrumCalendar()
RIMWORLD_ZH: Final = QuadrumCalendar(name="rimworld_zh", style="zh")
TICKS: Final = TickCalendar()

_CALENDARS: dict[str, Calendar] = {c.name: c for c in (RIMWORLD, RIMWORLD_ZH, TICKS)}
DEFAULT_CALENDAR: Final = RIMWORLD.name


def register_calendar(calendar: Calendar) -> None:
    """Make `calendar` selectable by its name (e.g. from a prompt request's `calendar` field)."""
    if not isinstance(calendar, Calendar):
        raise TypeError("a calendar needs a `name` and a `format(tick) -> str` method")
    _CALENDARS[calendar.name] = calendar


def calendar_names() -> list[str]:
    """Names accepted by `get_calendar`, sorted."""
    return sorted(_CALENDARS)


def get_calendar(name: str | None = None) -> Calendar:
    """The calendar registered as `name` (default "rimworld"); unknown names are a clear InvalidInput."""
    key = name or DEFAULT_CALENDAR
    try:
        return _CALENDARS[key]
    except KeyError:
        raise InvalidInput(
            f"unknown calendar {key!r}; known calendars: {', '.join(calendar_names())}",
            field="calendar",
        ) from None


def format_tick(tick: int, calendar: Calendar | str | None = None) -> str:
    """Render `tick` with a calendar object or a registered calendar name (default RimWorld, English)."""
    cal = calendar if isinstance(calendar, Calendar) else get_calendar(calendar)
    return cal.format(tick)
