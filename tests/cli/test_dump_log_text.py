"""dump-log prints record bytes as Kafka's tool does, through Java's ``new String(bytes,
UTF_8)``: malformed UTF-8 is replaced as Java replaces it. Each expected string below is
what Java 17 printed for the bytes (UTF-16 code units), recorded on this machine."""

from __future__ import annotations

import struct

import pytest

from millpond.cli.dump_log import java_text

#: bytes (hex) -> Java's decoding, as UTF-16 code units (hex).
JAVA_17 = {
    "41": "0041",
    "c3a9": "00e9",
    "e282ac": "20ac",
    "f09f9880": "d83d de00",
    "f09f98": "fffd",
    "e282": "fffd",
    "c2": "fffd",
    "80": "fffd",
    "ff41": "fffd 0041",
    "eda080": "fffd",
    "edbfbf41": "fffd 0041",
    "ed9fbf": "d7ff",
    # Where Python's own "replace" differs: an encoded surrogate is one unit in Java.
    "01edbfbfed": "0001 fffd fffd",
    "0b88edb6f4": "000b fffd fffd fffd",
    "12edbf41e2": "0012 fffd 0041 fffd",
    "12edbfeb": "0012 fffd fffd",
    "14f574eda3": "0014 fffd 0074 fffd",
    "16c2edbf70": "0016 fffd fffd 0070",
    "21eda7": "0021 fffd",
    "230dd1edbf": "0023 000d fffd fffd",
    "3016edb59c": "0030 0016 fffd",
}


def _units(text: str) -> str:
    raw = text.encode("utf-16-le")
    return " ".join(f"{u:04x}" for u in struct.unpack(f"<{len(raw) // 2}H", raw))


@pytest.mark.parametrize(("data", "java"), sorted(JAVA_17.items()))
def test_bytes_print_as_java_decodes_them(data: str, java: str) -> None:
    assert _units(java_text(bytes.fromhex(data))) == java


def test_python_replace_differs_where_java_keeps_a_surrogate_whole() -> None:
    """The cases above are not vacuous: Python's own decoder disagrees with Java here."""
    assert _units(bytes.fromhex("21eda7").decode("utf-8", "replace")) == "0021 fffd fffd"
    assert java_text(None) == ""
