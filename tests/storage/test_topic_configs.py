"""The topic configs' one table: the log's settings come from it, the controller checks
with it, and neither needs the broker layer to do so."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from millpond.storage.config import ConfigError, LogConfig
from millpond.storage.config_def import default_value
from millpond.storage.topic_configs import TOPIC_CONFIGS, parse_topic_configs


def test_every_log_setting_is_a_topic_config_with_its_default() -> None:
    defaults = LogConfig()
    for field, value in zip(LogConfig._fields, defaults, strict=True):
        row = TOPIC_CONFIGS[field.replace("_", ".")]
        assert default_value(row) == value, field


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"compression.type": "brotli"}, "compression.type"),  # not a log setting
        ({"min.insync.replicas": "0"}, "min.insync.replicas"),
        ({"preallocate": "maybe"}, "preallocate"),
        ({"cleanup.policy": "compact,compact"}, "cleanup.policy"),
        ({"message.format.version": "3.0"}, "message.format.version"),  # gone in Kafka 4
    ],
)
def test_the_log_and_the_table_refuse_alike(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as parsed:
        parse_topic_configs(props)
    with pytest.raises(ConfigError) as built:
        LogConfig.from_properties(props)
    assert parsed.value.key == built.value.key == key


def test_a_direct_construction_is_checked_by_the_same_rows() -> None:
    with pytest.raises(ConfigError) as info:
        LogConfig(min_cleanable_dirty_ratio=1.5)
    assert info.value.key == "min.cleanable.dirty.ratio"
    with pytest.raises(ConfigError) as info:
        LogConfig(segment_bytes=2**31)  # over Java's int
    assert info.value.key == "segment.bytes"


def test_the_controller_validates_topic_configs_without_the_broker_layer() -> None:
    code = (
        "import sys, json\n"
        "from millpond.controller.config_control import validate_topic_configs\n"
        "bad = validate_topic_configs({'preallocate': 'maybe'})\n"
        "good = validate_topic_configs({'retention.ms': '5', 'compression.type': 'zstd'})\n"
        "broker = sorted(m for m in sys.modules if m.startswith('millpond.broker'))\n"
        "print(json.dumps([int(bad.code), int(good.code), broker]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert json.loads(out) == [40, 0, []]  # INVALID_CONFIG, NONE, no broker module
