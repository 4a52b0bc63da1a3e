"""Kafka's ``ConfigDef`` for millpond: config types, validators, and value parsing.

A :class:`ConfigDefinition` is one row of the table Kafka builds with ``ConfigDef.define``:
the name, Kafka's type, the default (as the string DescribeConfigs reports), importance,
a short description in our own words, and a validator. The topic configs' rows live beside
the log in :mod:`millpond.storage.topic_configs`; the broker's own rows build on them in
``millpond.broker.config_defs_*``.

Values are parsed as Kafka's ``ConfigDef.parseType`` parses strings: trimmed; booleans are
``true``/``false`` in any case; integers are decimal with an optional sign and must fit
Java's ``int``/``short``/``long``; lists are split on commas with the blanks around them
dropped (an empty string is an empty list). A value that does not parse or validate
raises :class:`ConfigError`, whose message names the key, the value and what is allowed.

``used`` marks the settings millpond acts on; every other row is a Kafka setting that
millpond accepts (so a real ``server.properties`` loads) but ignores, and its
documentation says so.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import NamedTuple

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
DOUBLE_MAX = 1.7976931348623157e308

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
DAY_MS = 24 * HOUR_MS

IGNORED_NOTE = " millpond accepts this setting for compatibility and ignores it."


class ConfigType(enum.IntEnum):
    """Kafka's ConfigDef types, numbered as DescribeConfigsResponse.ConfigType."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Importance(enum.Enum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class ConfigError(ValueError):
    """An invalid configuration value (Kafka's INVALID_CONFIG, or a broker that will not
    start); ``key`` names the setting, because that name is what an operator typed, and
    ``value`` is what was given (left out of the message when ``hide``: a secret)."""

    def __init__(self, key: str, value: str | None, reason: str, *, hide: bool = False) -> None:
        shown = "(hidden)" if hide else "(missing)" if value is None else repr(value)
        super().__init__(f"{key}: invalid value {shown}: {reason}")
        self.key = key
        self.value = value
        self.reason = reason


#: A typed configuration value: what :func:`parse_value` returns.
Value = bool | int | float | str | tuple[str, ...] | None

Validator = Callable[[Value], str | None]
"""Returns None when the value is acceptable, else the reason (what is allowed)."""


def at_least(low: int | float) -> Validator:
    def check(value: Value) -> str | None:
        if isinstance(value, int | float) and not isinstance(value, bool) and value < low:
            return f"must be at least {low}"
        return None

    return check


def between(low: int | float, high: int | float) -> Validator:
    def check(value: Value) -> str | None:
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and not low <= value <= high:  # type: ignore[operator]
            return f"must be between {low} and {high}"
        return None

    return check


def one_of(*choices: str, case_insensitive: bool = False) -> Validator:
    folded = {c.lower() for c in choices}

    def check(value: Value) -> str | None:
        if value is None:
            return None
        text = str(value)
        ok = text.lower() in folded if case_insensitive else text in choices
        return None if ok else f"must be one of: {', '.join(choices)}"

    return check


def list_of(*choices: str, allow_empty: bool = True, case_insensitive: bool = False) -> Validator:
    """Kafka's ValidList: every item among ``choices`` (any item if none given), no
    duplicates, and an empty list only when ``allow_empty``."""
    folded = {c.lower() for c in choices}

    def check(value: Value) -> str | None:
        if not isinstance(value, tuple):
            return None
        if not value and not allow_empty:
            return "must not be empty"
        if len(set(value)) != len(value):
            return "must not contain duplicates"
        for item in value:
            if not item:
                return "must not contain empty items"
            if choices:
                ok = item.lower() in folded if case_insensitive else item in choices
                if not ok:
                    return f"each item must be one of: {', '.join(choices)}"
        return None

    return check


def int_levels(low: int, high: int, *extra: int) -> Validator:
    def check(value: Value) -> str | None:
        if isinstance(value, int) and not (low <= value <= high or value in extra):
            also = "".join(f" or {e}" for e in extra)
            return f"must be between {low} and {high}{also}"
        return None

    return check


_NO_DEFAULT = "\0no-default"


class ConfigDefinition(NamedTuple):
    """One Kafka configuration key. ``default`` is the string DescribeConfigs reports for
    the default (None for a null default); ``kafka_default`` is Kafka's own default where
    millpond's differs."""

    name: str
    type: ConfigType
    default: str | None
    importance: Importance
    doc: str
    validator: Validator | None = None
    used: bool = False
    dynamic: bool = False
    kafka_default: str | None = _NO_DEFAULT

    @property
    def documentation(self) -> str:
        """What DescribeConfigs reports: the description, the note for ignored keys, and
        Kafka's own default where millpond's differs."""
        text = self.doc
        if self.kafka_default != _NO_DEFAULT and self.kafka_default != self.default:
            text += f" (millpond's default; Kafka's is {self.kafka_default or 'unset'}.)"
        if not self.used:
            text += IGNORED_NOTE
        return text

    @property
    def sensitive(self) -> bool:
        return self.type is ConfigType.PASSWORD


