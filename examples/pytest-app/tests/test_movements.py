"""The application against a real broker, started by millpond's pytest plugin."""

import pytest

from inventory import publish_movements, stock_levels
from inventory.movements import TOPIC


def test_levels_sum_every_movement(millpond_broker):
    movements = [("apple", 10), ("pear", 4), ("apple", -3), ("pear", -4), ("fig", 1)]
    assert publish_movements(millpond_broker.bootstrap_servers, movements) == 5
    levels = stock_levels(millpond_broker.bootstrap_servers, "levels", expected=5)
    assert levels == {"apple": 7, "pear": 0, "fig": 1}


@pytest.mark.millpond_config(num_partitions=4)
def test_one_skus_movements_stay_in_order_on_one_partition(millpond_broker):
    movements = [("apple", n) for n in range(1, 6)] + [("pear", n) for n in range(1, 4)]
    publish_movements(millpond_broker.bootstrap_servers, movements)
    stored = millpond_broker.records(TOPIC)
    assert {r.partition for r in stored} <= set(range(4))
    for sku in ("apple", "pear"):
        mine = [r for r in stored if r.key == sku.encode()]
        assert len({r.partition for r in mine}) == 1
        assert [int(r.value) for r in mine] == list(range(1, len(mine) + 1))


def test_a_second_group_reads_everything_again(millpond_broker):
    publish_movements(millpond_broker.bootstrap_servers, [("fig", 2), ("fig", 3)])
    assert stock_levels(millpond_broker.bootstrap_servers, "first", expected=2) == {"fig": 5}
    assert stock_levels(millpond_broker.bootstrap_servers, "second", expected=2) == {"fig": 5}
