"""KRaft's consensus: the replicated ``__cluster_metadata`` log as Kafka's controllers run it.

``node`` is one replica's state machine (elections with pre-vote, fetch-based
replication, snapshots, voter changes); ``keys``, ``messages``, ``log`` and ``config`` are
its vocabulary and the interfaces it is driven through. Nothing here touches a socket,
a file or the clock.
"""
