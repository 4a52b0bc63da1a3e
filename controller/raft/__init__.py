"""KRaft's consensus: the replicated ``__cluster_metadata`` log as Kafka's controllers run it.

``node`` is one replica's state machine (elections with pre-vote, fetch-based
replication, snapshots, voter changes); ``keys``, ``messages``, ``log`` and ``config`` are
its vocabulary and the interfaces it is driven through; ``kafka_log`` and
``quorum_state`` are those interfaces in Kafka's on-disk formats, over the injected file
system; ``client`` tells the state machine above what committed and who leads. Nothing
here opens a socket or reads the clock.
"""
