"""Java ``.properties`` files, read as ``java.util.Properties.load`` reads them.

* A natural line ends at ``\\n``, ``\\r`` or ``\\r\\n``. Leading blanks (space, tab, form
  feed) are skipped; a line that is then empty, or starts with ``#`` or ``!``, is skipped.
* A line ending in an odd number of backslashes continues on the next line: the backslash
  goes, and so do the next line's leading blanks. A continued line is never a comment,
  and a comment line never continues. An empty continuation line ends the entry.
* The key ends at the first unescaped ``=``, ``:`` or blank; blanks around the separator
  are skipped, and one ``=`` or ``:`` after blanks is the separator. The rest of the line
  is the value, trailing blanks included.
* In keys and values ``\\t``, ``\\n``, ``\\r``, ``\\f`` and ``\\uXXXX`` are escapes; a
  backslash before any other character stands for that character.
* A later duplicate key replaces an earlier one.

One difference: Java reads the bytes as ISO-8859-1 (non-Latin-1 text must be written as
``\\uXXXX``); :func:`decode_properties` accepts UTF-8 too, falling back to ISO-8859-1
for bytes that are not UTF-8, and drops a leading byte-order mark.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from millpond.storage.config_def import ConfigError

_BLANKS = " \t\f"
_NEWLINE = re.compile(r"\r\n|\r|\n")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def decode_properties(data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return text.removeprefix("\ufeff")


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    parts: list[str] | None = None
    first = 0
    for number, natural in enumerate(_NEWLINE.split(text), 1):
        line = natural.lstrip(_BLANKS)
        if parts is None:
            if not line or line[0] in "#!":
                continue
            parts, first = [], number
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            parts.append(line[:-1])
            continue
        parts.append(line)
        yield first, "".join(parts)
        parts = None
    if parts is not None:  # the file ended right after a continuation backslash
        yield first, "".join(parts)


def _unescape(text: str, where: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, end = 0, len(text)
    while i < end:
        char = text[i]
        i += 1
        if char != "\\" or i >= end:
            out.append(char)
            continue
        char = text[i]
        i += 1
        if char == "u":
            digits = text[i : i + 4]
            if len(digits) < 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(where, text, "malformed \\uXXXX escape")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(char, char))
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    key_end, value_start, separated, escaped = 0, len(line), False, False
    while key_end < len(line):
        char = line[key_end]
        if not escaped and char in "=:":
            value_start, separated = key_end + 1, True
            break
        if not escaped and char in _BLANKS:
            value_start = key_end + 1
            break
        escaped = not escaped if char == "\\" else False
        key_end += 1
    while value_start < len(line):
        char = line[value_start]
        if char not in _BLANKS:
            if separated or char not in "=:":
                break
            separated = True
        value_start += 1
    return line[:key_end], line[value_start:]


def parse_properties(text: str, source: str = "properties") -> dict[str, str]:
    """The key/value pairs of a properties file's text, in file order (a duplicate key
    keeps its first position and its last value). Raises :class:`ConfigError` naming
    ``source`` and the line for a malformed ``\\u`` escape."""
    props: dict[str, str] = {}
    for number, line in _logical_lines(text):
        where = f"{source}:{number}"
        raw_key, raw_value = _split(line)
        props[_unescape(raw_key, where)] = _unescape(raw_value, where)
    return props


def parse_override(arg: str) -> tuple[str, str]:
    """One ``--override key=value``: split at the first ``=``, as Kafka's command line
    does; a missing ``=`` gives an empty value."""
    key, _, value = arg.partition("=")
    if not key:
        raise ConfigError("--override", arg, "expected key=value")
    return key, value
