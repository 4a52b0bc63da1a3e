"""Kafka's size-prefixed frames, without I/O.

Every request and response on a Kafka connection is an int32 big-endian length
followed by that many bytes. :class:`FrameReader` turns the chunks a socket delivers
into whole frames; :func:`frame`, :func:`frame_parts` and :func:`size_prefix` add the
prefix on the way out. Nothing here touches a socket, so the same code serves the
broker's event loop, a client, tests and replayed captures.

Costs matter because the broker runs this on every request:

* A frame that arrives inside one chunk comes out as a ``memoryview`` slice of that
  chunk: no copy. Only a frame that straddles chunks is assembled, and each of its
  bytes is copied once (into a ``bytearray`` that grows amortised, so a 1 MiB frame
  arriving in 1,000 small chunks costs linear time, not quadratic).
* The size prefix is checked against the maximum (and for a negative value) as soon as
  its four bytes have arrived, before a single body byte is copied or any memory is
  reserved for the body, so a peer cannot make us buffer an oversized frame.
* Frames are split out eagerly in :meth:`FrameReader.feed`, one tight loop per chunk,
  so a chunk holding thousands of small pipelined requests is split in linear time.
"""

from collections import deque
from collections.abc import Iterable
from struct import Struct
from typing import NoReturn

from millpond.wire.exceptions import DecodeError, EncodeError, FrameTooLargeError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameReader",
    "frame",
    "frame_parts",
    "size_prefix",
]

Buffer = bytes | bytearray | memoryview

# Kafka's default socket.request.max.bytes: the largest request a broker accepts.
DEFAULT_MAX_FRAME_SIZE = 100 * 1024 * 1024

_INT32 = Struct(">i")
_PREFIX = _INT32.size
_INT32_MAX = 2**31 - 1


def _as_bytes_view(data: Buffer) -> memoryview:
    """View ``data`` as flat unsigned bytes, so slices are byte-addressed."""
    view = memoryview(data)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


