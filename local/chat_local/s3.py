"""The template's S3 buckets in the embedded moto server, mirrored to the data directory between runs.

The blob bucket (API-17) holds content parts too large for their message item. Locally it lives in the
embedded moto server, which forgets everything when it stops, while the table is restored from its
snapshot: so every object is also kept as a file under `<data dir>/s3/<bucket>/<key>` (written as soon
as the object is, before the store answers, removed when the purge deletes the object; checked again with
the table's snapshots) and put back at start.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

log = logging.getLogger("chat_local.s3")


def s3_client(endpoint: str, region: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name=region,
        config=Config(retries={"max_attempts": 3}, s3={"addressing_style": "path"}),
    )


def create_buckets(client: Any, names: Iterable[str], region: str) -> None:
    for name in names:
        arguments: dict[str, Any] = {"Bucket": name}
        if region != "us-east-1":
            arguments["CreateBucketConfiguration"] = {"LocationConstraint": region}
        with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
            client.create_bucket(**arguments)


class BucketMirror:
    """Keeps a directory equal to a bucket: `restore()` at start, `save()` after each table snapshot."""

    def __init__(self, client: Any, bucket: str, directory: Path) -> None:
        self.client = client
        self.bucket = bucket
        self.directory = directory

    def _files(self) -> dict[str, Path]:
        if not self.directory.is_dir():
            return {}
        return {
            path.relative_to(self.directory).as_posix(): path
            for path in self.directory.rglob("*")
            if path.is_file() and not path.name.endswith(".part")
        }

    def _keys(self) -> set[str]:
        keys: set[str] = set()
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket):
            keys.update(item["Key"] for item in page.get("Contents") or [])
        return keys

    def restore(self) -> int:
        """Put every mirrored file back into the bucket; returns how many."""
        files = self._files()
        for key, path in files.items():
            self.client.put_object(Bucket=self.bucket, Key=key, Body=path.read_bytes())
        return len(files)

    def sync(self, key: str) -> None:
        """Make the mirror of `key` equal to the object (or the whole bucket when `key` is ""). Never
        raises. The embedded store calls it after each write to the bucket, before answering (LOC-3)."""
        if not key:
            self.save()
            return
        target = self.directory / key
        try:
            if not target.resolve().is_relative_to(self.directory.resolve()):
                return  # a key with `..` never writes outside the mirror
            try:
                body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                    raise
                target.unlink(missing_ok=True)
                return
            target.parent.mkdir(parents=True, exist_ok=True)
            partial = target.with_name(target.name + ".part")
            partial.write_bytes(body)
            partial.replace(target)
        except (BotoCoreError, ClientError, OSError) as exc:
            log.error("mirror of s3://%s/%s to %s failed: %s", self.bucket, key, target, exc)

    def save(self) -> None:
        """Write objects the directory lacks, remove files whose objects are gone. Never raises."""
        try:
            keys, files = self._keys(), self._files()
            for key in keys - files.keys():
                target = self.directory / key
                if not target.resolve().is_relative_to(self.directory.resolve()):
                    continue  # a key with `..` never writes outside the mirror
                target.parent.mkdir(parents=True, exist_ok=True)
                body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
                partial = target.with_name(target.name + ".part")
                partial.write_bytes(body)
                partial.replace(target)
            for key in files.keys() - keys:
                files[key].unlink(missing_ok=True)
        except (BotoCoreError, ClientError, OSError) as exc:
            log.error("mirror of bucket %s to %s failed: %s", self.bucket, self.directory, exc)
