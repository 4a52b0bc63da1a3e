"""The broker's control plane for tests: fault injection into the Kafka requests it
serves, a clock that can be frozen and advanced, forced rebalances and live state, used
from Python (``millpond.testing``) and over loopback HTTP (``millpond.control.port``)."""

#: The config that turns the HTTP endpoint on (its port; 0 picks a free one).
CONTROL_PORT_KEY = "millpond.control.port"
