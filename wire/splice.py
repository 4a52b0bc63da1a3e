"""Records that an encoding leaves out, to be sent from where they lie (a segment file).

A fetch response is mostly record bytes that already sit in segment files. Copying them
into the encoded response (read into memory, into the frame, into the transport's buffer)
made the copies, not the protocol, the cost of a fetch. Instead a records field may hold
a :class:`Spliced` placeholder: an encoding into a :class:`SplicingWriter` writes the
field's length prefix and notes where the source's bytes belong, and the network edge
sends the frame as its parts (``os.sendfile`` for file regions). Any other encoding reads
the source and writes its bytes, so every encoder stays correct, only slower.
"""

from __future__ import annotations

from typing import Protocol


class SpliceSource(Protocol):
    """Bytes held elsewhere: their size now, their content on demand."""

    @property
    def size(self) -> int: ...

    def read(self) -> bytes: ...


class Spliced(bytearray):
    """A records value standing for ``source``'s bytes. Empty itself (a ``bytearray`` so it
    fits every records field's type): use :func:`records_size` and :func:`records_bytes`,
    never ``len`` or ``bytes``, on a value that may be one."""

    __slots__ = ("source",)

    def __init__(self, source: SpliceSource) -> None:
        super().__init__()
        self.source = source


class SplicingWriter(bytearray):
    """An encoding buffer that records where spliced sources go instead of copying them."""

    __slots__ = ("splices",)

    def __init__(self) -> None:
        super().__init__()
        self.splices: list[tuple[int, SpliceSource]] = []

    def parts(self) -> list[memoryview | SpliceSource]:
        """The frame in order: views of this buffer between the spliced sources."""
        view = memoryview(self)
        out: list[memoryview | SpliceSource] = []
        start = 0
        for at, source in self.splices:
            if at > start:
                out.append(view[start:at])
            out.append(source)
            start = at
        if start < len(self):
            out.append(view[start:])
        return out

    def frame_size(self) -> int:
        return len(self) + sum(source.size for _, source in self.splices)


def records_size(value: bytes | bytearray | memoryview | None) -> int:
    """The size a records value encodes to (a :class:`Spliced` one's source size)."""
    if value is None:
        return 0
    if type(value) is Spliced:
        return value.source.size
    return len(value)


def records_bytes(value: bytes | bytearray | memoryview) -> bytes:
    """A records value's bytes (a :class:`Spliced` one's read from its source)."""
    if type(value) is Spliced:
        return value.source.read()
    return bytes(value)
