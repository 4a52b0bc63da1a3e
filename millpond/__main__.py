"""The ``millpond`` command line: ``millpond serve`` runs a single-node broker; the
other commands (millpond.cli) talk the Kafka protocol to any broker, or read its files.

Configuration is Kafka's: ``--config server.properties`` and repeated ``--override
key=value``, as ``kafka-server-start`` takes them. SIGTERM and SIGINT stop the broker
cleanly (stop accepting, close connections, flush, write the clean-shutdown state).
"""

from __future__ import annotations

import argparse
import logging
import sys

from millpond import __version__

BUILT_IN = ("serve", "ping", "storage", "local-cluster")
"""Commands of this module: their parser is built without the tools' (millpond.cli), whose
imports would add about 6% to a broker's start-up."""


def _parser(tools: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="millpond",
        description="A Kafka-compatible broker (serve), and tools for any Kafka cluster.",
    )
    parser.add_argument("--version", action="version", version=f"millpond {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run a single-node broker (broker and controller)")
    serve.add_argument("--config", metavar="FILE", help="a Kafka server.properties file")
    serve.add_argument(
        "--override",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="set one property, after the file (repeatable)",
    )
    serve.add_argument(
        "--trace",
        metavar="FILE",
        help="append one JSON line per request to FILE: client, API, version, latency and the "
        "decoded request and response (read it with `millpond trace FILE`)",
    )
    ping = commands.add_parser("ping", help="ask a broker for its API versions (a health check)")
    ping.add_argument("--bootstrap-server", default="localhost:9092", metavar="HOST:PORT")
    ping.add_argument("--timeout-ms", type=int, default=5000)
    from millpond import local_cluster, storage_tool

    storage_tool.register(commands)
    local_cluster.register(commands)
    if tools:
        from millpond import cli

        cli.register(commands)
    return parser


def _ping(bootstrap: str, timeout_ms: int) -> int:
    """Exit 0 if the broker answers ApiVersions without an error (Docker's healthcheck)."""
    import socket
    import struct

    from millpond.wire import RequestHeader, decode_response, encode_request
    from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest

    host, _, port = bootstrap.rpartition(":")
    header = RequestHeader(request_api_key=18, request_api_version=0, correlation_id=1)
    frame = encode_request(header, ApiVersionsRequest())
    try:
        with socket.create_connection((host or "localhost", int(port)), timeout_ms / 1000) as sock:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
            data = b""
            while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    raise ConnectionError("closed before answering")
                data += chunk
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"millpond ping: {bootstrap}: {exc}\n")
        return 1
    _, body = decode_response(data[4:], 18, 0)
    error = getattr(body, "error_code", -1)
    sys.stdout.write(f"{bootstrap}: ApiVersions error code {error}\n")
    return 0 if error == 0 else 1


async def _serve(config_path: str | None, overrides: list[str], trace: str | None) -> int:
    import asyncio
    import gc
    import signal

    from millpond.broker.config import ConfigError, load_config
    from millpond.broker.dir_lock import DataDirLockedError
    from millpond.broker.node import Broker
    from millpond.controller.metadata_replay import MetadataLogError
    from millpond.controller.raft.snapshots import SnapshotFormatError

    log = logging.getLogger("millpond")
    try:
        config, warnings = load_config(config_path, overrides)
    except (ConfigError, OSError) as exc:
        sys.stderr.write(f"millpond: {exc}\n")
        return 2
    for warning in warnings:
        log.warning("%s", warning)
    from millpond.broker.trace import RequestTrace

    try:
        tracer = RequestTrace.open(trace) if trace else None
    except OSError as exc:
        sys.stderr.write(f"millpond: cannot open the trace file: {exc}\n")
        return 2
    try:
        broker = Broker.from_config(config, trace=tracer)
    except DataDirLockedError as exc:
        if tracer is not None:
            tracer.close()
        sys.stderr.write(f"millpond: {exc}\n")
        return 1
    except ConfigError as exc:  # a listener it cannot serve
        if tracer is not None:
            tracer.close()
        sys.stderr.write(f"millpond: {exc}\n")
        return 2
    except (MetadataLogError, SnapshotFormatError) as exc:
        if tracer is not None:
            tracer.close()
        sys.stderr.write(
            f"millpond: the metadata log cannot be read: {exc}; restore the directory from a"
            " copy, or (in a cluster of several) empty it and let the node fetch the"
            " metadata from the leader\n"
        )
        return 1
    from millpond.broker.broker_server import RegistrationError

    try:
        await broker.start()
    except RegistrationError as exc:
        await broker.stop()
        sys.stderr.write(f"millpond: {exc}\n")
        return 1
    except OSError as exc:  # the listener's (or the control endpoint's) port is taken
        await broker.stop()
        sys.stderr.write(
            f"millpond: cannot listen: {exc.strerror or exc}; stop what holds the port, or "
            "choose another in `listeners` (or `millpond.control.port`)\n"
        )
        return 1
    # Out of every collection's way from now on: fewer objects to traverse, shorter pauses.
    gc.freeze()
    gc.enable()
    # Before the "listening" line: a SIGTERM sent as soon as it appears must stop cleanly.
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    host, port = broker.advertised
    sys.stdout.write(
        f"millpond {__version__} listening on {host}:{port} "
        f"(cluster {broker.cluster_id}, node {broker.node_id}), data in {broker.data_dir}\n"
    )
    sys.stdout.flush()
    await stop.wait()
    await broker.stop()
    sys.stdout.write("millpond stopped cleanly\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    args = _parser(tools=not argv or argv[0] not in BUILT_IN).parse_args(argv)
    if hasattr(args, "run"):
        from millpond import cli

        return cli.run(args)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "serve":
        import asyncio  # here, not at the top: the other commands start faster without it
        import gc

        # Start-up makes ~100k objects that live as long as the broker (modules, classes, the
        # metadata image, the logs): collecting while they are made frees nothing and costs
        # about 2% of the start. _serve freezes them and turns collection back on.
        gc.disable()
        return asyncio.run(_serve(args.config, args.override, args.trace))
    if args.command == "ping":
        return _ping(args.bootstrap_server, args.timeout_ms)
    if args.command == "local-cluster":
        from millpond import local_cluster

        return local_cluster.run(args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
