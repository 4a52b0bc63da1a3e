"""Java properties parsing, as ``java.util.Properties.load`` reads a file."""

from __future__ import annotations

import pytest

from millpond.broker.config import ConfigError
from millpond.broker.config_defs_properties import (
    decode_properties,
    parse_override,
    parse_properties,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b", {"a": "b"}),
        ("a:b", {"a": "b"}),
        ("a b", {"a": "b"}),
        ("a\tb", {"a": "b"}),
        ("a \t = \t b", {"a": "b"}),
        ("a = : b", {"a": ": b"}),  # one separator only; the second is part of the value
        ("a == b", {"a": "= b"}),
        ("a  b c ", {"a": "b c "}),  # trailing blanks kept
        ("   a=b", {"a": "b"}),  # leading blanks skipped
        ("\f a=b", {"a": "b"}),
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("=b", {"": "b"}),
        ("a=b\na=c", {"a": "c"}),  # the last duplicate wins
        ("a=b\r\nc=d\re=f\n", {"a": "b", "c": "d", "e": "f"}),
    ],
)
def test_separators_and_blanks(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_comments_and_blank_lines() -> None:
    text = "# comment\n! also a comment\n\n   \n  # indented comment\na=b # not a comment\n"
    assert parse_properties(text) == {"a": "b # not a comment"}


def test_continuation_lines() -> None:
    text = "a=one, \\\n    two, \\\n\tthree\nb=x"
    assert parse_properties(text) == {"a": "one, two, three", "b": "x"}


def test_continued_line_is_never_a_comment_and_comment_never_continues() -> None:
    assert parse_properties("a=b\\\n  #c") == {"a": "b#c"}
    assert parse_properties("# note \\\na=b") == {"a": "b"}


def test_even_backslashes_do_not_continue() -> None:
    assert parse_properties("a=b\\\\\nc=d") == {"a": "b\\", "c": "d"}


def test_empty_continuation_line_ends_the_entry() -> None:
    assert parse_properties("a=b\\\n\nc=d") == {"a": "b", "c": "d"}


def test_trailing_backslash_at_end_of_file_is_dropped() -> None:
    assert parse_properties("a=b\\") == {"a": "b"}


def test_continuation_key_spans_lines() -> None:
    assert parse_properties("log.\\\n  dirs=/x") == {"log.dirs": "/x"}


def test_escapes() -> None:
    text = r"a\=b\:c\ d=\t\n\r\f\\\q\#"
    assert parse_properties(text) == {"a=b:c d": "\t\n\r\f\\q#"}


def test_unicode_escapes() -> None:
    assert parse_properties(r"k\u00e9y=caf\u00E9 \u263a") == {"kéy": "café ☺"}


@pytest.mark.parametrize("bad", [r"a=\u12", r"a=\u12zz", r"a=\uXYZW"])
def test_malformed_unicode_escape_names_the_line(bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_properties("x=1\n" + bad, "server.properties")
    assert info.value.key == "server.properties:2"
    assert "uXXXX" in str(info.value)


def test_decoding_utf8_latin1_and_bom() -> None:
    assert decode_properties("a=é".encode()) == "a=é"
    assert decode_properties(b"a=\xe9") == "a=é"  # not UTF-8: ISO-8859-1 as Java reads it
    assert decode_properties(b"\xef\xbb\xbfa=b") == "a=b"


def test_overrides_split_at_first_equals() -> None:
    assert parse_override("a=b=c") == ("a", "b=c")
    assert parse_override("a") == ("a", "")
    assert parse_override("a= b ") == ("a", " b ")
    with pytest.raises(ConfigError):
        parse_override("=b")
