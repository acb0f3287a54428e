#!/usr/bin/env python3
"""Run one model-written ``solution()`` program, isolated, and report its value.

This file is the *in-sandbox* half of the program executor. It is deliberately a
single, self-contained, stdlib-only module (numpy & co. are imported only by the
warm worker's pre-import step and by the programs themselves): it is copied
verbatim into Docker images at ``/opt/finmath/runner.py`` and bind-mounted
read-only at the same path into the bubblewrap sandbox. It never imports
``finmath_tasks``. Python >= 3.10.

One file on purpose (the one module of the package over 800 lines): every sandbox
gets exactly this file and runs it as a script with no import path of its own. The
Dockerfile copies it alone (into our image and into the images that users of
Inspect's built-in docker sandbox build from ``compose.yaml``), the bwrap backend
binds it alone, Inspect's ``local`` sandbox runs it from the package with
``python -I`` (so the script's directory is not on ``sys.path``; run without
``-I`` it takes that directory off ``sys.path`` itself, so that the package's
sibling modules cannot shadow the standard library), and the image's tag is a
hash of it. A second module would need its own copy, bind and import path in
each of those places, and would be one more file to trust inside the sandbox.

Its parts, in order: the constants (limits, exit statuses, accepted number
types) with ``Config``; small helpers (libc calls, the per-program namespaces,
the bounded output tail); value conversion (in the child, after the program
returned); the child, one forked process per program (limits, privilege drop,
the request, the program's run); the parent (fork, feed, watch, collect, kill
leftovers, remove the program's directory and IPC objects, check requests and
the child's result); the modes (pre-imports and huge pages, the warm worker's
loop, one-shot, the ``--exec`` launcher, the command line).

Modes
-----
``python3 runner.py``
    One-shot: read one JSON request on stdin, write one JSON response on stdout,
    exit 0. Used cold by Inspect's docker/local sandboxes.
``python3 runner.py --worker``
    Warm worker: pre-import math, numpy, numpy_financial, sympy, scipy and
    scipy.stats once (if one of them does not import, exit at once with status
    78 and its name on stderr: the sandbox fails at start, never later as a
    wrong answer on every program), print a ``{"ready": true, ...}`` line, then loop over
    JSON-lines requests on stdin, answering each with one JSON line on stdout.
    After ``--recycle N`` programs (or after a clean-up it could not complete)
    it answers with ``"recycle": true`` and exits; the host starts a fresh one.
``python3 runner.py --exec [--exec-timeout S] -- CMD ...``
    Launcher for arbitrary one-off commands: apply the same resource limits and
    privilege drop as for a program, then ``execvp`` the command.

Request / response
------------------
Request: ``{"code": str, "entry": "solution", "timeout": 3.0, "max_output": 8192}``.
Response: ``{"ok", "value", "value_type", "error", "stdout", "stderr",
"duration_ms"}`` (+ ``worker_seq`` and, once, ``recycle`` in worker mode), and,
when ``solution()`` returned (without an exception), ``"returned": true`` and
``float_text``: for a refused str, bool, int or float result, ``repr(float(x))``
where that conversion succeeds ("" otherwise), so that a host following a
reference that reads results with ``float()`` can do so without this runner
ever accepting a non-number as the program's value.
``error`` is a short human reason ("timeout after 3.0s", "NameError: ...",
"solution() returned str, not a number", "killed by signal SIGSEGV",
"memory limit exceeded (MemoryError)", ...); ``value_type`` names the type of
the returned value ("" when nothing was returned).

How each property is enforced (per program)
-------------------------------------------
* One process per program: the runner forks ONE child per request; the child
  runs the program and ``os._exit``s. Whatever the program does to interpreter
  state (patched builtins, monkeypatched numpy, ``sys.modules``) dies with the
  child, so it never reaches the next program.
* Privileges: before any user code runs, the child (when the runner is root;
  always in the bwrap worker, which passes ``--require-drop``) calls
  ``setgroups([])``, ``setresgid``/``setresuid`` to 65534 (or ``--uid``: the
  docker backend gives each container a uid of its own), checks that it cannot
  regain root, and sets ``PR_SET_NO_NEW_PRIVS``. Leaving uid 0 clears every
  capability.
* Resource limits (hard == soft, so the program cannot raise them):
  RLIMIT_CPU = ceil(timeout)+1 s, RLIMIT_AS (``--memory-mb``, default 1 GiB,
  enough for numpy/scipy/sympy), RLIMIT_FSIZE (16 MiB), RLIMIT_NOFILE (64),
  RLIMIT_NPROC (16; effective because the uid is 65534, not 0), RLIMIT_CORE 0.
* Memory exhaustion beyond RLIMIT_AS (many processes): each program process
  sets its ``oom_score_adj`` to 1000, so the OOM killer picks programs first;
  the bwrap host side also puts each sandbox in a memory+pids cgroup when it can.
* Wall clock: the parent waits on a pidfd with a deadline; on expiry it kills
  the child's process group, then every leftover process (next point).
* Leftover processes (double-forked daemons that called ``setsid``, fork
  bombs): the runner is a child subreaper, so orphans re-parent to it. After
  every program it SIGKILLs the program's process group, then, until none is
  left, every descendant found by scanning ``/proc``; with ``--own-pidns`` (the
  bwrap worker owns its PID namespace) it ``kill(-1, SIGKILL)``s and scans for
  every process of the namespace other than itself, pid 1 and the process
  already forked for the next program.
* Filesystem: cwd is a fresh ``/tmp/prog-*`` directory (mode 0700, owned by
  65534, created when the request arrives) and removed afterwards, by a helper
  running as 65534 (the worker has no CAP_DAC_OVERRIDE). If a directory cannot
  be removed or a process cannot be killed, the worker exits between requests
  (status 75) rather than risk a leak into the next program; the host then
  restarts it.
* Kernel objects: with ``--fresh-namespaces`` (bwrap), right after the uid
  switch the program's process unshares its own user namespace (65534 mapped
  to itself; every capability in it dropped at once), IPC, network (loopback
  only) and mount namespaces, joins a new session keyring, and gets a private
  tmpfs as its directory (sandbox's size, ``PROGRAM_INODES`` inodes, hard links
  included). SysV IPC, POSIX message queues, abstract UNIX sockets, keys and
  files die with its last process. The worker checks at start that this works
  and otherwise refuses to start (status 78). Without it (Docker, whose seccomp
  profile forbids ``unshare``), the clean-up helper removes every SysV IPC
  object and POSIX message queue after each program.
* Environment: the child's environment is exactly PATH, HOME=/tmp, LANG,
  OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1; stdin is /dev/null; every other
  inherited file descriptor (notably the host protocol pipes) is closed.
* Output: the child's stdout/stderr are pipes that the parent drains
  continuously, keeping only the last ``max_output`` bytes of each (a flood
  costs the program CPU time, never memory of the worker or the host); the
  number of dropped bytes is noted at the head of the kept tail.
* Values: the child converts the returned value itself and sends a plain JSON
  float over a dedicated pipe (never pickle). Accepted: exactly ``int`` (not
  bool), ``float``, numpy integer/floating scalars (static C types of module
  ``numpy``; subclasses are heap types and are refused) and sympy's
  Integer/Rational/Float (and their singletons Zero/One/NegativeOne/Half, read
  from their exact ``p``/``q`` fields). NaN, inf and ints beyond float range
  are failures with a reason; anything else (str, list, None, ndarray,
  subclasses of int/float, objects with a custom ``__float__``/``__index__``/
  ``__reduce__``) is refused without calling any of its methods. Types are
  compared by identity with the builtins captured when the runner started, so
  a program that rebinds ``builtins.float`` to its own subclass gains nothing.
* The child is untrusted even after that: the parent accepts from it only a
  bounded JSON document of the exact schema (a finite float or an error string).

Speed (warm worker)
-------------------
Forking a process that holds numpy, scipy and sympy is the main cost. The
worker therefore (1) runs with ``PYTHONMALLOC=malloc`` (set by the host) and,
after its imports, collapses its anonymous memory into 2 MiB pages
(``MADV_COLLAPSE``), so a fork copies far fewer page-table entries; (2) forks
the process for the *next* program right after answering, so that it is ready
(limits set, descriptors in place) when the request comes; that process waits
as root (uid 0 in the sandbox, without capabilities beyond the worker's) and
only switches to 65534 once the previous program's processes are all gone, so
they cannot signal it; (3) answers as soon as the program has closed its pipes
and leaves the tear-down of the big process to idle priority (``SCHED_IDLE``).
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and not (sys.flags.isolated or getattr(sys.flags, "safe_path", 0)):
    # Run as a script, Python puts this file's directory first on sys.path, so a
    # sibling file named like a stdlib module (the package has a select.py)
    # would shadow the real one. Only the standard library is wanted here.
    del sys.path[0]

import argparse
import contextlib
import ctypes
import errno
import fcntl
import gc
import json
import math
import os
import resource
import select
import signal
import socket
import struct
import termios
import time
from typing import Any, NoReturn

SANDBOX_UID = 65534
SANDBOX_GID = 65534
DEFAULT_TIMEOUT = 3.0
MAX_TIMEOUT = 600.0
DEFAULT_MAX_OUTPUT = 8192
MAX_MAX_OUTPUT = 1 << 20
DEFAULT_ENTRY = "solution"
MAX_REQUEST_BYTES = 16 << 20
MAX_RESULT_BYTES = 64 << 10
MAX_FLOAT_TEXT_INPUT = 4096
"""A returned string longer than this is not read with ``float()`` (see ``_float_text``)."""
MAX_FLOAT_TEXT = 64
"""The longest ``float_text`` the parent accepts (``repr`` of a float is at most 24)."""
MAX_ERROR_CHARS = 1000
PREIMPORTS = ("math", "numpy", "numpy_financial", "sympy", "scipy", "scipy.stats")
PROGRAM_MODULE_NAME = "__finmath_program__"
CHILD_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp",
    "LANG": "C.UTF-8",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
}

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_CLONE_NEWUSER, _CLONE_NEWIPC, _CLONE_NEWNET = 0x10000000, 0x08000000, 0x40000000
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV = 2, 4
PROGRAM_INODES = 4096
_MQUEUE_DIR = "/dev/mqueue"
"""Files, directories and hard links a program may make (with fresh namespaces)."""
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(os.uname().machine, -1)
_KEYCTL_JOIN_SESSION_KEYRING = 1
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_MADV_HUGEPAGE = 14
_MADV_COLLAPSE = 25
_HEAPTYPE_FLAG = 1 << 9
_EXIT_SETUP_FAILED = 70
_RESULT_FD = 3
_REQUEST_FD = 4
EXIT_RECYCLE = 75
"""Worker exit status: a clean-up failed between requests; restart me."""
EXIT_CANNOT_START = 78
"""Worker exit status at start: a library of PREIMPORTS does not import, or programs
cannot get fresh namespaces (the reason on stderr)."""

# numpy scalar type names accepted as numbers; checked together with "static C
# type whose module is numpy", which Python code cannot forge.
_NUMPY_NUMBER_NAMES = frozenset(
    [
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "longlong",
        "ulonglong",
        "long",
        "ulong",
        "intc",
        "uintc",
        "intp",
        "uintp",
        "short",
        "ushort",
        "byte",
        "ubyte",
        "int_",
        "uint",
        "float16",
        "float32",
        "float64",
        "longdouble",
        "half",
        "single",
        "double",
    ]
)
_TYPE, _FLOAT, _INT, _BOOL, _STR = type, float, int, bool, str
"""The real builtin types, captured when the runner starts (before any program):
a program may rebind ``builtins.float`` to a subclass of its own, but the types
returned values are checked against (by identity) are these."""
_INF = _FLOAT("inf")
_SYMPY_INT_NAMES = ("Integer", "Zero", "One", "NegativeOne")
_SYMPY_RATIONAL_NAMES = ("Rational", "Half")


class Config:
    """Limits and behaviour of the runner (from the command line)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.memory_bytes: int = int(args.memory_mb) << 20
        self.fsize_bytes: int = int(args.fsize_mb) << 20
        self.nofile: int = int(args.nofile)
        self.nproc: int = int(args.nproc)
        self.tmp_root: str = args.tmp_root
        self.own_pidns: bool = bool(args.own_pidns)
        self.fresh_namespaces: bool = bool(args.fresh_namespaces)
        self.recycle: int = int(args.recycle)
        self.drop: bool = _should_drop(bool(args.require_drop))


