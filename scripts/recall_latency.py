"""BM25 search latency over the recall index of a 10,000-message conversation (docs/recall.md).

Offline and pessimistic: a Zipf vocabulary with no stopwords, so the commonest terms sit in nearly every
message; segments already decoded (a warm process). Usage: python scripts/recall_latency.py
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "layers" / "chat_core"))

from chat_core.engine import recall

rng = random.Random(3)  # noqa: S311 - synthetic text
vocab = [f"w{n}" for n in range(5000)]
weights = [1 / (i + 1) for i in range(len(vocab))]
docs = []
for seq in range(1, 10001):
    n = rng.randint(10, 30) if seq % 2 else rng.randint(40, 160)
    text = " ".join(rng.choices(vocab, weights, k=n))
    docs.append(recall.document(seq, seq - 1, "user" if seq % 2 else "assistant", text, n * 2))
index = recall.MemoryIndex.build(docs)
times = []
for _ in range(200):
    q = " ".join(rng.choices(vocab, weights, k=rng.randint(5, 15)))
    t = time.perf_counter()
    index.search(q, limit=20)
    times.append((time.perf_counter() - t) * 1000)
times.sort()
print(
    "segments",
    len(index.segments),
    "p50 ms",
    round(statistics.median(times), 1),
    "p99 ms",
    round(times[int(len(times) * 0.99) - 1], 1),
)
