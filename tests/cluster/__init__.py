"""Multi-process clusters under faults: nodes as ``millpond serve`` processes, each in its
own network namespace, with kill -9, SIGSTOP and iptables partitions between them."""