class BadRequest(ValueError):
    pass


# --------------------------------------------------------------------------- #
# small helpers
# --------------------------------------------------------------------------- #


_LIBC: Any = None
_SYMPY_CLASSES: dict[type, str] = {}


def _libc_call(name: str, *args: Any) -> int:
    global _LIBC
    if _LIBC is None:
        _LIBC = ctypes.CDLL(None, use_errno=True)
    result = int(getattr(_LIBC, name)(*args))
    if result == -1 or (name == "prctl" and result != 0):
        err = ctypes.get_errno()
        raise OSError(err, f"{name}{args[:1]} failed: {os.strerror(err)}")
    return result


def _prctl(option: int, arg: int) -> None:
    _libc_call("prctl", option, arg, 0, 0, 0)


def _enter_fresh_namespaces(workdir: str) -> None:
    """Give the (already unprivileged) program process its own user, IPC and network
    namespaces and session keyring.

    Whatever kernel object a program creates (SysV shared memory, message queues
    and semaphores, POSIX message queues, abstract UNIX sockets, keys) lives in
    these namespaces and dies with the program's last process: the next program
    starts from a clean slate, and retained shared memory cannot outlive it. The
    user namespace is created by uid 65534 itself (no privilege needed; it maps
    only 65534 to itself), so nothing is granted that the program did not have:
    the capabilities it holds in the new namespace are dropped at once.
    """
    _prctl(_PR_SET_DUMPABLE, 1)  # else /proc/self/*_map belong to root after the uid switch
    _libc_call("unshare", _CLONE_NEWUSER | _CLONE_NEWIPC | _CLONE_NEWNET | _CLONE_NEWNS)
    for name, text in (("uid_map", f"{SANDBOX_UID} {SANDBOX_UID} 1"), ("setgroups", "deny"),
                       ("gid_map", f"{SANDBOX_GID} {SANDBOX_GID} 1")):  # fmt: skip
        with open(f"/proc/self/{name}", "w") as fh:
            fh.write(text)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:  # loopback up, as before
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", _IFF_UP_LOOPBACK_RUNNING))
    _libc_call("syscall", _SYS_KEYCTL, _KEYCTL_JOIN_SESSION_KEYRING, None)
    # The program's directory is a tmpfs of its own, as large as the sandbox's
    # and with few inodes (hard links count): it vanishes with the program's
    # mount namespace, so the worker never has to delete what the program made.
    tmp = os.statvfs(os.path.dirname(workdir))
    options = f"size={tmp.f_blocks * tmp.f_frsize},nr_inodes={PROGRAM_INODES},mode=0700"
    options += f",uid={SANDBOX_UID},gid={SANDBOX_GID}"
    _libc_call("mount", b"tmpfs", workdir.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
               options.encode())  # fmt: skip
    header = (ctypes.c_uint32 * 2)(_LINUX_CAPABILITY_VERSION_3, 0)
    _libc_call("capset", header, (ctypes.c_uint32 * 6)())  # no capability left anywhere
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _short(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _world_traversable(path: str) -> bool:
    """True if uid 65534 can reach and read ``path`` (every ancestor is o+x)."""
    path = os.path.abspath(path)
    current = path
    while True:
        try:
            st = os.stat(current)
        except OSError:
            return False
        needed = 0o005 if current == path else 0o001
        if st.st_uid != SANDBOX_UID and (st.st_mode & needed) != needed:
            return False
        parent = os.path.dirname(current)
        if parent == current:
            return True
        current = parent


def _should_drop(require: bool) -> bool:
    """Drop to 65534 when we are root (and, unless required, Python stays usable)."""
    if os.geteuid() != 0:
        if require:
            raise SystemExit("runner: --require-drop needs root (to switch to uid 65534)")
        return False
    if require:
        return True
    # One-shot use (docker/local sandboxes): only drop when uid 65534 can still
    # read the standard library, otherwise every import in the program fails.
    return _world_traversable(os.path.dirname(os.__file__))


class _Tail:
    """Keep the last ``cap`` bytes of a stream and count the rest."""

    __slots__ = ("buf", "cap", "total")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self.buf = bytearray()

    def add(self, data: bytes) -> None:
        self.total += len(data)
        if self.cap <= 0:
            return
        self.buf += data
        if len(self.buf) > 2 * self.cap:
            del self.buf[: len(self.buf) - self.cap]

    def text(self) -> str:
        data = bytes(self.buf[-self.cap :]) if self.cap > 0 else b""
        dropped = self.total - len(data)
        out = data.decode("utf-8", "replace")
        if dropped:
            out = f"[... {dropped} bytes truncated ...]\n" + out
        return out


# --------------------------------------------------------------------------- #
# value conversion (runs in the child, after the program returned)
# --------------------------------------------------------------------------- #


def _type_name(tp: type) -> str:
    """Name of a type, read without running code a program could have planted."""
    try:
        qualname = _TYPE.__dict__["__qualname__"].__get__(tp, _TYPE)
        module = _TYPE.__dict__["__module__"].__get__(tp, _TYPE)
    except Exception:
        return "<unknown type>"
    if _TYPE(qualname) is not _STR:
        qualname = "?"
    if _TYPE(module) is not _STR:
        module = "?"
    if module == "builtins":
        name = qualname
    elif module == PROGRAM_MODULE_NAME:
        name = f"{qualname} (defined by the program)"
    else:
        name = f"{module}.{qualname}"
    return _short(name, 120)


def sympy_number_classes() -> dict[type, str]:
    """The exact sympy number classes -> "int"/"rational"/"float" (if sympy is loaded)."""
    numbers = sys.modules.get("sympy.core.numbers")
    classes: dict[type, str] = {}
    if numbers is None:
        return classes
    for names, kind in ((_SYMPY_INT_NAMES, "int"), (_SYMPY_RATIONAL_NAMES, "rational")):
        for name in names:
            cls = getattr(numbers, name, None)
            if isinstance(cls, type):
                classes[cls] = kind
    cls = getattr(numbers, "Float", None)
    if isinstance(cls, type):
        classes[cls] = "float"
    return classes


def _is_numpy_number_type(tp: type) -> bool:
    if _TYPE(tp) is not _TYPE:
        return False
    if _TYPE.__dict__["__flags__"].__get__(tp, _TYPE) & _HEAPTYPE_FLAG:
        return False  # defined in Python (e.g. a subclass): not a numpy scalar
    module = _TYPE.__dict__["__module__"].__get__(tp, _TYPE)
    name = _TYPE.__dict__["__name__"].__get__(tp, _TYPE)
    return module == "numpy" and name in _NUMPY_NUMBER_NAMES


def _identity_lookup(classes: dict[type, str], tp: type) -> str | None:
    # not ``tp in classes``: hashing a class can run its metaclass's __hash__
    for cls, kind in classes.items():
        if cls is tp:
            return kind
    return None


def convert_value(value: object, sympy_classes: dict[type, str] | None = None) -> dict[str, Any]:
    """Turn a returned value into ``{"ok", "value", "value_type", "error"}``.

    Only exact, known number types are accepted and no method of an unknown
    object is ever called. ``sympy_classes`` should be captured before the
    program runs (the worker pre-imports sympy); if sympy was not loaded then
    (one-shot mode), it is looked up now, so a program that tampers with
    ``sys.modules`` can at worst fool its own result.
    """
    tp = _TYPE(value)
    tname = _type_name(tp)
    if not sympy_classes:  # sympy was not loaded before the program ran: look now
        sympy_classes = sympy_number_classes()

    def fail(reason: str) -> dict[str, Any]:
        return {
            "ok": False,
            "value": None,
            "value_type": tname,
            "error": reason,
            "returned": True,
            "float_text": _float_text(value, tp),
        }

    number: float
    try:
        if tp is _FLOAT:
            number = _FLOAT.__float__(value)  # type: ignore[arg-type]
        elif tp is _INT:
            try:
                number = _INT.__float__(value)  # type: ignore[arg-type]
            except OverflowError:
                return fail("solution() returned an int too large to convert to float")
        elif tp is _BOOL:
            return fail("solution() returned bool, not a number")
        elif _is_numpy_number_type(tp):
            number = _FLOAT(value)  # type: ignore[arg-type]  # an exact numpy scalar
        elif (kind := _identity_lookup(sympy_classes, tp)) is not None:
            if kind == "float":
                number = _FLOAT(value)  # type: ignore[arg-type]  # an exact sympy Float
            else:
                p = value.p  # type: ignore[attr-defined]
                q = value.q if kind == "rational" else 1  # type: ignore[attr-defined]
                if _TYPE(p) is not _INT or _TYPE(q) is not _INT or q == 0:
                    return fail(f"solution() returned a malformed {tname}")
                try:
                    number = _INT.__float__(p) if q == 1 else p / q
                except OverflowError:
                    return fail("solution() returned a number too large to convert to float")
        else:
            return fail(f"solution() returned {tname}, not a number")
    except MemoryError:
        return fail("memory limit exceeded while converting the result")
    except Exception as exc:
        return fail(f"could not convert the {tname} result ({_type_name(_TYPE(exc))})")
    if number != number:
        return fail("solution() returned NaN")
    if number in (_INF, -_INF):
        return fail("solution() returned an infinite value")
    return {
        "ok": True,
        "value": number,
        "value_type": tname,
        "error": None,
        "returned": True,
        "float_text": "",
    }


def _float_text(value: object, tp: type) -> str:
    """``repr(float(value))`` for a refused value of an exact builtin type whose
    conversion runs no program code (str, bool, int, float: NaN and infinities), else "".

    Some benchmarks' reference code reads a program's result with ``float()``
    (a string "-8184.0" counts); the host decides whether to use this. Values of
    any other type (subclasses included) are never converted.
    """
    if tp is not _STR and tp is not _BOOL and tp is not _INT and tp is not _FLOAT:
        return ""
    if tp is _STR and len(value) > MAX_FLOAT_TEXT_INPUT:  # type: ignore[arg-type]
        return ""
    try:
        return _FLOAT.__repr__(_FLOAT(value))  # type: ignore[arg-type]
    except Exception:
        return ""


def describe_exception(exc: BaseException) -> str:
    """ "NameError: name 'x' is not defined", robust to hostile exception objects."""
    if isinstance(exc, MemoryError):
        return "memory limit exceeded (MemoryError)"
    if isinstance(exc, RecursionError):
        return "RecursionError: maximum recursion depth exceeded"
    if isinstance(exc, SyntaxError):
        return _short(f"SyntaxError: {exc.msg} (line {exc.lineno})")
    tname = _type_name(type(exc))
    try:
        msg = str(exc)
        if type(msg) is not str:
            msg = ""
    except BaseException:
        msg = "<unprintable exception>"
    return _short(f"{tname}: {msg}" if msg else tname)


# --------------------------------------------------------------------------- #
# the child: one forked process per program
# --------------------------------------------------------------------------- #


def _close_fds_above(highest_kept: int) -> None:
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        os.closerange(highest_kept + 1, 65536)
        return
    for fd in fds:
        if fd > highest_kept:
            with contextlib.suppress(OSError):
                os.close(fd)


def _apply_limits(cfg: Config, cpu_seconds: int | None) -> None:
    limits = [
        (resource.RLIMIT_AS, cfg.memory_bytes),
        (resource.RLIMIT_FSIZE, cfg.fsize_bytes),
        (resource.RLIMIT_NOFILE, cfg.nofile),
        (resource.RLIMIT_CORE, 0),
    ]
    if cpu_seconds is not None:
        limits.append((resource.RLIMIT_CPU, cpu_seconds))
    if cfg.drop or os.geteuid() == SANDBOX_UID:
        # only meaningful (and only counted) for the dedicated uid; root ignores it
        limits.append((resource.RLIMIT_NPROC, cfg.nproc))
    for which, value in limits:
        resource.setrlimit(which, (value, value))


def _drop_privileges(cfg: Config) -> None:
    if cfg.drop:
        os.setgroups([])
        os.setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID)
        os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
        if os.getresuid() != (SANDBOX_UID,) * 3 or os.getresgid() != (SANDBOX_GID,) * 3:
            raise OSError("the uid/gid switch did not take effect")
        try:
            os.setuid(0)
        except PermissionError:
            pass
        else:  # pragma: no cover - would mean the drop failed
            raise OSError("could regain uid 0 after dropping privileges")
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    # the uid change clears the parent-death signal, so set it (again) afterwards
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _child_prepare(cfg: Config, fds: tuple[int, int, int, int]) -> None:
    """Set-up that needs no request; runs right after the fork, still privileged."""
    os.setsid()  # own session and process group, killed as a group
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    # if memory runs out (in the sandbox's cgroup or on the host), the kernel
    # kills programs first, never the worker or the evaluation
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as fh:
        fh.write("1000")
    devnull = os.open(os.devnull, os.O_RDONLY)
    # move everything out of the way first, then into place as fds 0..4
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 16) for fd in (devnull, *fds)]
    for target, fd in enumerate(high):
        os.dup2(fd, target)
    _close_fds_above(_REQUEST_FD)  # host protocol pipes, pidfds, other read ends
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGXFSZ, signal.SIGXCPU):
        signal.signal(signum, signal.SIG_DFL)
    _apply_limits(cfg, int(MAX_TIMEOUT) + 1)  # lowered to the request's timeout later
    os.umask(0o077)
    os.environ.clear()
    os.environ.update(CHILD_ENV)


