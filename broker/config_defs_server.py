"""Broker configs for the node itself: identity, KRaft roles and quorum, listeners and
sockets, threads, metadata log. Kafka's names, types, defaults and ranges; millpond's
defaults differ only where a one-process broker on a laptop needs them to (each such
row says so in its documentation)."""

from __future__ import annotations

from millpond.broker.emulation import CONFIG_KEY as EMULATE_KEY
from millpond.broker.emulation import RELEASES as EMULATED_RELEASES
from millpond.storage.config_def import (
    BOOL,
    DAY_MS,
    HIGH,
    HOUR_MS,
    INT,
    INT_MAX,
    LIST,
    LONG,
    LONG_MAX,
    LOW,
    MEDIUM,
    STR,
    ConfigDefinition,
    at_least,
    define,
    list_of,
    one_of,
    table,
)

MIB = 1024 * 1024
TRACE_FILE_KEY = "millpond.trace.file"
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
#: Kafka's default listener.security.protocol.map: each protocol names a listener.
DEFAULT_SECURITY_PROTOCOL_MAP = (
    "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"
)
#: millpond's default listener: loopback only, so nothing is exposed unless asked.
DEFAULT_LISTENERS = "PLAINTEXT://127.0.0.1:9092"

_ROWS: list[ConfigDefinition] = [
    # identity and KRaft roles
    define("node.id", INT, 1, HIGH,
           "This node's id in the cluster, as broker and as controller. Kafka requires it; "
           "millpond defaults to 1.", at_least(0), used=True),
    define("broker.id", INT, -1, HIGH,
           "Deprecated alias of node.id; when both are set they must agree.", used=True),
    define("process.roles", LIST, "broker,controller", HIGH,
           "Roles this process plays: broker, controller or both. Kafka requires it; "
           "millpond defaults to both (combined mode).",
           list_of("broker", "controller", allow_empty=False), used=True),
    define("controller.listener.names", LIST, "", HIGH,
           "Names of the listeners the controller uses; those listeners are not advertised "
           "to clients; a broker-only node reaches its controllers through the first. "
           "Kafka requires it; a single node's in-process controller needs none.",
           list_of(), used=True),
    define("sasl.mechanism.controller.protocol", STR, "GSSAPI", HIGH,
           "SASL mechanism for connections to the controllers. millpond has no SASL yet: "
           "a broker given this setting refuses to start.", used=True),
    define("initial.broker.registration.timeout.ms", INT, 60_000, MEDIUM,
           "How long a starting broker waits to register with the controller (in a quorum "
           "of several; a single node's broker registers with the controller beside it).",
           used=True),
    define("broker.heartbeat.interval.ms", INT, 2000, MEDIUM,
           "Interval between a broker's heartbeats to the controller (in a quorum of "
           "several; a single node's broker is always with its controller).", used=True),
    define("broker.session.timeout.ms", INT, 9000, MEDIUM,
           "How long the controller keeps a broker's lease without a heartbeat (in a "
           "quorum of several; a single node's broker is always with its controller).", used=True),
    define("millpond.broker.disconnect.fence.ms", INT, 3000, MEDIUM,
           "millpond only: the active controller fences a broker this long after the "
           "connection it heartbeats on closes, unless it heartbeats again first: a killed "
           "broker's partitions get new leaders in seconds, not after broker.session.timeout.ms "
           "(a broker cut off without its connection closing still waits out the session). "
           "Keep it above broker.heartbeat.interval.ms, so that a live broker reconnecting "
           "is not fenced; -1 turns it off (Kafka's behaviour).", at_least(-1), used=True),
    define("broker.rack", STR, None, MEDIUM,
           "Rack of this broker, reported in Metadata responses.", used=True),
    # the metadata quorum
    define("controller.quorum.voters", LIST, "", HIGH,
           "Static quorum voters as id@host:port entries, this node among them; unset, "
           "the node is the one voter of its own quorum.", list_of(), used=True),
    define("controller.quorum.bootstrap.servers", LIST, "", HIGH,
           "host:port of controllers to contact to discover the quorum. millpond's quorum "
           "is this node alone: unset, or this node's controller listeners; any other "
           "value stops the start.", list_of(), used=True),
    define("controller.quorum.election.timeout.ms", INT, 1000, HIGH,
           "How long a voter waits without a leader before starting an election.",
           at_least(0), used=True),
    define("controller.quorum.fetch.timeout.ms", INT, 2000, HIGH,
           "How long a follower waits for a successful fetch from the leader before it "
           "becomes a candidate.", at_least(0), used=True),
    define("controller.quorum.election.backoff.max.ms", INT, 1000, HIGH,
           "Upper bound of the randomised back-off before a new election.", at_least(0), used=True),
    define("controller.quorum.append.linger.ms", INT, 25, MEDIUM,
           "How long the quorum leader gathers records before writing a batch.",
           at_least(0)),
    define("controller.quorum.request.timeout.ms", INT, 2000, MEDIUM,
           "How long a quorum request waits for its answer.", at_least(0), used=True),
    define("controller.quorum.retry.backoff.ms", INT, 20, LOW,
           "Pause before retrying a failed quorum request.", at_least(0), used=True),
    define("controller.quorum.auto.join.enable", BOOL, False, LOW,
           "Whether a controller adds itself to the voters automatically."),
    define("controller.quorum.fetch.snapshot.max.bytes", INT, MIB, LOW,
           "Largest snapshot chunk returned by one FetchSnapshot.", at_least(1), used=True),
    define("controller.quorum.fetch.max.bytes", INT, MIB, LOW,
           "Largest amount of metadata log returned by one quorum Fetch.", at_least(1), used=True),
    # the metadata log
    define("metadata.log.dir", STR, None, HIGH,
           "Directory of the metadata log (__cluster_metadata); defaults to the first log "
           "directory.", used=True),
    define("metadata.log.segment.bytes", INT, 1024 * MIB, HIGH,
           "Segment size of the metadata log.", at_least(8 * MIB), used=True),
    define("metadata.log.segment.ms", LONG, 7 * DAY_MS, HIGH,
           "Age after which a metadata log segment is rolled.", used=True),
    define("metadata.max.retention.bytes", LONG, 100 * MIB, HIGH,
           "Metadata log and snapshot bytes kept before the oldest snapshot and the log "
           "before the next one are deleted.", used=True),
    define("metadata.max.retention.ms", LONG, 7 * DAY_MS, HIGH,
           "Age of its newest record after which the oldest snapshot and the log before "
           "the next one are deleted.", used=True),
    define("metadata.log.max.record.bytes.between.snapshots", LONG, 20 * MIB, HIGH,
           "Committed metadata log bytes after which a node writes a new snapshot.",
           at_least(1), used=True),
    define("metadata.log.max.snapshot.interval.ms", LONG, HOUR_MS, HIGH,
           "Longest time between metadata snapshots when records were written; 0 turns "
           "time-based snapshots off.", at_least(0), used=True),
    define("metadata.max.idle.interval.ms", INT, 500, LOW,
           "How often the quorum leader writes a no-op record when idle.", at_least(0)),
    # listeners and sockets
    define("listeners", LIST, DEFAULT_LISTENERS, HIGH,
           "Addresses to listen on as NAME://host:port; an empty host means every "
           "interface. millpond serves PLAINTEXT listeners only so far.",
           list_of(allow_empty=False), used=True, dynamic=True,
           kafka_default="PLAINTEXT://:9092"),
    define("advertised.listeners", LIST, None, HIGH,
           "Addresses given to clients, when they differ from listeners; 0.0.0.0 is "
           "refused.", list_of(), used=True),
    define("listener.security.protocol.map", STR, DEFAULT_SECURITY_PROTOCOL_MAP, LOW,
           "Security protocol of each listener name, as NAME:PROTOCOL pairs.", used=True,
           dynamic=True),
    define("inter.broker.listener.name", STR, None, MEDIUM,
           "Listener brokers use to reach each other.", used=True),
    define("security.inter.broker.protocol", STR, "PLAINTEXT", MEDIUM,
           "Protocol brokers use to reach each other when inter.broker.listener.name is "
           "not set.", one_of(*SECURITY_PROTOCOLS), used=True),
    define("early.start.listeners", LIST, None, HIGH,
           "Listeners started before the authorizer has loaded.", list_of()),
    define("socket.send.buffer.bytes", INT, 100 * 1024, HIGH,
           "SO_SNDBUF of client sockets; -1 keeps the OS default.", used=True),
    # The OS's autotuned buffer by default: with Kafka's 100 KB the broker reads a large
    # produce request in more, smaller pieces (acks=all produce measured 10% slower).
    define("socket.receive.buffer.bytes", INT, -1, HIGH,
           "SO_RCVBUF of client sockets; -1 keeps the OS default.", used=True,
           kafka_default=100 * 1024),
    define("socket.request.max.bytes", INT, 100 * MIB, HIGH,
           "Largest request the broker reads; a bigger size prefix closes the connection.",
           at_least(1), used=True),
    define("socket.listen.backlog.size", INT, 50, MEDIUM,
           "Backlog of pending connections on each listening socket.", at_least(1),
           used=True),
    define("max.connections.per.ip", INT, INT_MAX, MEDIUM,
           "Most connections accepted from one address.", at_least(0), dynamic=True),
    define("max.connections.per.ip.overrides", STR, "", MEDIUM,
           "Per-address exceptions to max.connections.per.ip, as host:count pairs.",
           dynamic=True),
    define("max.connections", INT, INT_MAX, MEDIUM,
           "Most connections the broker accepts in total.", at_least(0), dynamic=True),
    define("max.connection.creation.rate", INT, INT_MAX, MEDIUM,
           "Most new connections accepted per second.", at_least(0), dynamic=True),
    define("connections.max.idle.ms", LONG, 10 * 60_000, MEDIUM,
           "Idle time after which the broker closes a connection; -1 never does.",
           used=True),
    define("connection.failed.authentication.delay.ms", INT, 100, LOW,
           "Delay before closing a connection whose authentication failed.", at_least(0)),
    define("queued.max.requests", INT, 500, HIGH,
           "Requests that may wait for processing before the broker stops reading more.",
           at_least(1)),
    define("queued.max.request.bytes", LONG, -1, MEDIUM,
           "Bytes of requests that may wait for processing; -1 means no limit."),
    # threads: millpond runs one event loop, so these are read and documented, not used
    define("num.network.threads", INT, 3, HIGH,
           "Kafka's socket threads; millpond serves every connection from one event loop.",
           at_least(1), dynamic=True),
    define("num.io.threads", INT, 8, HIGH,
           "Kafka's request handler threads; millpond handles requests on its event loop.",
           at_least(1), dynamic=True),
    define("background.threads", INT, 10, HIGH,
           "Kafka's pool for background tasks.", at_least(1), dynamic=True),
    define("num.replica.alter.log.dirs.threads", INT, None, HIGH,
           "Threads moving replicas between log directories."),
    # requests
    define("request.timeout.ms", INT, 30_000, HIGH,
           "How long the broker's own requests to other nodes wait for an answer."),
    define("socket.connection.setup.timeout.ms", LONG, 10_000, MEDIUM,
           "How long the broker's outgoing connections may take to establish."),
    define("socket.connection.setup.timeout.max.ms", LONG, 30_000, MEDIUM,
           "Upper bound of the growing connection set-up timeout."),
    define("fetch.max.bytes", INT, 55 * MIB, MEDIUM,
           "Upper bound on the bytes one Fetch response carries.", at_least(1024),
           used=True),
    define("max.incremental.fetch.session.cache.slots", INT, 1000, MEDIUM,
           "Most incremental fetch sessions the broker keeps.", at_least(0), used=True),
    define("max.request.partition.size.limit", INT, 2000, MEDIUM,
           "Most partitions one request may name.", at_least(1)),
    define("delete.topic.enable", BOOL, True, HIGH,
           "Whether DeleteTopics is allowed.", used=True),
    define("controlled.shutdown.enable", BOOL, True, MEDIUM,
           "Whether a stopping broker first moves its leaderships elsewhere.", used=True),
    define("authorizer.class.name", STR, "", LOW,
           "Authorizer plug-in class; empty means no authorization. millpond has no "
           "authorizer yet: any other value stops the start.", used=True),
    define("config.providers", LIST, "", LOW,
           "Plug-ins that resolve indirect config values.", list_of(), dynamic=True),
    define("server.max.startup.time.ms", LONG, LONG_MAX, MEDIUM,
           "Longest time start-up may take before the broker gives up.", at_least(0)),
    # metrics
    define("metric.reporters", LIST, "org.apache.kafka.common.metrics.JmxReporter", LOW,
           "Classes that receive metrics.", dynamic=True),
    define("metrics.num.samples", INT, 2, LOW, "Samples kept to compute a metric.",
           at_least(1)),
    define("metrics.sample.window.ms", LONG, 30_000, LOW, "Length of one metrics sample.",
           at_least(1)),
    define("metrics.recording.level", STR, "INFO", LOW, "Highest level of metrics recorded.",
           one_of("INFO", "DEBUG", "TRACE")),
    define("kafka.metrics.reporters", LIST, "", LOW, "Legacy Yammer metrics reporters."),
    define("kafka.metrics.polling.interval.secs", INT, 10, LOW,
           "Polling interval of the legacy metrics reporters.", at_least(1)),
    define("telemetry.max.bytes", INT, MIB, LOW,
           "Largest client telemetry payload accepted.", at_least(1)),
    # millpond's own
    define(EMULATE_KEY, STR, None, LOW,
           "millpond only: advertise and serve the API version ranges of this Apache Kafka "
           "release (quirks included) instead of 4.4's, to test clients' fallback paths.",
           one_of(*EMULATED_RELEASES), used=True),
    define("millpond.control.port", INT, -1, LOW,
           "millpond only: port of the HTTP control endpoint (fault injection, the clock, "
           "live state; its OpenAPI description at /openapi.json), always on 127.0.0.1. "
           "-1 turns it off; 0 takes a free port.", at_least(-1), used=True),
    define(TRACE_FILE_KEY, STR, None, LOW,
           "millpond only: append one JSON line per request to this file, with the decoded "
           "request and response (`millpond trace FILE` reads it); as `millpond serve "
           "--trace FILE`.", used=True),
]  # fmt: skip

SERVER_CONFIGS: dict[str, ConfigDefinition] = table(_ROWS)
