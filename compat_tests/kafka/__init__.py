"""The reference Apache Kafka 4.4 from Maven Central (reference.py, pom.xml, install.sh)."""