def _child_receive(cfg: Config, workdir: str) -> dict[str, Any]:
    """Wait for the request, then become the unprivileged program process.

    Until the request arrives the process stays root, so nothing left over
    from the previous program (uid 65534) can signal it while it waits.
    """
    chunks, size = [], 0
    while data := os.read(_REQUEST_FD, 1 << 16):
        size += len(data)
        if size > MAX_REQUEST_BYTES + 4096:
            raise ValueError("request too large")
        chunks.append(data)
    os.close(_REQUEST_FD)
    if not chunks:
        os._exit(0)  # discarded before use
    req = json.loads(b"".join(chunks))
    _drop_privileges(cfg)
    if cfg.fresh_namespaces:
        _enter_fresh_namespaces(workdir)
    cpu = math.ceil(req["timeout"]) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    os.chdir(workdir)  # after the drop: it belongs to 65534, mode 0700
    return req


def _report_setup_failure(exc: BaseException) -> NoReturn:
    msg = {"ok": False, "value": None, "value_type": "", "error": "sandbox setup failed"}
    with contextlib.suppress(BaseException):
        msg["error"] = _short(f"sandbox setup failed: {type(exc).__name__}: {exc}")
    with contextlib.suppress(BaseException):
        _write_all(_RESULT_FD, json.dumps(msg).encode())
    os._exit(_EXIT_SETUP_FAILED)


