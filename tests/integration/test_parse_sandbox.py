"""Parsing in a child process (services/adapters/parse_sandbox.py): a good file comes back as the in-process parse
would give it; a file that takes too long, needs too much memory, or crashes the child is refused with its name,
and the caller goes on. Needs no PocketBase: only real child processes."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from r42_app.core.documents import DocumentRefused
from r42_app.services.adapters import parse_sandbox
from r42_app.services.adapters.documents import parse_bytes
from r42_app.services.adapters.parse_sandbox import default_timeout, parse_file
from r42_app.settings import load_settings
from tests.fakes import documents as fake

pytestmark = pytest.mark.slow  # heavy: parsers in sandboxed subprocesses, slow and memory-hungry files (~25 s)


def refused(filename: str, data: bytes, **kw) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        parse_file(filename, data, **kw)
    assert filename in caught.value.user_message
    return caught.value


def test_a_good_file_comes_back_as_the_parser_gives_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the child finds the package from any directory
    data = fake.make_pdf(["Inleiding\n\nHet begin.", "Verder."], title="Gids", outline=[("Inleiding", 1)])
    assert parse_file("gids.pdf", data) == parse_bytes("gids.pdf", data)
    deck = fake.make_pptx([("Welkom", ["punt"])], notes=["Notitie met é en 😀."])
    assert parse_file("d.pptx", deck) == parse_bytes("d.pptx", deck)


def test_a_refusal_in_the_child_is_the_same_refusal():
    e = refused("slot.pdf", fake.encrypted_pdf())
    assert e.kind == "encrypted"
    e = refused("dik.pdf", fake.make_pdf(["x"] * 501))
    assert e.kind == "too_many_pages" and e.fields == {"filename": "dik.pdf", "pages": 501, "maximum": 500}


def test_a_zip_bomb_is_refused_before_it_is_unpacked():
    e = refused("bom.docx", fake.zip_bomb_docx(300), memory_mb=256)  # 256 MB could not hold what it unpacks to
    assert e.kind == "zip_bomb" and "200 MB" in e.user_message


def test_a_pdf_that_never_finishes_is_stopped_at_the_timeout():
    e = refused("lus.pdf", fake.looping_pdf(), timeout_s=2)
    assert e.kind == "timeout" and e.fields["seconds"] == 2 and "2 seconden" in e.user_message


def test_a_parser_that_needs_too_much_memory_is_stopped():
    data = fake.memory_hungry_pdf(60)  # 240 KB; 60 MB of text operators once unpacked
    assert parse_file("licht.pdf", fake.make_pdf(["Klein."]), memory_mb=200).pages == 1  # the limit itself is fine
    e = refused("zwaar.pdf", data, memory_mb=200, timeout_s=60)
    assert e.kind == "memory" and "geheugen" in e.user_message


def test_a_broken_file_is_called_broken_behind_a_parent_that_holds_much_memory():
    # the served app holds a model and an index; a child started by vfork inherited that high-water mark in
    # ru_maxrss, so a broken PDF was refused as "too much memory" behind it (seen once in a test run's worker)
    held = bytearray(b"\x01") * (300 * 1024 * 1024)  # 300 MB, every page touched
    try:
        e = refused("kapot.pdf", fake.truncated_pdf(), memory_mb=400)  # a half of 400 MB: under what the parent holds
    finally:
        del held
    assert e.kind == "corrupt" and "geheugen" not in e.user_message


def test_a_child_that_answers_garbage_or_crashes_is_failed(monkeypatch):
    monkeypatch.setattr(parse_sandbox, "MODULE", "json.tool")  # reads the header, chokes on the bytes: exit 1
    assert refused("x.txt", b"hallo").kind == "failed"


def test_the_answer_of_a_child_read_as_the_parent_reads_it():
    with pytest.raises(DocumentRefused) as e:
        parse_sandbox._answer("a.txt", 0, b"not json", b"", 10)
    assert e.value.kind == "failed"
    with pytest.raises(DocumentRefused) as e:
        parse_sandbox._answer("a.txt", 0, b'{"ok": false, "kind": "rm -rf", "fields": {}}', b"", 10)
    assert e.value.kind == "failed"
    with pytest.raises(DocumentRefused) as e:
        parse_sandbox._answer("a.txt", -signal.SIGKILL, b"", b"", 10)
    assert e.value.kind == "memory"
    with pytest.raises(DocumentRefused) as e:
        parse_sandbox._answer("a.txt", -signal.SIGXCPU, b"", b"", 10)
    assert e.value.kind == "timeout" and e.value.fields["seconds"] == 10
    with pytest.raises(DocumentRefused) as e:
        parse_sandbox._answer("a.txt", 1, b"", b"Traceback...\nMemoryError\n", 10)
    assert e.value.kind == "memory"


def test_a_child_does_not_outlive_a_timeout():
    before = _children()
    refused("lus.pdf", fake.looping_pdf(), timeout_s=1)
    assert _children() <= before


def test_the_default_timeout_grows_with_the_size():
    assert default_timeout(0) == 20
    assert default_timeout(10 * 1024 * 1024) == 60
    assert default_timeout(100 * 1024 * 1024) == 300
    assert default_timeout(1024 * 1024, base=5) == 9  # R42_PARSE_TIMEOUT moves the base


def test_r42_parse_timeout_refuses_a_file_that_takes_longer(monkeypatch):
    """An operator's shorter limit holds: the never-ending PDF is refused after R42_PARSE_TIMEOUT seconds (plus its
    size's share), with the limit in the message; a bad value is refused at start with the setting's name."""
    monkeypatch.setenv("R42_PARSE_TIMEOUT", "2")
    e = refused("lus.pdf", fake.looping_pdf())
    assert e.kind == "timeout" and e.fields["seconds"] == 2  # 2 s plus 4 s per MB of a 1 KB file
    monkeypatch.setenv("R42_PARSE_TIMEOUT", "0")
    with pytest.raises(SystemExit, match="R42_PARSE_TIMEOUT"):
        load_settings()


def test_one_tenants_queue_of_slow_files_does_not_hold_up_another_tenants_file(monkeypatch):
    """Issue 44, finding 3: acme's three files that each take seconds, then demo's one-line file. Demo's is read at
    once and done before any of acme's; acme's wait their turn in acme's queue, and say so."""
    monkeypatch.setattr(parse_sandbox, "_SLOTS", parse_sandbox.ParseSlots(2))  # this process's two slots, fresh
    finished: list[str] = []
    heard: dict[str, list[str]] = {}
    queued = threading.Semaphore(0)

    def read(tenant: str, name: str, data: bytes, timeout_s: float | None) -> None:
        statuses = heard.setdefault(name, [])

        def on_wait(status: str) -> None:
            statuses.append(status)
            if status == "queued":
                queued.release()

        try:
            parse_file(name, data, timeout_s=timeout_s, tenant=tenant, on_wait=on_wait)
        except DocumentRefused:
            pass  # acme's loop forever: stopped at their timeout
        finished.append(name)

    with ThreadPoolExecutor(4) as pool:
        acme = [pool.submit(read, "acme", f"lus-{n}.pdf", fake.looping_pdf(), 3) for n in range(3)]
        for _ in range(2):  # one of acme's is read, two wait (one slot stays free for another tenant)
            assert queued.acquire(timeout=60)
        demo = pool.submit(read, "demo", "kort.md", b"# Kort\n\nEen regel tekst.", None)
        demo.result(timeout=60)
        assert finished == ["kort.md"]  # before any of acme's
        for job in acme:
            job.result(timeout=120)
    assert heard["kort.md"] == []  # it never waited
    assert sorted(map(tuple, (heard[f"lus-{n}.pdf"] for n in range(3)))) == [(), ("queued", "reading"),
                                                                           ("queued", "reading")]


def _children() -> set[int]:
    me = str(os.getpid())
    found = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == me:
                        found.add(int(pid))
            except OSError:
                continue
    return found
