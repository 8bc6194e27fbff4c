"""`make bench`'s section on a user's data (PRV-1..3): exporting, importing and erasing a user of 10,000
messages (bench/user_data.py does the filling and metering; `python -m bench.user_data` runs it alone)."""

from __future__ import annotations

from bench import Section, progress
from bench.user_data import OTHER_USERS, OTHERS, measure

MESSAGES = 10_000


def run() -> list[Section]:
    progress(f"user_data: filling a user of {MESSAGES} messages and {OTHERS} of others")
    found = measure(MESSAGES, OTHERS)
    rows = []
    for job in found["jobs"]:
        calls = job["calls"]
        by_kind = ", ".join(f"{name.split(':')[1]} {count}" for name, count in calls.items())
        rows.append(
            [
                job["job"],
                sum(calls.values()),
                by_kind,
                job["rcu"],
                job["wcu"],
                job["seconds"],
                job["in_calls"],
            ]
        )
    return [
        {
            "title": f"A user's export, import and erasure: {MESSAGES:,} messages in conversations of 100",
            "columns": [
                "job",
                "calls",
                "calls by kind (DynamoDB, S3)",
                "read units",
                "write units",
                "seconds",
                "of which in botocore and moto",
            ],
            "rows": rows,
            "notes": (
                f"moto in-process with the bench's moto fixes, one run of each job (seconds are wall "
                f"time on this machine, not DynamoDB's latency; most of it is moto's). The table also "
                f"holds {OTHERS:,} messages of {OTHER_USERS} other users "
                f"({found['table_items']:,} items, ~{found['item_bytes']} B each), which the erasure's Scan "
                "reads too. Units as DynamoDB bills them: Scan/Query 1 per 4 KB examined per page, a delete "
                "1 per item, a put 1 per KB. The erasure runs with ERASURE_SETTLE_SECONDS=0 (deployed, its "
                "last pass comes two minutes after the first)."
            ),
            "summary": [
                [
                    f"{row[0]} of a user of {MESSAGES:,} messages",
                    f"{row[1]} calls, {row[3]:,} read units, {row[4]:,} write units, {row[5]} s",
                    "(reference)",
                    "",
                ]
                for row in rows
            ],
        }
    ]
