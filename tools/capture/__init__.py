"""Records golden protocol bytes from real Kafka clients and a real Kafka broker (run.py)."""
