"""Parsing an uploaded file in a child process of its own, with a time and a memory limit.

`parse_file(filename, data)` runs `parse_bytes` (services/adapters/documents/) in a fresh Python process
(`python -m r42_app.services.adapters.parse_sandbox`): a PDF that makes pypdf loop, a file that makes a parser
allocate gigabytes or a parser's crash ends that process, never the app. One process per file: the isolation is
the point, and the child starts in well under a second (it imports only the parser the file needs).

The protocol, pickle-free: the parent writes one JSON header line ({"filename": ..., "size": ...}) and then the
file's raw bytes on the child's stdin; the child answers one JSON object on stdout: {"ok": true, "doc": {kind,
title, markdown, pages}} or {"ok": false, "kind": <DocumentRefused kind>, "fields": {...}, "detail": ...}.

The limits: the child sets RLIMIT_AS (memory_mb) and RLIMIT_CPU on itself before it reads the file, and asks the
kernel to kill it when its parent dies (Linux). The parent kills it at the wall-clock timeout (default 20 s plus
4 s per MB, at most 300 s). What the caller gets: the ParsedDocument, or a DocumentRefused: the parser's own, or
timeout (too slow), memory (MemoryError, or killed by a signal), failed (any other crash or an answer that is no
answer).

A process reads R42_PARSE_SLOTS files at once (2 by default), shared between tenants (`ParseSlots`: a queue per
tenant, and one tenant never holds every slot), and a child runs at a lower CPU priority (nice 10) than the
app, so a flood of slow files from one tenant neither holds up another tenant's upload nor its chat.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from r42_app.core.documents import MAX_FILE_BYTES, MAX_MARKDOWN, MAX_SECTIONS, DocumentRefused, ParsedDocument
from r42_app.core.fair_queue import FairQueue

MODULE = "r42_app.services.adapters.parse_sandbox"
DEFAULT_MEMORY_MB = 1024
BASE_TIMEOUT_S = 20.0
TIMEOUT_PER_MB_S = 4.0
MAX_TIMEOUT_S = 300.0
# kinds a child may answer with (documents.py raises these); anything else is an answer that is no answer
KINDS = {"unsupported", "mismatch", "empty", "no_text_layer", "corrupt", "encrypted", "too_large",
         "too_many_pages", "zip_bomb", "timeout", "memory", "not_text", "failed"}
_MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
CHILD_NICE = 10


def default_timeout(size: int, base: float = BASE_TIMEOUT_S) -> float:
    """Seconds a file of `size` bytes may take: `base` (R42_PARSE_TIMEOUT, 20 s) plus 4 s per MB, at most 300 s."""
    return min(MAX_TIMEOUT_S, base + TIMEOUT_PER_MB_S * size / (1024 * 1024))


def _package_root() -> str:
    import r42_app

    return str(Path(r42_app.__file__).resolve().parents[1])


CHILD_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "VIRTUAL_ENV")  # nothing secret


def _child_env() -> dict[str, str]:
    """The child's environment: where Python and the package are, and the locale; none of the app's secrets
    (API keys, tokens, the Redis password), so a parser bug that ran code would find none."""
    env = {k: os.environ[k] for k in CHILD_ENV if k in os.environ}
    root = _package_root()
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        paths.insert(0, root)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTHONUNBUFFERED"] = "1"
    env["HOME"] = "/nonexistent"
    return env


class ParseSlots:
    """The files this process reads at once (each child may take 1 GB), shared fairly between tenants
    (core/fair_queue.py: a queue per tenant; one tenant holds at most all slots but one while another's file
    waits). A thread that must wait says so through `on_wait("queued")`, and `on_wait("reading")` once it may
    start, so an admin sees "In de wachtrij" rather than a hang."""

    def __init__(self, slots: int):
        self.queue = FairQueue(slots)
        self._lock = threading.Condition()

    @contextmanager
    def slot(self, tenant: str = "", on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        ticket = object()
        try:
            with self._lock:
                if self.queue.ask(ticket, tenant):
                    self._lock.notify_all()
                must_wait = not self.queue.granted(ticket)
            if must_wait:
                if on_wait is not None:
                    on_wait("queued")
                with self._lock:
                    self._lock.wait_for(lambda: self.queue.granted(ticket))
                if on_wait is not None:
                    on_wait("reading")
            yield
        finally:
            with self._lock:
                if self.queue.done(ticket):
                    self._lock.notify_all()


_SLOTS: ParseSlots | None = None
_SLOTS_MADE = threading.Lock()


def parse_slots() -> ParseSlots:
    """This process's slots (R42_PARSE_SLOTS of them, read once)."""
    global _SLOTS
    with _SLOTS_MADE:
        if _SLOTS is None:
            from r42_app.settings import load_settings

            _SLOTS = ParseSlots(load_settings().parse_slots)
        return _SLOTS


