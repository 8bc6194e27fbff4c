"""Benchmarks behind `make bench`: each bench/bench_*.py module has `run() -> list[section dict]`."""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

Section = dict[str, Any]


def progress(message: str) -> None:
    """A progress line on stderr (stdout carries the tables)."""
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def median_seconds(
    func: Callable[[], Any], *, repeat: int = 7, number: int = 1, setup: Callable[[], Any] | None = None
) -> float:
    """Median over `repeat` runs of the time of one call, each run timing `number` calls after `setup`."""
    samples = []
    for _ in range(repeat):
        if setup is not None:
            setup()
        start = time.perf_counter()
        for _ in range(number):
            func()
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples)


def ms(seconds: float) -> str:
    """Seconds as milliseconds, with precision that suits the size."""
    value = seconds * 1000
    if value >= 100:
        return f"{value:.0f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.4f}"


def verdict(ok: bool) -> str:
    return "yes" if ok else "NO"


# -- deterministic chat histories: English, Chinese, code and emoji, varied lengths --------------

EN = [
    "Could you summarise the quarterly report and point out the risks the board should know about?",
    "Sure. Revenue grew 12% while operating costs rose 4%, so margins improved.",
    "The main risk is the supplier contract that expires in March and has no renewal clause.",
    "Let me know if you want the figures broken down by region or by product line.",
    "I tried restarting the service but the health check still fails after thirty seconds.",
    "That usually means the container cannot reach the database; check the security group.",
]
ZH = [
    "林默是一名二十八岁的侦探，性格冷静，观察力敏锐，喜欢在雨夜独自思考案件。",
    "请帮我把这段对话整理成会议纪要，并列出需要跟进的事项和负责人。",
    "这个问题的关键在于缓存失效的时机，如果在写入之前失效，就会读到旧数据。",
    "好的，我已经把预算调整为每月五千元，并且把报告发送到了你的邮箱。",
]
CODE = [
    "```python\ndef window(history, budget):\n    kept = []\n    for m in reversed(history):\n"
    "        if cost(m) > budget:\n            break\n        kept.append(m)\n    return kept[::-1]\n```",
    "```sql\nSELECT id, created_at FROM messages WHERE conversation_id = $1 ORDER BY seq DESC LIMIT 11;\n```",
    "```js\nconst total = items.reduce((sum, x) => sum + x.tokens, 0);\n```",
]
EMOJI = ["👍", "🎉 done!", "🤖💬", "✅ merged", "🙏 thanks"]


def make_history(n: int, *, seed: int = 7) -> list[dict[str, Any]]:
    """`n` messages alternating user/assistant, oldest first, each with a message_id."""
    rng = random.Random(seed)
    pools = [EN, EN, ZH, CODE, EMOJI]
    out = []
    for i in range(n):
        parts = [rng.choice(rng.choice(pools)) for _ in range(rng.randint(1, 5))]
        out.append(
            {"role": "user" if i % 2 == 0 else "assistant", "content": " ".join(parts), "message_id": f"m{i}"}
        )
    return out


def utf8_size(messages: list[dict[str, Any]]) -> int:
    """Raw UTF-8 bytes of the messages' role and content."""
    return sum(len(m["role"].encode()) + len(str(m.get("content") or "").encode()) for m in messages)
