"""One broker per data directory: an exclusive ``flock`` on ``<log dir>/.lock``, as
Kafka takes on each log dir, released when the process ends (even by SIGKILL)."""

from __future__ import annotations

import fcntl
import os


class DataDirLockedError(RuntimeError):
    pass


class DirLock:
    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, ".lock")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise DataDirLockedError(
                f"{directory} is in use by another broker (it holds {self.path}); "
                "stop that broker or point this one at another directory with "
                "--override log.dirs=..."
            ) from None

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1
