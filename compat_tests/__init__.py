"""Real clients and the real Apache Kafka broker, run against millpond and as references."""
