"""TOK-1: the byte-based estimate that other code relies on exactly."""

from chat_core.engine.tokens import estimate_message_tokens
from hypothesis import given
from hypothesis import strategies as st


def test_tok1_empty_is_zero() -> None:
    assert estimate_message_tokens("") == 0


def test_tok1_rounds_utf8_bytes_up_over_four() -> None:
    assert estimate_message_tokens("S") == 1
    assert estimate_message_tokens("AAAA") == 1
    assert estimate_message_tokens("AAAAA") == 2
    assert estimate_message_tokens("你好") == 2  # 6 bytes


def test_tok1_lone_surrogate_is_three_bytes_not_an_error() -> None:
    # Given content with a lone surrogate, which json.loads accepts from a client
    # When estimated
    # Then it counts as the 3 bytes such a code point takes, instead of raising
    assert estimate_message_tokens("ab\ud800c") == 2  # 1 + 3 + 1 = 5 bytes


@given(st.text())
def test_tok1_formula_holds_for_any_text(text: str) -> None:
    # Given any text
    size = len(text.encode("utf-8", "surrogatepass"))
    # When estimated
    # Then it is exactly ceil(bytes / 4), at least 1 for non-empty text, 0 for ""
    expected = 0 if not text else max(1, -(-size // 4))
    assert estimate_message_tokens(text) == expected
