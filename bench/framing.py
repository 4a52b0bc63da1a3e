"""Micro-benchmark of wire.framing: how fast FrameReader splits a stream.

Not a test. Run ``.venv/bin/python bench/framing.py``. Reports the median of several
runs for small pipelined frames (frames/s) and for 1 MiB frames (GB/s), the latter
both delivered whole (zero-copy path) and in 64 KiB socket-sized reads (assembly path).
"""

import statistics
import time
from collections.abc import Callable

from millpond.wire.framing import FrameReader, frame

MiB = 1024 * 1024
RUNS = 7


def median_seconds(run: Callable[[], None]) -> float:
    """Median wall time of ``run`` over RUNS runs, after one warm-up."""
    run()
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def chunks_of(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def small_frames(chunk_size: int, total_frames: int) -> float:
    """Frames/s for 100-byte frames read from the socket ``chunk_size`` bytes at a time."""
    stream = frame(b"x" * 100) * total_frames
    chunks = chunks_of(stream, chunk_size)

    def run() -> None:
        reader = FrameReader()
        count = 0
        for chunk in chunks:
            reader.feed(chunk)
            count += len(reader.drain())
        assert count == total_frames

    return total_frames / median_seconds(run)


def one_frame_per_feed(total_frames: int) -> float:
    """Frames/s when each 100-byte frame arrives on its own (no pipelining)."""
    chunks = [frame(b"x" * 100)] * total_frames

    def run() -> None:
        reader = FrameReader()
        for chunk in chunks:
            reader.feed(chunk)
            reader.next_frame()

    return total_frames / median_seconds(run)


def large_frames(chunk_size: int, total_frames: int) -> float:
    """GB/s for 1 MiB frames read ``chunk_size`` bytes at a time.

    When a read holds a whole frame the body is a view, so that figure measures
    per-frame overhead only; smaller reads measure the one copy that assembles a frame.
    """
    stream = frame(bytes(MiB)) * total_frames
    chunks = chunks_of(stream, chunk_size)

    def run() -> None:
        reader = FrameReader()
        count = 0
        for chunk in chunks:
            reader.feed(chunk)
            count += len(reader.drain())
        assert count == total_frames

    return total_frames * MiB / median_seconds(run) / 1e9


def main() -> None:
    print(f"100 B frames, 64 KiB reads:  {small_frames(64 * 1024, 200_000):>12,.0f} frames/s")
    print(f"100 B frames, 1 MiB reads:   {small_frames(MiB, 200_000):>12,.0f} frames/s")
    print(f"100 B frames, one per feed:  {one_frame_per_feed(200_000):>12,.0f} frames/s")
    print(f"1 MiB frames, whole:         {large_frames(MiB + 4, 64):>12.1f} GB/s (zero-copy)")
    print(f"1 MiB frames, 64 KiB reads:  {large_frames(64 * 1024, 64):>12.1f} GB/s (assembled)")
    print(f"1 MiB frames, 4 KiB reads:   {large_frames(4 * 1024, 64):>12.1f} GB/s (assembled)")


if __name__ == "__main__":
    main()