def _child_main(cfg: Config, workdir: str, fds: tuple[int, int, int, int]) -> NoReturn:
    try:
        _child_prepare(cfg, fds)
        req = _child_receive(cfg, workdir)
    except BaseException as exc:
        _report_setup_failure(exc)

    import builtins
    import traceback

    def text_stream(fd: int, mode: str) -> Any:
        return open(
            fd, mode, buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False
        )

    stdout, stderr = text_stream(1, "w"), text_stream(2, "w")
    sys.stdout, sys.stderr, sys.stdin = stdout, stderr, text_stream(0, "r")
    sys.argv = ["<program>"]
    # captured before the program can touch sys.modules (the worker pre-imports sympy)
    sympy_classes = _SYMPY_CLASSES or sympy_number_classes()
    write, close, dumps, exit_ = os.write, os.close, json.dumps, os._exit

    result: dict[str, Any]
    try:
        namespace: dict[str, Any] = {"__name__": PROGRAM_MODULE_NAME, "__builtins__": builtins}
        code = compile(req["code"], "<program>", "exec")
        exec(code, namespace)
        entry = req["entry"]
        func = namespace.get(entry)
        if func is None:
            error = f"no function named {entry!r}"
            result = {"ok": False, "value": None, "value_type": "", "error": error}
        elif not callable(func):
            error = f"{entry!r} is not a function but {_type_name(type(func))}"
            result = {"ok": False, "value": None, "value_type": "", "error": error}
        else:
            result = convert_value(func(), sympy_classes)
    except BaseException as exc:
        result = {"ok": False, "value": None, "value_type": "", "error": describe_exception(exc)}
        try:
            tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
            stderr.write("".join(traceback.format_exception(type(exc), exc, tb)))
        except BaseException:
            pass
    for stream in (stdout, stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    try:
        payload = dumps(result, allow_nan=False).encode()
    except BaseException:
        payload = b'{"ok": false, "value": null, "value_type": "", "error": "unreportable result"}'
    try:
        # Close the output pipes before the result pipe, so that the parent sees
        # all three at EOF and can answer without waiting for this (large)
        # process to be torn down.
        # Tearing this process down takes a few ms of CPU: do it at idle
        # priority so that it never delays the answer (or the next program).
        with contextlib.suppress(Exception):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                close(fd)
        data = memoryview(payload)
        while data:
            data = data[write(_RESULT_FD, data) :]
        close(_RESULT_FD)
    finally:
        exit_(0)


# --------------------------------------------------------------------------- #
# the parent: fork, feed, watch, collect, clean up
# --------------------------------------------------------------------------- #


class _Child:
    """A forked program process (possibly still waiting for its request)."""

    __slots__ = ("err_r", "out_r", "pid", "pidfd", "req_w", "res_r", "rusage", "status", "workdir")

    def __init__(self, pid: int, fds: tuple[int, int, int, int], workdir: str) -> None:
        self.pid = pid
        self.req_w, self.out_r, self.err_r, self.res_r = fds
        self.workdir = workdir
        self.status: int | None = None
        self.rusage: Any = None
        try:
            self.pidfd = os.pidfd_open(pid)  # readable once the child has exited
        except (AttributeError, OSError):
            self.pidfd = -1

    def poll_exit(self, block: bool = False) -> bool:
        """Reap the child if it has exited; True if it has."""
        if self.status is None:
            try:
                pid, status, rusage = os.wait4(self.pid, 0 if block else os.WNOHANG)
            except ChildProcessError:
                pid, status, rusage = self.pid, 0, None
            if pid == self.pid:
                self.status, self.rusage = status, rusage
        return self.status is not None

    def close_fds(self) -> None:
        for name in ("req_w", "out_r", "err_r", "res_r", "pidfd"):
            fd = getattr(self, name)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
                setattr(self, name, -1)


def _spawn(cfg: Config, tag: int) -> _Child:
    """Fork the process for the next program; it prepares itself and waits."""
    workdir = os.path.join(cfg.tmp_root, f"prog-{os.getpid()}-{tag}-{os.urandom(6).hex()}")
    req_r, req_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            for fd in (req_w, out_r, err_r, res_r):
                os.close(fd)
            _child_main(cfg, workdir, (out_w, err_w, res_w, req_r))
        finally:
            os._exit(_EXIT_SETUP_FAILED)
    for fd in (req_r, out_w, err_w, res_w):
        os.close(fd)
    return _Child(pid, (req_w, out_r, err_r, res_r), workdir)


def _discard(child: _Child) -> None:
    for target in (-child.pid, child.pid):
        with contextlib.suppress(OSError):
            os.kill(target, signal.SIGKILL)
    child.poll_exit(block=True)
    child.close_fds()


def _read_stat(pid: int) -> tuple[int, str] | None:
    """(ppid, state) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return int(fields[1]), fields[0].decode()
    except (IndexError, ValueError):
        return None


def _victims(own_pidns: bool, keep: set[int]) -> list[int]:
    """Live (non-zombie) processes that must not survive a program."""
    me = os.getpid()
    stats = {int(n): _read_stat(int(n)) for n in os.listdir("/proc") if n.isdigit()}
    candidates: set[int] = set()
    if own_pidns:
        candidates = {pid for pid in stats if pid not in (1, me)}
    else:
        children: dict[int, list[int]] = {}
        for pid, st in stats.items():
            if st is not None:
                children.setdefault(st[0], []).append(pid)
        todo = [me]
        while todo:
            for kid in children.get(todo.pop(), ()):
                if kid not in candidates and kid != me:
                    candidates.add(kid)
                    todo.append(kid)
    live = []
    for pid in candidates - keep:
        st = stats[pid]
        if st is not None and st[1] not in ("Z", "X"):
            live.append(pid)
    return live


def _reap_children() -> None:
    """Reap exited descendants (orphans re-parent to us: we are a subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_fast(cfg: Config, child: _Child) -> None:
    """SIGKILL the program and everything it started, without waiting."""
    if child.status is None:
        for target in (-child.pid, child.pid):
            with contextlib.suppress(OSError):
                os.kill(target, signal.SIGKILL)
    if cfg.own_pidns:
        with contextlib.suppress(OSError):
            os.kill(-1, signal.SIGKILL)  # all of our PID namespace but us and pid 1
    else:
        for pid in _victims(False, set()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _sweep(cfg: Config, keep: set[int]) -> bool:
    """Kill until no process but us, pid 1 and ``keep`` is left; True on success."""
    for attempt in range(300):
        _reap_children()
        victims = _victims(cfg.own_pidns, keep)
        if not victims:
            return True
        for pid in victims:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(min(0.0005 * (attempt + 1), 0.02))
    _reap_children()
    return not _victims(cfg.own_pidns, keep)


def _check_fresh_namespaces(cfg: Config) -> str:
    """Set up a program's process once, without running anything: "" or why not."""
    workdir = os.path.join(cfg.tmp_root, f"prog-{os.getpid()}-check")
    _make_workdir(cfg, workdir)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            _drop_privileges(cfg)
            _enter_fresh_namespaces(workdir)
        except BaseException as exc:
            with contextlib.suppress(BaseException):
                os.write(write, _short(f"{type(exc).__name__}: {exc}").encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as fh:
        problem = fh.read().decode(errors="replace")
    os.waitpid(pid, 0)
    os.rmdir(workdir)
    return problem


def _make_workdir(cfg: Config, path: str) -> None:
    os.mkdir(path, 0o700)
    if cfg.drop:
        os.chown(path, SANDBOX_UID, SANDBOX_GID)


def _empty_dir(path: str) -> None:
    """Delete everything inside ``path`` (iteratively; fixes modes on the way)."""
    stack = [path]
    while stack:
        top = stack[-1]
        with contextlib.suppress(OSError):
            os.chmod(top, 0o700)
        subdirs = []
        with os.scandir(top) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    subdirs.append(entry.path)
                else:
                    os.unlink(entry.path)
        if subdirs:
            stack.extend(subdirs)
        else:
            stack.pop()
            if top != path:
                os.rmdir(top)


def _ipc_objects() -> list[tuple[str, int | str]]:
    """SysV IPC objects and POSIX message queues of our IPC namespace."""
    found: list[tuple[str, int | str]] = []
    for kind in ("shm", "msg", "sem"):
        with (
            contextlib.suppress(OSError, ValueError, IndexError),
            open(f"/proc/sysvipc/{kind}") as fh,
        ):
            found += [
                (kind, int(line.split()[1])) for line in fh.read().splitlines()[1:] if line.strip()
            ]
    with contextlib.suppress(OSError):
        found += [("mq", name) for name in os.listdir(_MQUEUE_DIR)]
    return found


def _remove_ipc_objects(objects: list[tuple[str, int | str]]) -> None:
    """Remove what our uid may remove (IPC_RMID; unlink for message queues)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, ident in objects:
        if kind == "mq":
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(_MQUEUE_DIR, str(ident)))
        elif kind == "sem":
            libc.semctl(ident, 0, 0, None)
        else:
            getattr(libc, f"{kind}ctl")(ident, 0, None)  # shmctl/msgctl(id, IPC_RMID, NULL)


def _remove_workdir(cfg: Config, path: str) -> bool:
    """Remove a program's directory (and, without fresh namespaces, the IPC objects
    programs made, so that none reaches the next one); False if the directory
    could not be removed."""
    with contextlib.suppress(OSError):
        os.rmdir(path)  # fast path: the program left nothing behind
    files = os.path.lexists(path)
    ipc = [] if cfg.fresh_namespaces else _ipc_objects()
    if not files and not ipc:
        return True
    if cfg.drop:
        # The entries belong to 65534 and the worker (root without
        # CAP_DAC_OVERRIDE/CAP_FOWNER) may not touch them: a short-lived helper
        # running as their owner empties the directory, the worker removes it.
        helper = os.fork()
        if helper == 0:
            code = 1
            try:
                resource.setrlimit(resource.RLIMIT_CPU, (20, 20))
                os.setgroups([])
                os.setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID)
                os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
                _remove_ipc_objects(ipc)
                if files:
                    _empty_dir(path)
                code = 0
            finally:
                os._exit(code)
        os.waitpid(helper, 0)
    else:
        _remove_ipc_objects(ipc)
        with contextlib.suppress(OSError):
            _empty_dir(path)
    with contextlib.suppress(OSError):
        os.rmdir(path)
    return not os.path.lexists(path)


def parse_request(obj: object) -> dict[str, Any]:
    """Validate a request and fill in defaults (raises BadRequest)."""
    if not isinstance(obj, dict):
        raise BadRequest("request must be a JSON object")
    code = obj.get("code")
    if not isinstance(code, str):
        raise BadRequest("'code' must be a string")
    entry = obj.get("entry")
    entry = DEFAULT_ENTRY if entry is None else entry
    if not isinstance(entry, str) or not entry.isidentifier():
        raise BadRequest("'entry' must be a Python identifier")
    timeout = obj.get("timeout")
    timeout = DEFAULT_TIMEOUT if timeout is None else timeout
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise BadRequest("'timeout' must be a number of seconds")
    timeout = float(timeout)
    if not (0 < timeout <= MAX_TIMEOUT):
        raise BadRequest(f"'timeout' must be in (0, {MAX_TIMEOUT:g}]")
    max_output = obj.get("max_output")
    max_output = DEFAULT_MAX_OUTPUT if max_output is None else max_output
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < 0:
        raise BadRequest("'max_output' must be a non-negative integer")
    return {
        "code": code,
        "entry": entry,
        "timeout": timeout,
        "max_output": min(max_output, MAX_MAX_OUTPUT),
    }


def error_response(error: str, duration_ms: float = 0.0) -> dict[str, Any]:
    return {
        "ok": False,
        "value": None,
        "value_type": "",
        "error": error,
        "stdout": "",
        "stderr": "",
        "duration_ms": duration_ms,
    }


def validate_child_result(raw: bytes) -> dict[str, Any] | None:
    """Accept only the exact result schema from the (untrusted) child."""
    if not raw or len(raw) > MAX_RESULT_BYTES:
        return None
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if type(obj) is not dict:
        return None
    vtype = obj.get("value_type")
    vtype = _short(vtype, 120) if type(vtype) is str else ""
    returned = obj.get("returned") is True or obj.get("ok") is True  # a value: it returned
    float_text = obj.get("float_text")
    if type(float_text) is not str or len(float_text) > MAX_FLOAT_TEXT:
        float_text = ""
    elif float_text:
        try:
            float(float_text)
        except ValueError:
            float_text = ""
    extra = {"returned": returned, "float_text": float_text}
    if obj.get("ok") is True:
        value = obj.get("value")
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        try:
            number = float(value)
        except OverflowError:
            return None
        if not math.isfinite(number):
            return None
        return {"ok": True, "value": number, "value_type": vtype, "error": None, **extra}
    if obj.get("ok") is False and type(obj.get("error")) is str:
        error = _short(obj["error"])
        return {"ok": False, "value": None, "value_type": vtype, "error": error, **extra}
    return None


def _drain(fd: int, sink: _Tail | bytearray) -> int:
    """Read what is available: bytes read, 0 if nothing right now, -1 at EOF."""
    try:
        data = os.read(fd, 1 << 16)
    except BlockingIOError:
        return 0
    except OSError:
        return -1
    if not data:
        return -1
    if isinstance(sink, _Tail):
        sink.add(data)
    elif len(sink) <= MAX_RESULT_BYTES:
        sink += data
    return len(data)


def _exit_reason(status: int, rusage: Any, cpu_limit: int) -> str:
    cpu = (rusage.ru_utime + rusage.ru_stime) if rusage is not None else 0.0
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu >= cpu_limit - 0.05):
            return f"CPU time limit exceeded (killed by {_signal_name(sig)})"
        if sig == signal.SIGXFSZ:
            return "file size limit exceeded (killed by SIGXFSZ)"
        return f"killed by signal {_signal_name(sig)}"
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
    if code == _EXIT_SETUP_FAILED:
        return "sandbox setup failed before the program started"
    return f"program exited with status {code} before returning a result"


def run_request(cfg: Config, child: _Child, req: dict[str, Any]) -> dict[str, Any]:
    """Hand a validated request to a spawned child and collect its response.

    Returns as soon as the program is over (all its pipes closed, or it exited,
    or the timeout expired) and everything it started has been sent SIGKILL;
    waiting for the processes to be gone is left to :func:`finish`.
    """
    timeout = req["timeout"]
    out_tail, err_tail = _Tail(req["max_output"]), _Tail(req["max_output"])
    result_buf = bytearray()
    payload = json.dumps({k: req[k] for k in ("code", "entry", "timeout")}).encode()
    try:
        _make_workdir(cfg, child.workdir)
    except OSError as exc:
        _kill_fast(cfg, child)
        return error_response(f"sandbox error: cannot create the program directory ({exc})")
    sinks: dict[int, _Tail | bytearray] = {
        child.out_r: out_tail,
        child.err_r: err_tail,
        child.res_r: result_buf,
    }
    poller = select.poll()
    for fd in sinks:
        os.set_blocking(fd, False)
        poller.register(fd, select.POLLIN)
    os.set_blocking(child.req_w, False)
    poller.register(child.req_w, select.POLLOUT)
    if child.pidfd >= 0:
        poller.register(child.pidfd, select.POLLIN)
    pending = memoryview(payload)
    open_fds = set(sinks)
    timed_out = False
    start = time.monotonic()
    deadline = start + timeout
    while open_fds and not child.poll_exit():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        wait_ms = remaining * 1000 if child.pidfd >= 0 else min(remaining * 1000, 5.0)
        for fd, event in poller.poll(max(wait_ms, 0.1)):
            if fd == child.req_w:
                if event & select.POLLOUT and pending:
                    try:
                        pending = pending[os.write(fd, pending) :]
                    except BlockingIOError:
                        pass
                    except OSError:  # the child is gone (EPIPE)
                        pending = pending[:0]
                if not pending or event & (select.POLLERR | select.POLLHUP):
                    poller.unregister(fd)
                    os.close(fd)
                    child.req_w = -1
            elif fd in open_fds and _drain(fd, sinks[fd]) < 0:
                open_fds.discard(fd)
                poller.unregister(fd)
    end = time.monotonic()
    if child.req_w >= 0:
        os.close(child.req_w)
        child.req_w = -1
    if not timed_out and child.status is None and validate_child_result(bytes(result_buf)) is None:
        # Pipes closed without a result: most likely the process is exiting
        # (descriptors close before the exit is reported); wait briefly for it.
        grace = min(0.25, max(deadline - time.monotonic(), 0.0))
        if child.pidfd >= 0:
            select.select([child.pidfd], [], [], grace)
        child.poll_exit()
    _kill_fast(cfg, child)
    for fd in open_fds:  # what was written before the end (never blocks)
        while _drain(fd, sinks[fd]) > 0:
            pass

    parsed: dict[str, Any] | None = None
    if timed_out:
        error = f"timeout after {timeout}s"
    else:
        parsed = validate_child_result(bytes(result_buf))
        if child.status is not None:
            error = _exit_reason(child.status, child.rusage, math.ceil(timeout) + 1)
        else:
            error = "the program closed its output channels without returning a result"
    if parsed is None:
        parsed = {"ok": False, "value": None, "value_type": "", "error": error}
    response = dict(parsed)
    response.update(
        stdout=out_tail.text(), stderr=err_tail.text(), duration_ms=round((end - start) * 1000, 3)
    )
    return response


def finish(cfg: Config, child: _Child, keep: set[int]) -> bool:
    """Wait for the program's processes to be gone and remove its directory.

    ``keep``: pids not to touch (the next program's process, already spawned).
    False if something could not be cleaned up (the worker then recycles).
    """
    child.poll_exit(block=True)
    child.close_fds()
    all_dead = _sweep(cfg, keep)
    cleaned = _remove_workdir(cfg, child.workdir)
    return all_dead and cleaned


def _alive(child: _Child | None) -> bool:
    return child is not None and not child.poll_exit()


# --------------------------------------------------------------------------- #
# modes
# --------------------------------------------------------------------------- #


def _preimport() -> tuple[list[str], dict[str, str]]:
    """Import every library programs are promised; (imported, {name: why not})."""
    done, failed = [], {}
    for name in PREIMPORTS:
        try:
            __import__(name)
            done.append(name)
        except Exception as exc:
            failed[name] = f"{type(exc).__name__}: {exc}"
    return done, failed


def _collapse_to_huge_pages() -> int:
    """Back the worker's anonymous memory with 2 MiB pages; return bytes collapsed.

    A fork copies one page-table entry per 4 KiB page of private memory, and the
    child's exit frees them again: with ~90 MB of pre-imported libraries that is
    most of a program's cost. On huge pages it is 512 times fewer entries
    (measured: fork + exit 12-15 ms -> ~5 ms). Needs MADV_COLLAPSE (Linux >= 6.1);
    best effort, nothing happens elsewhere.
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps") as fh:
            lines = fh.read().splitlines()
    except (OSError, AttributeError):
        return 0
    huge, collapsed = 2 << 20, 0
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or parts[1] != "rw-p" or (len(parts) > 5 and parts[5] != "[heap]"):
            continue
        low, high = (int(x, 16) for x in parts[0].split("-"))
        start, end = (low + huge - 1) & ~(huge - 1), high & ~(huge - 1)
        if end - start < huge:
            continue
        madvise(start, end - start, _MADV_HUGEPAGE)
        if madvise(start, end - start, _MADV_COLLAPSE) == 0:
            collapsed += end - start
    return collapsed


def _read_request(reader: Any) -> tuple[dict[str, Any] | None, str | None]:
    """One request line -> (validated request, None) or (None, error) or (None, None) at EOF."""
    line = reader.readline(MAX_REQUEST_BYTES + 1)
    if not line:
        return None, None
    if len(line) > MAX_REQUEST_BYTES and not line.endswith(b"\n"):
        while True:  # skip the rest of the oversized line
            more = reader.readline(1 << 20)
            if not more or more.endswith(b"\n"):
                break
        return None, "bad request: request too large"
    try:
        return parse_request(json.loads(line)), None
    except ValueError as exc:  # includes BadRequest and JSON errors
        prefix = "" if isinstance(exc, BadRequest) else "invalid JSON: "
        return None, f"bad request: {prefix}{exc}"


def _wait_until_read(fd: int, limit: float = 0.003) -> None:
    """Give the host a moment to read our answer before the next (CPU-heavy) fork.

    A fork of the large worker keeps a CPU busy in the kernel for a few ms;
    measured: starting it right away delays the host's read of the answer by
    ~1 ms on a 2-core machine.
    """
    deadline = time.monotonic() + limit
    size = bytearray(4)
    while time.monotonic() < deadline:
        try:
            fcntl.ioctl(fd, termios.FIONREAD, size)
        except OSError:
            return
        if not int.from_bytes(size, sys.byteorder):
            return
        time.sleep(0.0001)


def worker_main(cfg: Config, preimport: bool) -> int:
    """JSON-lines loop. Exit 0 at EOF or after a planned recycle (announced in
    the last response), EXIT_RECYCLE after a clean-up that failed (between
    requests: the host restarts the worker and resends what it had sent)."""
    global _SYMPY_CLASSES
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # stray prints (e.g. from imports) must not corrupt the protocol
    os.close(devnull)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    for key, val in CHILD_ENV.items():
        if key.endswith("_THREADS"):
            os.environ[key] = val  # before numpy loads OpenBLAS
    done, failed = _preimport() if preimport else ([], {})
    if failed:  # a promised library is missing: fail at start, not on every program
        missing = "; ".join(f"{name} ({reason})" for name, reason in failed.items())
        sys.stderr.write(f"runner: the sandbox cannot import {missing}\n")
        return EXIT_CANNOT_START
    if cfg.fresh_namespaces and (why_not := _check_fresh_namespaces(cfg)):
        sys.stderr.write(f"runner: programs cannot get fresh namespaces here: {why_not}\n")
        return EXIT_CANNOT_START
    _SYMPY_CLASSES = sympy_number_classes()
    gc.collect()
    gc.freeze()  # keep forked children from dirtying (copying) these pages
    huge = _collapse_to_huge_pages()
    ready = {
        "ready": True,
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        "preimported": done,
        "failed_imports": failed,
        "drop": cfg.drop,
        "huge_pages_mb": huge >> 20,
    }
    _write_all(proto_out, (json.dumps(ready) + "\n").encode())
    reader = os.fdopen(proto_in, "rb", buffering=1 << 16)
    # With privilege dropping, the next program's process is forked in advance
    # (it waits as root, so leftovers of the previous program cannot touch it).
    standby = _spawn(cfg, 1) if cfg.drop else None
    seq = 0
    while True:
        req, problem = _read_request(reader)
        if req is None and problem is None:
            if standby is not None:
                _discard(standby)
            return 0
        seq += 1
        if req is None:
            response = error_response(problem or "bad request")
            response["worker_seq"] = seq
            _write_all(proto_out, (json.dumps(response) + "\n").encode())
            continue
        child = standby if _alive(standby) else None
        if child is None:
            if standby is not None:
                _discard(standby)
            child = _spawn(cfg, seq)
        standby = None
        response = run_request(cfg, child, req)
        del req
        recycle = cfg.recycle > 0 and seq >= cfg.recycle
        response["worker_seq"] = seq
        if recycle:
            response["recycle"] = True
        _write_all(proto_out, (json.dumps(response) + "\n").encode())
        del response
        if recycle:
            finish(cfg, child, set())
            return 0
        if cfg.drop:
            _wait_until_read(proto_out)
            standby = _spawn(cfg, seq + 1)
        if not finish(cfg, child, {standby.pid} if standby is not None else set()):
            if standby is not None:
                _discard(standby)
            return EXIT_RECYCLE


def oneshot_main(cfg: Config) -> int:
    with contextlib.suppress(OSError):
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    raw = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
    response: dict[str, Any]
    if len(raw) > MAX_REQUEST_BYTES:
        response = error_response("bad request: request too large")
    else:
        try:
            req = parse_request(json.loads(raw))
        except ValueError as exc:
            prefix = "" if isinstance(exc, BadRequest) else "invalid JSON: "
            response = error_response(f"bad request: {prefix}{exc}")
        else:
            child = _spawn(cfg, 0)
            response = run_request(cfg, child, req)
            finish(cfg, child, set())
    sys.stdout.write(json.dumps(response) + "\n")
    sys.stdout.flush()
    return 0


def exec_main(cfg: Config, argv: list[str], timeout: float | None, cwd: str | None) -> NoReturn:
    """Launcher for one-off commands: same limits and privilege drop, then exec."""
    if not argv:
        raise SystemExit("runner --exec: no command given")
    _apply_limits(cfg, None if timeout is None else math.ceil(timeout) + 1)
    os.umask(0o022)
    _drop_privileges(cfg)
    if cwd:
        os.chdir(cwd)  # after the drop: the directory may be readable by 65534 only
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write(f"runner --exec: cannot execute {argv[0]!r}: {exc.strerror}\n")
        sys.stderr.flush()
        os._exit(127 if exc.errno == errno.ENOENT else 126)


def build_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="Run solution() programs in isolation.")
    p.add_argument("--worker", action="store_true", help="warm worker (JSON lines)")
    p.add_argument(
        "--exec",
        dest="exec_cmd",
        action="store_true",
        help="apply limits and drop privileges, then exec the command after --",
    )
    p.add_argument(
        "--exec-timeout", type=float, default=None, help="CPU limit (seconds + 1) for --exec"
    )
    p.add_argument("--exec-cwd", default=None, help="working directory for --exec")
    p.add_argument(
        "--own-pidns",
        action="store_true",
        help="the runner owns its PID namespace: kill all else after each program",
    )
    p.add_argument(
        "--fresh-namespaces",
        action="store_true",
        help="each program in its own user, IPC and network namespaces (needs unshare)",
    )
    p.add_argument(
        "--require-drop",
        action="store_true",
        help="refuse to run unless programs can run as uid 65534",
    )
    p.add_argument("--no-preimport", action="store_true")
    p.add_argument(
        "--recycle", type=int, default=500, help="worker exits after N programs (0: never)"
    )
    p.add_argument("--memory-mb", type=int, default=1024, help="RLIMIT_AS per program")
    p.add_argument("--fsize-mb", type=int, default=16, help="RLIMIT_FSIZE per program")
    p.add_argument("--nofile", type=int, default=64, help="RLIMIT_NOFILE per program")
    p.add_argument("--nproc", type=int, default=16, help="RLIMIT_NPROC (of the program uid)")
    p.add_argument(
        "--uid",
        type=int,
        default=SANDBOX_UID,
        help="uid and gid of programs (default 65534; docker gives each container its own)",
    )
    p.add_argument("--tmp-root", default="/tmp", help="parent of per-program directories")
    p.add_argument("command", nargs=argparse.REMAINDER, help="command for --exec")
    return p


def main(argv: list[str] | None = None) -> int:
    global SANDBOX_UID, SANDBOX_GID
    args = build_arg_parser().parse_args(argv)
    if not 0 < args.uid < 0xFFFFFFFF:
        raise SystemExit(f"runner: --uid {args.uid} is not an unprivileged uid")
    SANDBOX_UID = SANDBOX_GID = args.uid  # before Config: the drop check reads it
    cfg = Config(args)
    if args.exec_cmd:
        command = list(args.command)
        if command[:1] == ["--"]:
            command = command[1:]
        exec_main(cfg, command, args.exec_timeout, args.exec_cwd)
    if args.worker:
        return worker_main(cfg, preimport=not args.no_preimport)
    return oneshot_main(cfg)


if __name__ == "__main__":
    sys.exit(main())
