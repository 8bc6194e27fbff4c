"""TOK-1: the byte-based estimate that other code relies on exactly."""

from chat_core.tokens import estimate_message_tokens


def test_tok1_empty_is_zero() -> None:
    assert estimate_message_tokens("") == 0


def test_tok1_rounds_utf8_bytes_up_over_four() -> None:
    assert estimate_message_tokens("S") == 1
    assert estimate_message_tokens("AAAA") == 1
    assert estimate_message_tokens("AAAAA") == 2
    assert estimate_message_tokens("你好") == 2  # 6 bytes
