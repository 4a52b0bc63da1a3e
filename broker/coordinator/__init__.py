"""What the broker's coordinators share: a runtime that keeps one state machine (a shard)
per partition of a coordinator's internal topic, loads it from that partition's records,
appends what its operations produce and answers them once the records are committed.
The group coordinator is its first shard type; the transaction and share coordinators
will be others.
"""