def parse_file(filename: str, data: bytes, *, timeout_s: float | None = None, memory_mb: int = DEFAULT_MEMORY_MB,
               tenant: str = "", on_wait: Callable[[str], None] | None = None) -> ParsedDocument:
    """`parse_bytes(filename, data)` in a child process, stopped after `timeout_s` seconds (default: by size from
    R42_PARSE_TIMEOUT, see `default_timeout`) or when it needs more than `memory_mb` MB. Raises DocumentRefused
    (with the filename) for a refused file, a timeout, too much memory or a crash. The file waits for one of this
    process's parse slots in `tenant`'s queue (ParseSlots); `on_wait` hears when it waits and when it starts."""
    if len(data) > MAX_FILE_BYTES:  # not worth a process: the parser would refuse it at once
        raise DocumentRefused("too_large", f"{len(data)} bytes", filename=filename,
                              size=round(len(data) / (1024 * 1024), 1), maximum=MAX_FILE_BYTES // (1024 * 1024))
    if timeout_s is None:
        from r42_app.settings import load_settings

        timeout = default_timeout(len(data), load_settings().parse_timeout)
    else:
        timeout = max(0.01, float(timeout_s))
    header = json.dumps({"filename": filename, "size": len(data)}).encode("utf-8") + b"\n"
    cpu = max(1, int(timeout) + 1)  # CPU seconds: the wall clock is the real limit; this one catches a spin
    args = [sys.executable, "-m", MODULE, "--memory-mb", str(int(memory_mb)), "--cpu-s", str(cpu),
            "--parent", str(os.getpid())]
    try:
        with parse_slots().slot(tenant, on_wait):
            done = subprocess.run(args, input=header + data, capture_output=True, timeout=timeout,
                                  env=_child_env(), cwd=_package_root(), check=False)
    except subprocess.TimeoutExpired:  # subprocess.run has killed the child and waited for it
        raise DocumentRefused("timeout", f"parsing took over {timeout:.1f} s", filename=filename,
                              seconds=max(1, int(timeout))) from None
    except OSError as e:  # no process could be started (fork failed: out of memory or processes)
        raise DocumentRefused("failed", f"cannot start the parser: {e}", filename=filename) from None
    return _answer(filename, done.returncode, done.stdout, done.stderr, cpu)


def _answer(filename: str, returncode: int, stdout: bytes, stderr: bytes, cpu: int) -> ParsedDocument:
    tail = stderr[-2000:].decode("utf-8", "replace")
    if returncode == 0:
        try:
            answer = json.loads(stdout)
            if answer.get("ok") is True:
                doc = answer["doc"]
                return ParsedDocument(str(doc["kind"]), str(doc["title"]), str(doc["markdown"]), int(doc["pages"]))
            kind, fields = answer["kind"], answer.get("fields") or {}
            if kind in KINDS and isinstance(fields, dict):
                fields = {k: v for k, v in fields.items() if k != "filename"}
                raise DocumentRefused(kind, str(answer.get("detail") or kind), filename=filename, **fields)
        except DocumentRefused:
            raise
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        raise DocumentRefused("failed", f"the parser's answer is no answer: {stdout[:200]!r}", filename=filename)
    if returncode == -signal.SIGXCPU:
        raise DocumentRefused("timeout", f"CPU limit of {cpu} s", filename=filename, seconds=cpu)
    if returncode < 0 or any(sign in tail for sign in _MEMORY_SIGNS):
        # a signal: the OOM killer's SIGKILL, or an abort when an allocation failed under RLIMIT_AS
        raise DocumentRefused("memory", f"the parser died (exit {returncode}): {tail[-300:]}", filename=filename)
    raise DocumentRefused("failed", f"the parser failed (exit {returncode}): {tail[-300:]}", filename=filename)


# -- the child --------------------------------------------------------------------------------------------


def _limit_self(memory_mb: int, cpu_s: int, parent: int) -> None:
    import resource

    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        os.nice(CHILD_NICE)  # the app's event loop (every tenant's chat) comes first on a busy CPU
    except OSError:
        pass
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))  # SIGXCPU at the soft limit, SIGKILL at the hard
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if parent and os.getppid() != parent:  # the parent died before the prctl: nobody waits for the answer
            os._exit(1)


