"""millpond.broker: the server a Kafka client talks to.

A request arrives on a listener's connection (:mod:`~millpond.broker.server`), is
decoded and routed by API key (:mod:`~millpond.broker.dispatch`) to one handler module
per API (:mod:`millpond.broker.handlers`), which reaches partitions through the replica
manager (:mod:`~millpond.broker.replica_manager`), groups through their coordinator
(:mod:`millpond.broker.groups`) and cluster metadata through the controller and its
metadata image. :class:`~millpond.broker.node.Broker` wires these together for one
process; configuration under Kafka's names is :mod:`~millpond.broker.config`, and the
test-only control plane (faults, clock, state) is :mod:`millpond.broker.control`.
May import the controller, storage and wire layers.
"""
