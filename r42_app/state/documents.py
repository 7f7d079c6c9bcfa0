"""DocumentUploadState: "Documenten toevoegen" on /admin/topics (admins).

The upload handler only checks the admin and puts the files aside (data dir `uploads/`, where every worker
process can reach them); a background event then imports them one by one through the same code path as the CLI
and the API (services/document_import.py), each file parsed in the sandbox off the event loop, and shows after
every file what happened to it: "In de wachtrij" while it waits for a parse slot (other files, its tenant's or
another's, are being read: parse_sandbox.ParseSlots), "Bezig met lezen…" while it is read, then the outcome. The
state's lock is not held while a file is parsed, so the admin's other events (R42's chat) go on.

The upload itself goes to Reflex's upload route, which reads nothing without this tab's upload permit
(services/uploads.py, r42_app/upload_limit.py); /admin/topics grants it (AdminTopicListState.load_list) and sign-out
revokes it. Just before the upload is sent, `upload_starting` says at once when it would be refused for too
many uploads in flight.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import secrets
import shutil
import time
from pathlib import Path
from typing import BinaryIO

import reflex as rx

from r42_app.container import services
from r42_app.core.documents import (
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_UPLOAD_BYTES,
    kind_of,
    name_key,
    rejection,
    upload_name,
)
from r42_app.core.kb import TOPIC_TYPES
from r42_app.core.messages import N_, msg, number
from r42_app.services.document_import import FileOutcome
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError
from r42_app.services.uploads import RETRY_AFTER_S, keep_permit, uploads_busy
from r42_app.state.auth import AuthState
from r42_app.state.focus import focus_if_lost
from r42_app.state.held import hold

log = logging.getLogger(__name__)

UPLOAD_ID = "documents-upload"
SENDING_GRACE_S = 15.0  # watch_sending: beyond the upload route's read timeout (Reflex reads the form after the bytes)
STALE_UPLOAD_S = 24 * 3600  # uploads left behind by a worker that stopped mid-way are removed after this

STATUS_LABELS = {"waiting": N_("Wacht"), "queued": N_("In de wachtrij"), "reading": N_("Bezig met lezen…"),
                 "created": N_("Toegevoegd"), "updated": N_("Bijgewerkt"), "unchanged": N_("Ongewijzigd"),
                 "refused": N_("Geweigerd")}
STATUS_TONES = {"waiting": "gray", "queued": "amber", "reading": "blue", "created": "green", "updated": "green",
                "unchanged": "gray", "refused": "red"}


@dataclasses.dataclass
class TopicLink:
    slug: str = ""
    label: str = ""


@dataclasses.dataclass
class DocumentRow:
    name: str = ""
    size: str = ""
    status: str = "waiting"
    status_label: str = ""
    tone: str = "gray"
    message: str = ""
    topics: list[TopicLink] = dataclasses.field(default_factory=list)
    more: int = 0  # topics not listed


def _size_label(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1024 / 1024:.1f} MB".replace(".", ",")
    return f"{max(1, round(n / 1024))} kB"


def _uploads_dir() -> Path:
    return services().settings.data_dir / "uploads"


def _sizes(batch: str, n: int) -> list[int]:
    folder = _uploads_dir() / batch
    return [(folder / f"{k:03d}").stat().st_size for k in range(n)]


def _put_aside(files: list[BinaryIO]) -> str:
    """Copy the uploaded files (spooled by the upload's form parser) to a new folder of their own, in chunks, never
    more than MAX_FILE_BYTES + 1 of one (a larger one is refused by its size when it is imported); returns the
    folder's id."""
    root = _uploads_dir()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    now = time.time()
    for old in root.iterdir():  # left behind by a worker that stopped mid-way
        if old.name == "incoming":  # the API's uploads in flight (unnamed files: nothing is ever left there)
            continue
        try:
            if now - old.stat().st_mtime > STALE_UPLOAD_S:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:
            pass
    batch = secrets.token_hex(8)
    folder = root / batch
    folder.mkdir(mode=0o700)
    for n, source in enumerate(files):
        left = MAX_FILE_BYTES + 1
        with open(folder / f"{n:03d}", "wb") as out:
            while left > 0:
                chunk = source.read(min(1024 * 1024, left))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
    return batch


def _row(outcome: FileOutcome, size: str) -> DocumentRow:
    shown = outcome.topics[:8]
    return DocumentRow(outcome.filename, size, outcome.status, STATUS_LABELS[outcome.status],
                       STATUS_TONES[outcome.status], outcome.message,
                       [TopicLink(slug, label) for slug, label in shown], max(0, len(outcome.topics) - len(shown)))


def _drop_name(drop: object) -> str:
    """A drop's name as the page sends it (a random string the page makes), clipped: a client chooses it."""
    return str(drop)[:40]


def _summary(rows: list[DocumentRow]) -> str:
    """"Klaar: 1 toegevoegd, …, 1 geweigerd", counted from the rows as they stand ("" while none is done)."""
    done = {k: sum(1 for r in rows if r.status == k) for k in ("created", "updated", "unchanged", "refused")}
    return msg("doc.summary", **{k: number(v) for k, v in done.items()}) if any(done.values()) else ""


class DocumentUploadState(rx.State):
    """The files of the last upload and what happened to each."""

    doc_rows: list[DocumentRow] = []
    doc_busy: bool = False
    doc_type: str = "concept"
    doc_sent: int = 0  # percent of the upload's bytes sent
    # The bar under the zone shows while the bytes of a drop are on their way: from its upload's first progress
    # (doc_sending_drop) till the upload has come (doc_arrived_drop). Two names rather than one flag, since the
    # progress's changes reach the page on the socket and the upload's on the upload's own answer, in either order:
    # the page shows the bar while they differ (pages/admin_topics.py SENDING), whichever it hears last. The
    # upload sets both (its progress may come after it, or not at all for a small one).
    doc_sending_drop: str = ""
    doc_arrived_drop: str = ""
    _sent_at: float = 0.0  # when the last progress came (watch_sending)
    doc_summary: str = ""
    _drop: str = ""  # the drop the three events below belong to (the page names each drop; see NEW_DROP)
    _refused_early: list[DocumentRow] = []  # the drop's files the drop zone turned away (files_rejected)
    _listed: bool = False  # the drop's sent files have their rows (upload_documents); its refused ones go after them
    _arrived: bool = False  # the drop's upload has come (upload_documents), perhaps with no file: it was sent
    _stopped: bool = False  # upload_starting said the drop's upload will be refused: its progress is not shown
    _skipped: str = ""  # a drop made while another's files were on their way: the page did not send its upload
    doc_error: str = ""
    _names: list[str] = []
    _batch: str = ""

    @rx.event
    def set_doc_type(self, value: str):
        self.doc_type = value if value in TOPIC_TYPES else "concept"

    @rx.event
    def upload_progress(self, progress: dict, drop: str = ""):
        """The page's count of the drop's bytes sent ({"progress": 0..1}): the bar under the zone shows it until the
        upload has arrived (upload_documents)."""
        if _drop_name(drop) == self._skipped:  # the page names the newest drop, whose upload it did not send: the one
            drop = self._drop  # on its way is the drop before
        if not self._this_drop(drop) or self._arrived or self._stopped:
            return  # a late count of an upload that arrived (the count is on the socket), or of one to be refused
        try:
            share = float(progress.get("progress", 0))
        except (TypeError, ValueError, AttributeError):
            return
        if not math.isfinite(share):
            return
        self.doc_sent = max(0, min(100, round(share * 100)))
        self._sent_at = time.time()
        if self.doc_sending_drop != self._drop:
            self.doc_sending_drop = self._drop
            return DocumentUploadState.watch_sending

    @rx.event(background=True)
    async def watch_sending(self):
        """An upload the browser gives up on (the network gone; cut off by the upload route after
        R42_UPLOAD_READ_TIMEOUT_S without a byte) never arrives, and the page says nothing of it: after that long
        and a margin without progress, the bar goes and the zone says the files did not come."""
        limit = services().settings.upload_read_timeout + SENDING_GRACE_S
        async with self:
            drop = self.doc_sending_drop
            await (await self.get_state(AuthState)).user()  # its message in the reader's language (Dutch before)
        while True:
            await asyncio.sleep(min(5.0, limit / 4))
            async with self:
                if self.doc_sending_drop != drop or self.doc_arrived_drop == drop:
                    return
                if time.time() - self._sent_at > limit:
                    self.doc_arrived_drop = drop
                    self.doc_error = msg("doc.upload_failed")
                    return

    def _this_drop(self, drop: object) -> bool:
        """A drop sends three things in an order nobody sets (upload_starting and files_rejected on the socket, the
        good files' upload as an HTTP request, which may be read first): whichever comes first starts the drop,
        forgetting the one before (its refused files must not be listed again). False for another drop while an
        import runs (the zone is disabled then): the running import's rows stay as they are."""
        drop = _drop_name(drop)
        if drop == self._drop:
            return True
        if self.doc_busy or drop == self._skipped:
            return False
        self._drop, self._refused_early, self._listed, self._stopped, self._skipped = drop, [], False, False, ""
        self._arrived = False
        self.doc_sent = 0
        return True

    @rx.event
    async def files_rejected(self, rejections: list, drop: str = ""):
        """Files the drop zone turned away before sending (too large, too many, another kind), each as the page
        sends it: {"name": the file's name, "codes": react-dropzone's error codes} (the page maps them: the File
        itself reaches the server as its bytes, without its name). Anything else is a file without a name. Said in
        the reader's language (the event's own: set by reading who it is; it was Dutch to everyone)."""
        await (await self.get_state(AuthState)).user()
        rows = []
        for item in rejections[:MAX_FILES] if isinstance(rejections, list) else []:
            name, codes = rejection(item)
            name = name or msg("doc.a_file")
            if "file-too-large" in codes:
                message = msg("doc.too_large", filename=name, size="> 50", maximum=MAX_FILE_BYTES // 1024 // 1024)
            elif "too-many-files" in codes:
                message = msg("doc.too_many_files", maximum=MAX_FILES)
            else:
                message = msg("doc.unsupported", filename=name)
            rows.append(DocumentRow(name, "", "refused", STATUS_LABELS["refused"], "red", message))
        if not self._this_drop(drop):
            return
        # beside good files, the upload of those (an HTTP request) may reach the server before or after this event
        # (a message on the socket), or even finish first: these rows go after the good files' either way, and the
        # summary counts them (upload_documents, import_documents); alone, they are the answer
        if self._listed:
            self.doc_rows = self.doc_rows + rows
            if not self.doc_busy:  # the import is done: say it again with these
                self.doc_summary = _summary(self.doc_rows)
            return
        self._refused_early = rows
        self.doc_rows = rows
        self.doc_summary = _summary(rows)

    @rx.event
    async def upload_starting(self, drop: str = "", still_sending: bool = False, size: int = 0):
        """The drop zone is about to send its files (on_drop, before the upload): say at once why they will not be
        imported, if they will not (not an admin; the files of the drop before still on their way, when the page
        does not send these; more bytes than the upload route takes; too many uploads in flight for the user or the
        tenant), since the browser shows nothing of an upload it skips or the route refuses."""
        auth = await self.get_state(AuthState)
        user = await auth.admin()
        if user is None:
            self.doc_error = msg("kb.refused")
            return
        drop = _drop_name(drop)
        if still_sending is True and drop != self._drop:
            self._skipped = drop  # its rejected files (files_rejected) must not replace the rows of the one on its way
            # the page's request for the drop before is open till its import and the list after it are done
            finishing = self._arrived and not self.doc_busy
            self.doc_error = msg("doc.still_finishing" if finishing else "doc.still_sending")
            return
        # its upload may have come first: then the import is busy with it, or done (its slot is free again)
        if not self._this_drop(drop) or self.doc_busy or self._arrived:
            return
        if isinstance(size, (int, float)) and size > MAX_UPLOAD_BYTES:
            self._stopped = True
            self.doc_error = msg("doc.upload_too_large")
            return
        cfg = services().settings
        # the page grants this tab's upload permit when it loads; a file dropped before that load finished (a busy
        # server) was refused by the upload route without a word. The upload is sent after this event, so it holds.
        await keep_permit(services().shared, self.router.session.client_token, user, cfg.session_hours * 3600)
        busy = await uploads_busy(services().shared, user.id, user.tenant_id, cfg.uploads_per_user,
                                  cfg.uploads_per_tenant, self.router.session.client_token)
        self._stopped = busy
        self.doc_error = msg("doc.uploads_busy", seconds=RETRY_AFTER_S) if busy else ""

    @rx.event
    async def upload_documents(self, files: list[rx.UploadFile], drop: str = ""):
        """The files arrived: check the admin, put them aside, and import them in the background."""
        auth = await self.get_state(AuthState)
        user = await auth.admin(True)
        if user is None:
            self.doc_error = msg("kb.refused")
            self.doc_sending_drop = self.doc_arrived_drop = _drop_name(drop)
            return
        if self.doc_busy:
            return rx.toast.info(msg("doc.busy"))
        if _drop_name(drop) == self._skipped:  # the drop before arrived just before the page sent this one after all
            self._skipped = ""
        self._this_drop(drop)
        # both names: the progress's changes and these reach the page by two ways, in either order
        self._arrived, self.doc_sending_drop, self.doc_arrived_drop = True, self._drop, self._drop
        if self._stopped:  # upload_starting said why it is refused (together over the limit; uploads busy): it is
            return
        if not self._skipped:  # else it says which drop was not sent, till the next one
            self.doc_error = ""
        if len(files) > MAX_FILES:
            self.doc_summary = ""
            self.doc_error = msg("doc.too_many_files", maximum=MAX_FILES)
            return
        names = [upload_name(f.name) for f in files]
        if not names:  # only files the drop zone turned away: their rows (files_rejected) are the answer
            return
        self.doc_summary = ""
        self.doc_busy = True
        try:
            self._batch = await asyncio.to_thread(_put_aside, [f.file for f in files])
            sizes = await asyncio.to_thread(_sizes, self._batch, len(names))
        except OSError as exc:
            log.error("putting uploaded documents aside failed: %s", exc)
            self.doc_busy = False
            self.doc_error = msg("doc.upload_failed")
            return
        except asyncio.CancelledError:  # the page went away meanwhile (a reload): nothing is imported, and the zone
            self.doc_busy = False  # of this tab's next page must not stay disabled (the folder: _put_aside's sweep)
            raise
        self._names = names
        self.doc_rows = [DocumentRow(name, _size_label(size), "waiting", STATUS_LABELS["waiting"], "gray")
                         for name, size in zip(names, sizes, strict=True)] + self._refused_early
        self._listed = True
        return DocumentUploadState.import_documents

    @rx.event(background=True)
    async def import_documents(self):
        """The files put aside, one by one. The import goes on when the page that sent them goes away (a reload, the
        tab closed): Reflex cancels the events an upload chains when its request ends early, and the rest of the
        batch was dropped with its rows on "Wacht". So the work is shielded from that; the tab's rows follow it
        (its state outlives a reload)."""
        work = hold(self._import_batch())
        try:
            await asyncio.shield(work)
        except asyncio.CancelledError:  # the page went away: the list below is not read again, so the reloaded
            hold(self._list_after(work))  # page would list the topics as they were when it loaded
            raise
        from r42_app.state.admin_topics import AdminTopicListState

        # (the page holds the upload's request open till these are done too: Reflex streams the events it chains,
        # and a drop made meanwhile is not sent; upload_starting says so)
        yield AdminTopicListState.load_list
        # the drop zone was disabled while the files were read, and the focus fell off it: back on it (the results
        # are read out by their own live region), so the keyboard goes on from where the upload started
        yield focus_if_lost(".doc-drop")

    async def _list_after(self, work: asyncio.Future) -> None:
        """The topic list of this tab read again once `work` (the import) is done, for a page reloaded meanwhile."""
        from r42_app.state.admin_topics import AdminTopicListState

        await asyncio.wait({work})
        async with self:
            topics = await self.get_state(AdminTopicListState)
            tenant = await topics._admin_tenant()
            if tenant is not None:
                try:
                    await topics._refresh_rows(tenant)
                except PBError as exc:
                    log.error("reading the topics again after an import failed: %s", exc)

    async def _import_batch(self) -> None:
        async with self:
            batch, names, topic_type = self._batch, list(self._names), self.doc_type
            auth = await self.get_state(AuthState)
            user = await auth.admin(True)
        folder = _uploads_dir() / batch if batch else None
        seen: set[str] = set()
        try:
            if user is None or folder is None:
                async with self:
                    self.doc_error = msg("kb.refused")
                return
            for n, name in enumerate(names):
                async with self:
                    if n < len(self.doc_rows):
                        self.doc_rows[n] = dataclasses.replace(self.doc_rows[n], status="reading",
                                                               status_label=STATUS_LABELS["reading"], tone="blue")
                path = folder / f"{n:03d}"
                try:
                    if name_key(name) in seen:  # a second file of the same name would overwrite the first
                        outcome = FileOutcome(name, "refused", msg("doc.duplicate", filename=name), "doc.duplicate")
                    else:
                        seen.add(name_key(name))
                        data = await asyncio.to_thread(path.read_bytes)
                        outcome = await self._import_one(n, user, name, data, topic_type)
                except (KBError, PBError, OSError) as exc:
                    log.error("importing document %s failed: %s", name, exc)
                    outcome = FileOutcome(name, "refused", msg("doc.write_failed", filename=name), "doc.write_failed")
                async with self:
                    size = self.doc_rows[n].size if n < len(self.doc_rows) else ""
                    if n < len(self.doc_rows):
                        self.doc_rows[n] = _row(outcome, size)
        finally:
            if folder is not None:
                await asyncio.to_thread(shutil.rmtree, folder, True)
            async with self:
                self.doc_busy = False
                self.doc_sent = 0
                self._batch = ""
                self.doc_summary = _summary(self.doc_rows)

    async def _import_one(self, n: int, user, name: str, data: bytes, topic_type: str) -> FileOutcome:
        """One file through the importer, in a thread; its row says "In de wachtrij" while it waits for a parse
        slot and "Bezig met lezen…" once it is read (the parse thread tells the event loop)."""
        loop = asyncio.get_running_loop()
        told: asyncio.Queue[str] = asyncio.Queue()

        def tell(status: str) -> None:  # in the parse thread
            loop.call_soon_threadsafe(told.put_nowait, status)

        job = asyncio.ensure_future(asyncio.to_thread(services().importer.import_file, user.tenant, name, data,
                                                      topic_type, tell))
        while True:
            next_status = asyncio.ensure_future(told.get())
            await asyncio.wait({job, next_status}, return_when=asyncio.FIRST_COMPLETED)
            if not next_status.done():
                next_status.cancel()
                return job.result()
            status = next_status.result()
            async with self:
                if n < len(self.doc_rows) and status in ("queued", "reading"):
                    self.doc_rows[n] = dataclasses.replace(
                        self.doc_rows[n], status=status, status_label=STATUS_LABELS[status],
                        tone=STATUS_TONES[status], message=msg("doc.queued") if status == "queued" else "")

    @rx.event
    def clear_documents(self):
        if not self.doc_busy:
            self.doc_rows = []
            self.doc_summary = ""
            self.doc_error = ""


ACCEPT = {
    "application/pdf": [".pdf"],
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": [".docx"],
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": [".pptx"],
    "text/markdown": [".md", ".markdown"],
    "text/html": [".html", ".htm"],
    "text/plain": [".txt"],
}
assert all(kind_of("x" + ext) for exts in ACCEPT.values() for ext in exts)
