"""PERF-1: the cold-start bench measures every function template.yaml deploys, a new one included."""

from __future__ import annotations

import re
from pathlib import Path

from bench.bench_coldstart import FIRST_CALL, handlers

REPO = Path(__file__).resolve().parents[2]


def test_the_bench_measures_every_function_of_the_template() -> None:
    """PERF-1: the bench's list comes from functions/routes.py, the table template.yaml is made from."""
    # Given the function folders template.yaml deploys
    template = (REPO / "template.yaml").read_text(encoding="utf-8")
    deployed = sorted(set(re.findall(r"CodeUri: functions/([a-z0-9_]+)/", template)))
    # When the bench lists what it measures
    measured = handlers()
    # Then it is the same list, and the functions whose first call it times are among them
    assert measured == deployed
    assert set(FIRST_CALL) <= set(measured)
    assert all((REPO / "events" / f"{name}.json").is_file() for name in FIRST_CALL)
