"""API-9: the OpenAPI document the local server serves is the golden copy, byte for byte once pretty-printed.

This guards the rule of the coming reorganisation of the code (request models as commands, response
models in the layer, routes from one table): the wire is unchanged. A moved field, a renamed schema
or a changed description is a difference. When a change of the wire is intended, rewrite the copy:

    GOLDEN_UPDATE=1 pytest tests/golden/test_golden_openapi.py
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import httpx

GOLDEN = Path(__file__).with_name("openapi.json")


def pretty(document: object) -> str:
    """The golden file's form: sorted keys, four-space indent, a final newline."""
    return json.dumps(document, indent=4, sort_keys=True, ensure_ascii=False) + "\n"


def test_api9_openapi_document_equals_the_golden_copy(api: httpx.Client) -> None:
    """API-9: GET /openapi.json of the local server equals tests/golden/openapi.json (sorted keys)."""
    # When the document is fetched
    answer = api.get("/openapi.json")
    assert answer.status_code == 200, answer.text
    served = pretty(answer.json())
    if os.environ.get("GOLDEN_UPDATE") == "1":
        GOLDEN.write_text(served, encoding="utf-8")
    # Then it is the golden copy, line for line
    golden = GOLDEN.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(
            golden.splitlines(keepends=True),
            served.splitlines(keepends=True),
            fromfile="tests/golden/openapi.json",
            tofile="GET /openapi.json",
            n=5,
        )
    )
    assert not diff, "the OpenAPI document differs from the golden copy:\n" + diff
