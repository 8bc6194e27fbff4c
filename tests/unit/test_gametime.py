"""DLG-1 / seed 004 game time: RimWorld calendar (English, Chinese), tick fallback, pluggable calendars."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from chat_core.dialogue.gametime import (
    RIMWORLD,
    RIMWORLD_ZH,
    TICKS,
    QuadrumCalendar,
    calendar_names,
    check_tick,
    format_tick,
    get_calendar,
    register_calendar,
)
from chat_core.errors import InvalidGameTick, InvalidInput
from chat_core.http.statuses import status_for

DAY = 60_000
HOUR = 2_500
QUADRUM = 15 * DAY
YEAR = 4 * QUADRUM


def test_seed004_example_renders_in_english_and_chinese() -> None:
    """Seed 004: the example timestamp, day 5 of the first quadrum at 13h, in both renderings."""
    # Given the tick of 5500 Aprimay 5, 13h
    tick = 4 * DAY + 13 * HOUR
    # When it is formatted with the default and the Chinese calendar
    english = format_tick(tick)
    chinese = format_tick(tick, "rimworld_zh")
    # Then both read like the seed's examples
    assert english == "[Time: 5500 Aprimay 5, 13h]"
    assert chinese == "[时间: 5500年 春季第5天, 13时]"


def test_tick_zero_is_the_first_hour_of_5500_aprimay_1() -> None:
    """Calendar boundary: tick 0."""
    assert RIMWORLD.format(0) == "[Time: 5500 Aprimay 1, 0h]"


def test_end_of_day_and_next_day() -> None:
    """Calendar boundary: the last tick of a day is hour 23; one more tick is the next day, hour 0."""
    assert RIMWORLD.format(DAY - 1) == "[Time: 5500 Aprimay 1, 23h]"
    assert RIMWORLD.format(DAY) == "[Time: 5500 Aprimay 2, 0h]"


def test_end_of_quadrum_rolls_into_jugust() -> None:
    """Calendar boundary: day 15 is the last day of a quadrum; the next day is Jugust 1 (summer)."""
    assert RIMWORLD.format(QUADRUM - 1) == "[Time: 5500 Aprimay 15, 23h]"
    assert RIMWORLD.format(QUADRUM) == "[Time: 5500 Jugust 1, 0h]"
    assert RIMWORLD_ZH.format(QUADRUM) == "[时间: 5500年 夏季第1天, 0时]"


def test_quadrums_map_to_seasons_in_order() -> None:
    """Aprimay=春季, Jugust=夏季, Septober=秋季, Decembary=冬季 (northern hemisphere)."""
    for index, (quadrum, season) in enumerate(
        [("Aprimay", "春季"), ("Jugust", "夏季"), ("Septober", "秋季"), ("Decembary", "冬季")]
    ):
        tick = index * QUADRUM + 2 * DAY
        assert RIMWORLD.format(tick) == f"[Time: 5500 {quadrum} 3, 0h]"
        assert RIMWORLD_ZH.format(tick) == f"[时间: 5500年 {season}第3天, 0时]"


def test_end_of_year_rolls_into_5501() -> None:
    """Calendar boundary: the last tick of 5500 is Decembary 15, 23h; the next tick is 5501 Aprimay 1."""
    assert RIMWORLD.format(YEAR - 1) == "[Time: 5500 Decembary 15, 23h]"
    assert RIMWORLD.format(YEAR) == "[Time: 5501 Aprimay 1, 0h]"
    assert RIMWORLD.date(3 * YEAR + QUADRUM + 5 * HOUR).year == 5503


def test_plain_tick_fallback() -> None:
    """A game without a calendar sees the raw tick."""
    assert TICKS.format(123456) == "[Tick 123456]"
    assert format_tick(123456, "ticks") == "[Tick 123456]"


@pytest.mark.parametrize("bad", [-1, -60_000, 1.5, "100", True, None, 2**63])
def test_invalid_ticks_are_a_clear_error(bad: object) -> None:
    """Negative, non-integer or larger-than-long ticks are rejected with invalid_game_tick, not rendered."""
    with pytest.raises(InvalidGameTick) as err:
        check_tick(bad)
    assert err.value.code == "invalid_game_tick"
    assert status_for(err.value) == 400
    assert "game_tick" in err.value.message


def test_negative_tick_is_an_error_in_every_calendar() -> None:
    """Negative ticks fail in the formatter too, whichever calendar."""
    for calendar in (RIMWORLD, RIMWORLD_ZH, TICKS):
        with pytest.raises(InvalidGameTick):
            calendar.format(-5)


def test_unknown_calendar_name_lists_the_known_ones() -> None:
    """Selecting a calendar by a wrong name is a 400 that says what exists."""
    with pytest.raises(InvalidInput) as err:
        get_calendar("gregorian")
    assert "rimworld" in err.value.message
    assert "ticks" in err.value.message


def test_a_game_can_plug_in_its_own_calendar() -> None:
    """Pluggable: any object with a name and format(tick) can be registered and selected by name."""

    # Given a game with 10-tick hours, 240-tick days and two 3-day seasons from year 1
    @dataclass(frozen=True)
    class Hourly:
        name: str = "test_hourly"

        def format(self, tick: int) -> str:
            return f"[Hour {check_tick(tick) // 10}]"

    register_calendar(Hourly())
    small = QuadrumCalendar(
        name="test_small",
        ticks_per_hour=10,
        ticks_per_day=240,
        days_per_quadrum=3,
        quadrums=("Wet", "Dry"),
        seasons_zh=("雨季", "旱季"),
        start_year=1,
    )
    register_calendar(small)
    # When ticks are formatted with them by name
    # Then each calendar's own rules apply
    assert format_tick(35, "test_hourly") == "[Hour 3]"
    assert format_tick(3 * 240 + 250, "test_small") == "[Time: 1 Dry 2, 1h]"
    assert format_tick(6 * 240, "test_small") == "[Time: 2 Wet 1, 0h]"
    assert {"test_hourly", "test_small", "rimworld", "rimworld_zh", "ticks"} <= set(calendar_names())


def test_calendar_shape_is_validated() -> None:
    """A calendar whose day isn't whole hours, or without a season per quadrum, is refused at definition."""
    with pytest.raises(ValueError, match="multiple"):
        QuadrumCalendar(ticks_per_hour=7, ticks_per_day=100)
    with pytest.raises(ValueError, match="season"):
        QuadrumCalendar(quadrums=("A", "B"), seasons_zh=("春",))
