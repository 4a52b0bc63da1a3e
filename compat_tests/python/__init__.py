"""Drivers for the Python clients (kafka-python, confluent-kafka, aiokafka): see ../SCENARIOS.md."""