def define(
    name: str,
    type_: ConfigType,
    default: object,
    importance: Importance,
    doc: str,
    validator: Validator | None = None,
    *,
    used: bool = False,
    dynamic: bool = False,
    kafka_default: object = _NO_DEFAULT,
) -> ConfigDefinition:
    """A row of the table; ``default`` may be a Python value, rendered as Kafka would."""
    kafka = kafka_default if kafka_default == _NO_DEFAULT else to_kafka_string(kafka_default)
    return ConfigDefinition(
        name=name,
        type=type_,
        default=to_kafka_string(default),
        importance=importance,
        doc=doc,
        validator=validator,
        used=used,
        dynamic=dynamic,
        kafka_default=kafka if isinstance(kafka, str) or kafka is None else _NO_DEFAULT,
    )


def table(rows: Sequence[ConfigDefinition]) -> dict[str, ConfigDefinition]:
    out: dict[str, ConfigDefinition] = {}
    for row in rows:
        if row.name in out:
            raise AssertionError(f"config {row.name} defined twice")
        out[row.name] = row
    return out


# -- rendering and parsing -----------------------------------------------------------------


def java_double(value: float) -> str:
    """``Double.toString``: the shortest digits that round-trip (as Python's ``repr``),
    in plain notation for magnitudes in [1e-3, 1e7) and as ``d.dddEn`` otherwise."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    parts = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in parts.digits)
    assert isinstance(parts.exponent, int)
    point = len(digits) + parts.exponent  # digits before the decimal point
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def to_kafka_string(value: object) -> str | None:
    """A Python value as Kafka's ``ConfigDef.convertToString`` renders it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)")
_LIST_SPLIT = re.compile(r"\s*,\s*")
_TYPE_RANGES = {
    ConfigType.INT: (INT_MIN, INT_MAX),
    ConfigType.SHORT: (SHORT_MIN, SHORT_MAX),
    ConfigType.LONG: (LONG_MIN, LONG_MAX),
}


def parse_list(text: str) -> tuple[str, ...]:
    """Kafka's LIST parsing: trimmed, empty means empty, comma-separated with blanks around
    commas dropped (and, as Java's ``String.split`` does, trailing empty items)."""
    text = text.strip()
    if not text:
        return ()
    items = _LIST_SPLIT.split(text)
    while items and not items[-1]:
        items.pop()
    return tuple(items)


def parse_value(definition: ConfigDefinition, raw: str) -> Value:
    """Parse and validate ``raw`` for ``definition``; raises :class:`ConfigError`."""
    key, kind = definition.name, definition.type
    text = raw.strip()
    value: Value
    if kind is ConfigType.BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ConfigError(key, raw, "expected true or false")
        value = text.lower() == "true"
    elif kind in _TYPE_RANGES:
        low, high = _TYPE_RANGES[kind]
        if not _JAVA_INTEGER.fullmatch(text):
            raise ConfigError(key, raw, f"expected a whole number ({kind.name.lower()})")
        value = int(text)
        if not low <= value <= high:
            raise ConfigError(key, raw, f"out of range for a {kind.name.lower()}")
    elif kind is ConfigType.DOUBLE:
        if not _JAVA_DOUBLE.fullmatch(text):
            raise ConfigError(key, raw, "expected a number")
        value = float(text.rstrip("fFdD"))
    elif kind is ConfigType.LIST:
        value = parse_list(text)
    else:  # STRING, CLASS, PASSWORD
        value = text
    if definition.validator is not None:
        reason = definition.validator(value)
        if reason is not None:
            raise ConfigError(key, raw, reason)
    return value


def check_value(definition: ConfigDefinition, value: Value) -> None:
    """Check an already typed ``value`` as :func:`parse_value` checks a parsed one (its
    Python type, the Java type's range, the validator); raises :class:`ConfigError`."""
    kind = definition.type
    if kind in _TYPE_RANGES:
        low, high = _TYPE_RANGES[kind]
        ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        expected = f"a {kind.name.lower()}"
    elif kind is ConfigType.DOUBLE:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        expected = "a number"
    elif kind is ConfigType.BOOLEAN:
        ok, expected = isinstance(value, bool), "true or false"
    elif kind is ConfigType.LIST:
        ok = isinstance(value, tuple) and all(isinstance(v, str) for v in value)
        expected = "a list of strings"
    else:
        ok, expected = isinstance(value, str), "a string"
    reason = None if ok else f"expected {expected}"
    if reason is None and definition.validator is not None:
        reason = definition.validator(value)
    if reason is not None:
        raise ConfigError(definition.name, to_kafka_string(value), reason)


def default_value(definition: ConfigDefinition) -> Value:
    """The typed default (None for a null default)."""
    if definition.default is None:
        return None
    kind = definition.type
    if kind is ConfigType.BOOLEAN:
        return definition.default == "true"
    if kind in _TYPE_RANGES:
        return int(definition.default)
    if kind is ConfigType.DOUBLE:
        return float(definition.default)
    if kind is ConfigType.LIST:
        return parse_list(definition.default)
    return definition.default


# Short names the definition tables use (topic_configs, the broker's config_defs_*).
BOOL, STR, INT, SHORT, LONG, DOUBLE, LIST, CLASS = (
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.CLASS,
)
HIGH, MEDIUM, LOW = Importance.HIGH, Importance.MEDIUM, Importance.LOW