class FrameReader:
    """Split a byte stream into Kafka frames.

    Call :meth:`feed` with each chunk read from the connection, then take the complete
    frames with :meth:`next_frame` or :meth:`drain`. Frames come out in order, as
    ``memoryview`` objects; a frame that lay inside one fed chunk is a view of that
    chunk, so the caller must not modify a buffer after feeding it (and it stays
    alive while any of its frames does). A socket loop that reuses one receive buffer
    should feed a copy of the received bytes (``bytes(buf[:n])``), or a fresh buffer
    per read.

    A bad size prefix raises :class:`DecodeError` (:class:`FrameTooLargeError` when
    it is too large). The stream cannot be resynchronised after that, so the reader
    keeps failing on every later :meth:`feed`; close the connection. Frames completed
    before the bad prefix can still be taken.
    """

    __slots__ = ("_body", "_error", "_head", "_max_frame_size", "_ready", "_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if not 0 <= max_frame_size <= _INT32_MAX:
            raise ValueError(f"max_frame_size must be within 0..{_INT32_MAX}")
        self._max_frame_size = max_frame_size
        self._ready: deque[memoryview] = deque()
        # The frame being assembled across chunks: prefix bytes seen so far (fewer
        # than four), then its announced size and the body bytes gathered so far.
        self._head = bytearray()
        self._size = -1
        self._body = bytearray()
        self._error: DecodeError | None = None

    @property
    def max_frame_size(self) -> int:
        """The largest frame body, in bytes, that :meth:`feed` accepts."""
        return self._max_frame_size

    @property
    def at_frame_boundary(self) -> bool:
        """Whether no frame is partly received, so the peer may close cleanly here."""
        return self._size < 0 and not self._head

    @property
    def buffered(self) -> int:
        """Bytes of the partly received frame held by the reader (prefix included)."""
        if self._size < 0:
            return len(self._head)
        return _PREFIX + len(self._body)

    def __len__(self) -> int:
        """The number of complete frames waiting to be taken."""
        return len(self._ready)

    def feed(self, data: Buffer) -> None:
        """Take the next chunk of the stream and split out every frame it completes.

        Raises :class:`FrameTooLargeError` or :class:`DecodeError` on a bad size prefix.
        """
        if self._error is not None:
            raise self._error
        view = _as_bytes_view(data)
        if not view:
            return
        pos = 0
        if not self.at_frame_boundary:
            pos = self._continue_frame(view)
        end = len(view)
        if pos < end:
            pos = self._split_frames(view, pos)
            if pos < end:
                self._start_frame(view, pos)

    def next_frame(self) -> memoryview | None:
        """Return the oldest complete frame's body, or ``None`` if none is complete."""
        return self._ready.popleft() if self._ready else None

    def drain(self) -> list[memoryview]:
        """Return every complete frame's body, oldest first, and forget them."""
        frames = list(self._ready)
        self._ready.clear()
        return frames

    def check_eof(self) -> None:
        """Raise :class:`DecodeError` if the stream ended in the middle of a frame.

        A broker calls this when the peer closes: a truncated request is worth a log
        line, because it usually means a client crashed or a proxy cut the connection.
        """
        if not self.at_frame_boundary:
            raise DecodeError(
                f"connection closed in the middle of a frame ({self.buffered} bytes received)"
            )

    def _split_frames(self, view: memoryview, pos: int) -> int:
        """Emit every frame that lies wholly in ``view`` from ``pos``; return where the
        first incomplete one starts. This is the hot loop: keep it lean."""
        end = len(view)
        unpack = _INT32.unpack_from
        append = self._ready.append
        max_size = self._max_frame_size
        while end - pos >= _PREFIX:
            (size,) = unpack(view, pos)
            if size > max_size or size < 0:
                self._reject(size)
            stop = pos + _PREFIX + size
            if stop > end:
                break
            append(view[pos + _PREFIX : stop])
            pos = stop
        return pos

    def _start_frame(self, view: memoryview, pos: int) -> None:
        """Keep the incomplete frame at the tail of ``view`` for the next chunks.

        ``_split_frames`` has already validated its prefix if all four bytes are here.
        """
        if len(view) - pos < _PREFIX:
            self._head += view[pos:]
            return
        (self._size,) = _INT32.unpack_from(view, pos)
        self._body = bytearray(view[pos + _PREFIX :])

    def _continue_frame(self, view: memoryview) -> int:
        """Feed the start of ``view`` to the frame in progress; return how much it used."""
        pos = 0
        if self._size < 0:
            pos = self._complete_prefix(view)
            if self._size < 0:
                return pos
        need = self._size - len(self._body)
        if len(view) - pos < need:
            self._body += view[pos:]
            return len(view)
        if self._body:
            self._body += view[pos : pos + need]
            self._ready.append(memoryview(self._body))
        else:
            # Only the prefix came earlier: the body is in this chunk, so slice it.
            self._ready.append(view[pos : pos + need])
        self._size = -1
        self._body = bytearray()
        return pos + need

    def _complete_prefix(self, view: memoryview) -> int:
        """Add prefix bytes from ``view``; once all four are in, validate the size."""
        take = _PREFIX - len(self._head)
        self._head += view[:take]
        if len(self._head) == _PREFIX:
            (size,) = _INT32.unpack_from(self._head)
            if size > self._max_frame_size or size < 0:
                self._reject(size)
            self._size = size
            self._head.clear()
        return min(take, len(view))

    def _reject(self, size: int) -> NoReturn:
        """Fail on a bad prefix, and stay failed: the frame boundaries are lost."""
        error: DecodeError
        if size < 0:
            error = DecodeError(f"negative frame size {size}")
        else:
            error = FrameTooLargeError(size, self._max_frame_size)
        self._error = error
        self._head.clear()
        self._size = -1
        self._body = bytearray()
        raise error


def size_prefix(size: int) -> bytes:
    """Return the 4-byte prefix for a frame of ``size`` bytes.

    For senders that know a response's size before producing all of it, such as a
    Fetch response whose record data is still on disk.
    """
    if not 0 <= size <= _INT32_MAX:
        raise EncodeError(f"frame size {size} does not fit a Kafka size prefix")
    return _INT32.pack(size)


def _nbytes(part: Buffer) -> int:
    return part.nbytes if isinstance(part, memoryview) else len(part)


def frame(payload: Buffer) -> bytes:
    """Return ``payload`` with its size prefix, as one ``bytes`` (one copy).

    Best for small messages; for large ones :func:`frame_parts` avoids the copy.
    """
    return size_prefix(_nbytes(payload)) + payload


def frame_parts(parts: Iterable[Buffer]) -> list[Buffer]:
    """Return the size prefix followed by ``parts``, ready for ``writelines``/``sendmsg``.

    The parts are not copied, so a response can reference record data in place.
    """
    out: list[Buffer] = [b""]
    out.extend(parts)
    out[0] = size_prefix(sum(map(_nbytes, out)))
    return out