def _peak_mb() -> float:
    """The child's own peak resident memory so far. A file called broken after the parse held half of the child's
    limit most likely failed for memory: pypdf catches a MemoryError in places and goes on, and then fails elsewhere.

    Linux's VmHWM is this program's own high-water mark. `ru_maxrss` is not: Linux keeps it across the exec that
    started the child, and the parent's pages count when it was started by vfork (as subprocess does), so behind an
    app holding a model every broken file read as a memory failure."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    import resource  # elsewhere: the best there is

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _write(answer: dict) -> None:
    sys.stdout.buffer.write(json.dumps(answer, ensure_ascii=False).encode("utf-8"))
    sys.stdout.buffer.flush()


def main(argv: list[str]) -> int:
    opts = dict(zip(argv[0::2], argv[1::2]))
    memory_mb = int(opts.get("--memory-mb", DEFAULT_MEMORY_MB))
    _limit_self(memory_mb, int(opts.get("--cpu-s", MAX_TIMEOUT_S)),
                int(opts.get("--parent", 0)))
    import logging

    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)  # pypdf's warnings about sloppy files: not ours
    stdin = sys.stdin.buffer
    header = json.loads(stdin.readline())
    data = stdin.read()
    filename = str(header["filename"])
    if len(data) != int(header["size"]):
        _write({"ok": False, "kind": "failed", "fields": {}, "detail": "short input"})
        return 0
    from r42_app.services.adapters.documents import parse_bytes

    try:
        doc = parse_bytes(filename, data)
        del data
        if len(doc.markdown) > MAX_MARKDOWN:  # more text than a document may become: refused here, not planned
            raise DocumentRefused("too_many_sections", f"{len(doc.markdown)} characters", filename=filename,
                                  maximum=MAX_SECTIONS)
        _write({"ok": True, "doc": {"kind": doc.kind, "title": doc.title, "markdown": doc.markdown,
                                    "pages": doc.pages}})
    except DocumentRefused as refused:
        if refused.kind == "corrupt" and _peak_mb() >= memory_mb / 2:  # a parser that swallowed its MemoryError
            refused = DocumentRefused("memory", f"parsing used {_peak_mb():.0f} MB before it failed",
                                      filename=filename)
        fields = {k: v for k, v in refused.fields.items() if isinstance(v, (str, int, float))}
        _write({"ok": False, "kind": refused.kind, "fields": fields, "detail": str(refused)[:1000]})
    except MemoryError:  # writing the answer needed more than the limit
        _write({"ok": False, "kind": "memory", "fields": {}, "detail": "MemoryError"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
