"""The admin APIs' routes (topics, configs, records, log dirs, cluster, producers,
features), one module each, at the ranges Apache Kafka 4.4 advertises."""

from millpond.broker.dispatch import Route
from millpond.broker.handlers import (
    alter_configs,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_cluster,
    describe_configs,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    incremental_alter_configs,
    update_features,
)

ADMIN_ROUTES: tuple[Route, ...] = (
    create_topics.ROUTE,  # 19: 2-7
    delete_topics.ROUTE,  # 20: 1-6
    delete_records.ROUTE,  # 21: 0-2
    describe_configs.ROUTE,  # 32: 1-4
    alter_configs.ROUTE,  # 33: 0-2
    describe_log_dirs.ROUTE,  # 35: 1-5
    create_partitions.ROUTE,  # 37: 0-3
    incremental_alter_configs.ROUTE,  # 44: 0-1
    update_features.ROUTE,  # 57: 0-2
    describe_cluster.ROUTE,  # 60: 0-2
    describe_producers.ROUTE,  # 61: 0
    describe_topic_partitions.ROUTE,  # 75: 0
)
