"""Build the shipped tiktoken encodings (TOK-3) from the pinned npm package `tiktoken`.

The Lambda runtime has no network, so the layer carries `cl100k_base.tiktoken` and
`o200k_base.tiktoken`. OpenAI's blob storage is not reachable from here, but the npm package
`tiktoken` carries the same ranks in `encoders/<name>.json` as a compressed `bpe_ranks` string:
lines of `"! <offset> <b64> <b64> ..."` where the tokens take consecutive ranks from the offset.
Expanding that into `<b64 token> <rank>\\n` lines in rank order reproduces the official file byte
for byte, which this script proves by checking the SHA-256 that tiktoken itself expects (read from
the installed `tiktoken_ext/openai_public.py`, `expected_hash=`).

    python scripts/build_encodings.py            # fetch, convert, verify, write
    python scripts/build_encodings.py --check    # fetch, convert, verify, compare with shipped files
    python scripts/build_encodings.py --tarball tiktoken-1.0.22.tgz   # no registry access
"""

from __future__ import annotations

import argparse
import ast
import base64
import binascii
import hashlib
import importlib.util
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

NPM_PACKAGE = "tiktoken"
NPM_VERSION = "1.0.22"
# `npm view tiktoken@1.0.22 dist.integrity`; checked so a republished tarball cannot slip in.
NPM_INTEGRITY = (
    "sha512-PKvy1rVF1RibfF3JlXBSP0Jrcw2uq3yXdgcEXtKTYn3QJ/cBRBHDnrJ5jHky+MENZ6DIPwNUGWpkVx+7joCpNA=="
)
ENCODINGS = ("cl100k_base", "o200k_base")
REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "layers" / "chat_core" / "chat_core" / "encodings"


def official_hashes() -> dict[str, str]:
    """The `expected_hash=` of each encoding in the installed tiktoken's openai_public.py.

    Parsed, not imported-and-called: calling the constructors would download the files.
    """
    spec = importlib.util.find_spec("tiktoken_ext.openai_public")
    if spec is None or spec.origin is None:
        raise SystemExit("tiktoken is not installed in this interpreter; use .venv/bin/python")
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    hashes: dict[str, str] = {}
    for func in tree.body:
        if not isinstance(func, ast.FunctionDef) or func.name not in ENCODINGS:
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "load_tiktoken_bpe":
                for kw in node.keywords:
                    if kw.arg == "expected_hash" and isinstance(kw.value, ast.Constant):
                        hashes[func.name] = str(kw.value.value)
    missing = set(ENCODINGS) - hashes.keys()
    if missing:
        raise SystemExit(f"no expected_hash found for {sorted(missing)} in {spec.origin}")
    return hashes


def fetch_tarball(workdir: Path) -> Path:
    """`npm pack tiktoken@<pinned>` into workdir; returns the .tgz path."""
    spec = f"{NPM_PACKAGE}@{NPM_VERSION}"
    try:
        out = subprocess.run(
            ["npm", "pack", spec, "--json", "--silent"],
            cwd=workdir,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except FileNotFoundError as exc:
        raise SystemExit("npm is not on PATH; install Node.js or pass --tarball") from exc
    except subprocess.CalledProcessError as exc:
        raise SystemExit(f"npm pack {spec} failed:\n{exc.stderr}") from exc
    info = json.loads(out)[0]
    if info.get("integrity") != NPM_INTEGRITY:
        raise SystemExit(f"{spec}: integrity {info.get('integrity')} differs from the pinned {NPM_INTEGRITY}")
    return workdir / info["filename"]


def verify_integrity(tarball: Path) -> None:
    digest = base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if f"sha512-{digest}" != NPM_INTEGRITY:
        raise SystemExit(
            f"{tarball}: sha512 does not match the pinned integrity of {NPM_PACKAGE}@{NPM_VERSION}"
        )


def read_encoder_json(tarball: Path, name: str) -> dict[str, object]:
    member = f"package/encoders/{name}.json"
    with tarfile.open(tarball, "r:gz") as tar:
        handle = tar.extractfile(member)
        if handle is None:
            raise SystemExit(f"{tarball} has no {member}")
        data: dict[str, object] = json.loads(handle.read())
    return data


def bpe_ranks_to_tiktoken(bpe_ranks: str) -> bytes:
    """Expand the npm `bpe_ranks` string into the official `.tiktoken` bytes (rank order)."""
    ranks: dict[int, bytes] = {}
    seen: set[bytes] = set()
    for lineno, line in enumerate(bpe_ranks.split("\n"), start=1):
        if not line:
            continue
        marker, offset_text, *tokens = line.split(" ")
        if marker != "!" or not offset_text.isdigit():
            raise SystemExit(f"bpe_ranks line {lineno}: expected '! <offset> <b64>...', got {line[:40]!r}")
        offset = int(offset_text)
        for i, b64 in enumerate(tokens):
            try:
                token = base64.b64decode(b64, validate=True)
            except binascii.Error as exc:
                raise SystemExit(f"bpe_ranks line {lineno}: bad base64 {b64!r}") from exc
            rank = offset + i
            if rank in ranks or token in seen:
                raise SystemExit(f"bpe_ranks line {lineno}: duplicate rank {rank} or token {b64}")
            ranks[rank] = token
            seen.add(token)
    # Re-encoding normalises the base64 so the output does not depend on how npm spelled it.
    return b"".join(base64.b64encode(ranks[r]) + b" " + str(r).encode() + b"\n" for r in sorted(ranks))


def build(tarball: Path) -> dict[str, bytes]:
    verify_integrity(tarball)
    hashes = official_hashes()
    built: dict[str, bytes] = {}
    for name in ENCODINGS:
        encoder = read_encoder_json(tarball, name)
        bpe_ranks = encoder.get("bpe_ranks")
        if not isinstance(bpe_ranks, str):
            raise SystemExit(f"{name}.json has no string bpe_ranks field")
        data = bpe_ranks_to_tiktoken(bpe_ranks)
        actual = hashlib.sha256(data).hexdigest()
        if actual != hashes[name]:
            raise SystemExit(f"{name}: sha256 {actual} differs from tiktoken's expected {hashes[name]}")
        built[name] = data
        print(f"{name}: {data.count(b'\n')} ranks, {len(data):,} bytes, sha256 {actual} (matches tiktoken)")
    return built


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tarball", type=Path, help=f"a local {NPM_PACKAGE}-{NPM_VERSION}.tgz instead of npm pack"
    )
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR, help="where to write <name>.tiktoken")
    parser.add_argument(
        "--check", action="store_true", help="compare with the files in --out-dir, write nothing"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="tiktoken-npm-") as tmp:
        tarball = args.tarball or fetch_tarball(Path(tmp))
        built = build(tarball)

    if args.check:
        stale = [n for n, data in built.items() if _read(args.out_dir / f"{n}.tiktoken") != data]
        if stale:
            print(f"out of date in {args.out_dir}: {', '.join(stale)}; run scripts/build_encodings.py")
            return 1
        print(f"{args.out_dir}: up to date")
        return 0

    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, data in built.items():
        target = args.out_dir / f"{name}.tiktoken"
        partial = target.with_suffix(".tiktoken.partial")
        partial.write_bytes(data)
        partial.replace(target)  # atomic: a reader never sees half a file
        print(f"wrote {target.relative_to(REPO) if target.is_relative_to(REPO) else target}")
    return 0


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


if __name__ == "__main__":
    sys.exit(main())
