"""What runs in a ``finmath_docker`` container, and the connection to it.

* The container's layout: ``RUN_DIR``, its only writable directory (a tmpfs),
  where the runner makes each program's private directory and the backend each
  sample's scratch directory (``SCRATCH_PREFIX``).
* The small standard-library programs the host runs there with ``SANDBOX_PYTHON``:
  the container's pid 1 (:data:`PID1_SOURCE`, a reaper that also stops the
  container when the host's attach connection closes) and the helpers started
  with ``docker exec`` (kill every process of the container's uid, write or read
  one file, remove a scratch directory).
* The exec connection (:class:`ExecStream`): a ``docker exec``'s hijacked socket,
  stdin written as is, output demultiplexed from Docker's stream framing, with a
  deadline on every read; :class:`Collector` keeps a bounded head of one stream.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from typing import Any

RUN_DIR = "/run/finmath"
"""The container's only writable directory (tmpfs): program and scratch dirs."""
RUN_DIR_INODES = 8192
"""Files, directories and hard links in RUN_DIR, all programs and scratch dirs together."""
SCRATCH_PREFIX = "work-"
SANDBOX_PYTHON = ("python3", "-I", "-B")
"""How every helper program and the runner are started in the container."""

PID1_SOURCE = """\
import ctypes, os, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.SIG_DFL)
if os.getuid() == 0:  # started as root only so that docker exec can grant the worker caps
    uid = int(sys.argv[1])  # the container's own uid
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE=0: no ptrace by same-uid programs
def watch():
    while True:
        try:
            if not os.read(0, 4096):
                break
        except OSError:
            break
    os._exit(0)  # the host's attach connection is gone: stop (and so remove) the container
threading.Thread(target=watch, daemon=True).start()
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        time.sleep(1)
"""
"""Program of the container's pid 1 (argument: its uid): reaper + host-liveness watchdog."""

KILL_ALL_SOURCE = (
    "import os, signal\n"
    "try:\n"
    "    os.kill(-1, signal.SIGKILL)\n"
    "except ProcessLookupError:\n"
    "    pass\n"
)
"""Run as the container's uid: kills every process of that uid but itself and pid 1."""

WRITE_SOURCE = """\
import os, sys
path = sys.argv[1]
if os.path.isdir(path):
    sys.exit(3)
try:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(sys.stdin.buffer.read())
except FileNotFoundError:
    sys.exit(2)
except IsADirectoryError:
    sys.exit(3)
except OSError as exc:
    sys.stderr.write(str(exc))
    sys.exit(4)
"""

READ_SOURCE = """\
import os, sys
path, limit = sys.argv[1], int(sys.argv[2])
try:
    if os.path.isdir(path):
        sys.exit(3)
    if os.path.getsize(path) > limit:
        sys.exit(5)
    with open(path, "rb") as fh:
        sys.stdout.buffer.write(fh.read())
except FileNotFoundError:
    sys.exit(2)
except OSError as exc:
    sys.stderr.write(str(exc))
    sys.exit(4)
"""


REMOVE_SCRATCH_SOURCE = f"""\
import os, shutil, sys
path, uid = sys.argv[1], int(sys.argv[2])
pid = os.fork()
if pid == 0:  # the contents belong to the container's uid: remove them as that uid
    code = 1
    try:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
        code = 0
    finally:
        os._exit(code)
os.waitpid(pid, 0)
os.rmdir(path)  # the directory itself sits in the root-owned {RUN_DIR}
"""
"""Run as uid 0 (in the container): removes one sample's scratch directory."""


class ExecStream:
    """A hijacked ``docker exec`` connection: stdin writes, demultiplexed reads.

    Docker frames a non-TTY exec's output as ``[stream, 0, 0, 0, size (u32 BE)]``
    headers each followed by ``size`` bytes of stdout (1) or stderr (2).
    """

    def __init__(self, sock: Any) -> None:
        self._holder = sock  # keeps the HTTP response (and so the connection) alive
        self.sock: socket.socket = getattr(sock, "_sock", sock)
        self._buf = bytearray()
        self.closed = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)

    def _fill(self, size: int, deadline: float | None) -> bool:
        while len(self._buf) < size:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("no answer from the container in time")
                self.sock.settimeout(remaining)
            else:
                self.sock.settimeout(None)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError as exc:
                raise TimeoutError("no answer from the container in time") from exc
            if not chunk:
                return False
            self._buf += chunk
        return True

    def read_frame(self, deadline: float | None) -> tuple[int, bytes] | None:
        """Next (stream, payload); None at end of stream."""
        if not self._fill(8, deadline):
            return None
        kind = self._buf[0]
        (size,) = struct.unpack(">I", bytes(self._buf[4:8]))
        if not self._fill(8 + size, deadline):
            return None
        payload = bytes(self._buf[8 : 8 + size])
        del self._buf[: 8 + size]
        return kind, payload

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(Exception):
            self._holder.close()


class Collector:
    """Bounded capture of one exec stream (keeps the head up to ``limit``)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def overflow(self) -> bool:
        return self.total > self.limit
