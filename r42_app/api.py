"""HTTP API mounted on the Reflex backend; the same chat turn as the UI.

    GET  /api/health
    POST /api/quiz/end    ends the caller's quiz (Bearer token, or {"token": ...} for navigator.sendBeacon)
    POST /api/chat        Authorization: Bearer <PocketBase token>
                          {"messages": [{"role", "content"}, ...], "mode"?: "fts"|"semantic"|"hybrid"}
                          -> text/event-stream of `data: {"type": ...}` events (see r42_app.chat.turn)
    POST /api/chat/delta  Authorization: Bearer <token>; {"delta": <the `delta` of a delta event>}
                          -> {"status": "applied"|"suggested", "message", "topics", "relations"}
    POST /api/kb/documents  multipart `files` (+ optional `type`), an admin's Bearer token: import documents
                          -> {"files": [{"file", "status": created|updated|unchanged|refused, "message", ...}]};
                          429 `uploads_busy` (Retry-After) past the uploads in flight per user and per tenant,
                          408 `upload_timeout` when the body stops coming
    GET  /api/kb/documents/{id}/file?tenant=&expires=&sig=  a document's original file (a signed link)
    GET  /api/people?q=&role=&state=&page=&per_page=   an admin's Bearer token: the tenant's people
    POST /api/people      {"email", "name"?, "role"?} -> 201 {"id", "state": "invited", "invite_url", "mailed"}
    POST /api/people/import?dry_run=1  multipart `file` (CSV) -> {"rows", "bad": [...], "invited", ...}; 422 bad rows
    GET  /auth/oidc/start?email=&next=, /auth/oidc/callback: signing in through the organisation (sso_routes.py)
    GET|POST /lti/login, POST /lti/launch: opening R42 from a learning environment, LTI 1.3 (lti_routes.py)
    PATCH /api/people/{id}  {"role"} or {"state": "active"|"deactivated"};  POST /api/people/{id}/invite: a new link
    GET  /api/me, PATCH /api/me {"language": "nl"|"en"|""}: who the token is; the person's own language (issue 52)
    POST /api/chat/confirm  {"id": <of a confirm_required event>, "decision": "allow"|"deny"} while the turn
                          streams (on any backend worker) -> {"id", "decision"}; 404/403/410/409 for
                          unknown/other user/expired/used, 503 while the workers' shared state is away

Errors are JSON {"type", "message"}: 401 without a valid token, 400 for bad input (JSON nested
deeper than MAX_JSON_DEPTH included), 413 {"type": "payload_too_large", ...} for a body over
MAX_BODY_BYTES (QUIZ_END_MAX_BODY_BYTES for /api/quiz/end), 403 `tenant_disabled` (an operator disabled the
organisation: `r42 tenant disable`), 403 `chatbot_disabled` (R42 is off for the tenant) or `capability_denied`
(no `qa_help`, or no `data_write` for /api/chat/delta), 423 Locked
`quiz_active` while the user takes a quiz, 429 `rate_limited` with Retry-After when one user sends
too fast, 422 `delta_not_applied` when a confirmed edit no longer fits, 503 `unavailable`. A turn
that fails unexpectedly ends its stream with an `error` event of kind `internal`. Messages are in the person's
language (their own choice, else their organisation's); before a token is known, in the Accept-Language's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import logging
import math
import re
import secrets
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote as quote_url

from sse_starlette.sse import ServerSentEvent
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from r42_app import lti_routes, sso_routes
from r42_app.chat.confirm import DeltaNotApplied, confirm_delta
from r42_app.chat.turn import ChatRefused, check_turn, give_back, one_user_at_a_time, run_turn
from r42_app.container import services
from r42_app.core.chat import ChatInputError, validate_messages
from r42_app.core.documents import MAX_FILE_BYTES, MAX_FILES, download_signature, name_key, upload_name
from r42_app.core.identity import SignedInUser, Tenant
from r42_app.core.kb import TOPIC_TYPES
from r42_app.core.mcp import ConfirmationError
from r42_app.core.messages import LANGUAGES, best_language, language_of, msg, set_language
from r42_app.core.people import MAX_IMPORT_BYTES
from r42_app.flood_gate import flooded
from r42_app.services.document_import import FileOutcome
from r42_app.services.retrieval import MODES
from r42_app.services.runtime.loop_lag import MONITOR
from r42_app.services.store.auth import AuthError, AuthService, Session
from r42_app.services.store.kb_store import KBError
from r42_app.services.store.pb import PBError, pocketbase_answers
from r42_app.services.store.people import Actor, PeopleError
from r42_app.services.uploads import (
    RETRY_AFTER_S,
    ReceivedForm,
    UploadCut,
    incoming_dir,
    receive_form,
    slot_limits,
    upload_slots,
)

REFUSAL_STATUS = {"unauthenticated": 401, "forbidden": 403, "tenant_disabled": 403, "chatbot_disabled": 403,
                  "capability_denied": 403, "quiz_active": 423, "quota_exceeded": 402, "rate_limited": 429,
                  "unavailable": 503}
MAX_BODY_BYTES = 256 * 1024  # the 12 turns that reach the model (24 messages of 8,000 characters) fit
QUIZ_END_MAX_BODY_BYTES = 8 * 1024  # {"token": ...}
DELTA_MAX_BODY_BYTES = 64 * 1024  # a delta of 3 topics and 5 relations is < 5 KB
MAX_JSON_DEPTH = 32  # a chat request nests 3 deep
HEALTH_TIMEOUT_S = 2.0

log = logging.getLogger(__name__)
T = TypeVar("T")


class ApiError(Exception):
    """Every refusal of the API, raised wherever it is found and answered in one place (`_answer`): its status,
    its `type` and message, the headers (Retry-After) and any fields more of the body."""

    def __init__(self, status: int, kind: str, message: str, headers: dict[str, str] | None = None,
                 extra: dict[str, Any] | None = None):
        super().__init__(f"{status} {kind}: {message}")
        self.status, self.kind, self.message = status, kind, message
        self.headers = headers
        self.extra = extra or {}

    def response(self) -> JSONResponse:
        return JSONResponse({"type": self.kind, "message": self.message, **self.extra}, status_code=self.status,
                            headers=self.headers)


async def _answer(_request: Request, exc: Exception) -> Response:
    """Starlette's handler of ApiError: the refusal as JSON {"type", "message"}."""
    assert isinstance(exc, ApiError)
    return exc.response()


def _refusal(exc: ChatRefused) -> ApiError:
    """A guard refusal as its status (429 with Retry-After; 402 with the reason and credit metadata)."""
    headers = {"Retry-After": str(max(1, math.ceil(exc.retry_after)))} if exc.kind == "rate_limited" else None
    return ApiError(REFUSAL_STATUS.get(exc.kind, 403), exc.kind, exc.user_message, headers, exc.details)


def _sse(event: dict[str, Any]) -> str:
    """One server-sent event of the chat stream: `data: <JSON>` and a blank line."""
    return ServerSentEvent(data=json.dumps(event, ensure_ascii=False), sep="\n").encode().decode()


NO_TOKEN = "Send your PocketBase token as `Authorization: Bearer <token>`."


async def health(request: Request) -> JSONResponse:  # noqa: ARG001
    """`GET /api/health`: the app answers and can reach PocketBase; also each MCP server's state (a server
    that is down makes only its tools unavailable, not the app: it does not change the status). While this
    worker still loads the embedding model and the indexes (services/runtime/warmup.py) it says "warming", 503."""
    from r42_app.services.runtime.warmup import WARMUP

    ok = await pocketbase_answers(services().settings.pb_url, HEALTH_TIMEOUT_S)
    mcp = {s.name: s.state for s in services().mcp_hub.statuses()}
    status = "degraded" if not ok else "ok" if WARMUP.ready else "warming"
    return JSONResponse({"status": status, "pocketbase": ok, "mcp": mcp, "warm": WARMUP.summary(),
                         "event_loop_lag": MONITOR.summary()}, status_code=200 if status == "ok" else 503)


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "payload_too_large", f"The body is larger than {limit // 1024} KB.")


def _declared_size(request: Request, limit: int) -> None:
    """400 for a Content-Length that is not a number, 413 for one over `limit` (before anything is read)."""
    declared = request.headers.get("content-length", "")
    if declared and not declared.isdigit():
        raise ApiError(400, "invalid_request", "Content-Length must be a number of bytes.")
    if declared and int(declared) > limit:
        raise _too_large(limit)


async def _read_body(request: Request, limit: int) -> bytes:
    """The request body, never more than `limit` bytes of it held: 413 at once when Content-Length
    says it is larger, else read chunk by chunk and 413 as soon as it passes the limit."""
    _declared_size(request, limit)
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _too_large(limit)
    return bytes(body)


def _nests_deeper_than(value: Any, limit: int) -> bool:
    """Whether a parsed JSON value has more than `limit` nested arrays/objects (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _parse_json(raw: bytes) -> Any:
    """The JSON value of a body; ValueError, with a message for the client, when it is not JSON or
    nests deeper than MAX_JSON_DEPTH."""
    too_deep = f"The JSON nests deeper than {MAX_JSON_DEPTH} levels."
    try:
        value = json.loads(raw)
    except RecursionError:
        raise ValueError(too_deep) from None
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        raise ValueError("The body must be JSON.") from None
    if _nests_deeper_than(value, MAX_JSON_DEPTH):
        raise ValueError(too_deep)
    return value


def _json(raw: bytes) -> Any:
    """`_parse_json`, a 400 when the body is not (shallow enough) JSON."""
    try:
        return _parse_json(raw)
    except ValueError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from None


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else ""


def _token(request: Request) -> str:
    """The Bearer token, or 401."""
    if token := _bearer(request):
        return token
    raise ApiError(401, "unauthenticated", NO_TOKEN)


async def _session(token: str, fresh: bool = False) -> Session:
    """The signed-in session of a PocketBase token; 401, 403 for a disabled organisation, or 503 when PocketBase
    cannot be asked."""
    auth = services().auth
    remembered = None if fresh else await auth.remembered_now(token)
    if remembered is not None:  # checked moments ago and not signed out since: no PocketBase call, no thread
        return remembered
    try:
        session = await (asyncio.to_thread(auth.check, token, True) if fresh else _one_check(auth, token))
    except AuthError as exc:
        log.warning("token check failed: %s", exc)
        raise ApiError(503, "unavailable", exc.user_message) from exc
    if session is None:
        raise ApiError(401, "unauthenticated", "The token is invalid or expired; sign in again.")
    if not session.user.tenant_active:  # `r42 tenant disable` (issue 46): within CHECK_CACHE_S on every worker
        raise ApiError(403, "tenant_disabled", msg("auth.tenant_disabled"))
    set_language(session.user.language)  # the rest of the request speaks the person's language
    return session


_CHECKS: dict[tuple[int, str], asyncio.Future] = {}  # (event loop, token) -> the check of it under way


async def _one_check(auth: AuthService, token: str) -> Session | None:
    """`auth.check(token)`, once for every request of that token that arrives while it runs: a flood of 300 requests
    with a token not checked in the last CHECK_CACHE_S asked PocketBase 300 times, in 300 thread hops, while another
    user's chat waited behind them (bench/bench_load.py's flood). The checks of different tokens arriving together
    share one PocketBase request too (`AuthService.check_soon`)."""
    key = (id(asyncio.get_running_loop()), token)
    pending = _CHECKS.get(key)
    if pending is None:
        pending = asyncio.ensure_future(auth.check_soon(token))  # the tokens arriving together: one request
        _CHECKS[key] = pending
        pending.add_done_callback(lambda _done: _CHECKS.pop(key, None))
    return await asyncio.shield(pending)  # one caller that goes away does not cancel the others' check


async def _signed_in_json(request: Request, limit: int, fresh: bool = False) -> tuple[Session, Any]:
    """The caller's session and JSON body; 413 over `limit`, 401 without a valid Bearer token, 400 for a body that
    is not (shallow enough) JSON. The body is read first, never past `limit`."""
    raw_body = await _read_body(request, limit)
    session = await _session(_token(request), fresh)
    return session, _json(raw_body)


async def quiz_end(request: Request) -> JSONResponse:
    """`POST /api/quiz/end`: the tab closes mid-quiz; end this user's quiz session so chat unlocks."""
    raw = await _read_body(request, QUIZ_END_MAX_BODY_BYTES)
    token = _bearer(request)
    if not token:
        try:
            body = _parse_json(raw)
        except ValueError:
            body = None
        token = str(body.get("token", "")) if isinstance(body, dict) else ""
    if not token:
        raise ApiError(401, "unauthenticated", "Send your PocketBase token as a Bearer header or {\"token\": ...}.")
    session = await _session(token)
    ended = await asyncio.to_thread(services().quiz.end, session.user.id)
    return JSONResponse({"ended": ended})


async def chat(request: Request):
    """`POST /api/chat`: one streamed, grounded answer."""
    session, body = await _signed_in_json(request, MAX_BODY_BYTES)
    if not isinstance(body, dict):
        raise ApiError(400, "invalid_request", 'The body must be an object {"messages": [...]}.')
    mode = body.get("mode", "hybrid")
    try:
        messages = validate_messages(body.get("messages"))
        if mode not in MODES:
            raise ChatInputError(f"mode must be one of {', '.join(MODES)}")
        if (wait := flooded(request.scope)) is not None:  # its token flooded the gate since it came in (flood_gate.py)
            raise ChatRefused("rate_limited", retry_after=wait)
        async with one_user_at_a_time(session.user.id):  # a user's own requests queue behind each other
            # once per turn, before anything streams; PocketBase checks the token too (signed out? moved tenant?)
            permit = await check_turn(session.user, services().chat, token=session.token)
        if (wait := flooded(request.scope)) is not None:  # ... or while the guard ran: no turn, the token back
            await give_back(session.user, services().chat)
            raise ChatRefused("rate_limited", retry_after=wait)
    except ChatInputError as exc:
        raise ApiError(400, "invalid_request", str(exc)) from exc
    except ChatRefused as exc:
        if exc.kind == "unauthenticated":  # the session no longer holds: the next request checks the token anew
            services().auth.forget(session.token)
        raise _refusal(exc) from exc

    raw = [{"role": m.role, "content": m.content} for m in messages]

    async def events():
        held = ""  # citations wait for the event after them (they come together with `done`): one write, not several
        try:
            async for event in run_turn(session.user, raw, services().chat, mode, permit=permit, channel="api"):
                data = _sse(event.to_json())
                if event.type == "citation":
                    held += data
                    continue
                yield held + data
                held = ""
            if held:
                yield held
        except (ChatInputError, ChatRefused) as exc:  # the input rules speak English to the API's developers
            message = exc.user_message if isinstance(exc, ChatRefused) else str(exc)
            yield held + _sse({"type": "error", "kind": "refused", "message": message})
        except Exception:  # anything else: the stream still ends with an event, never a silent cut
            log.exception("chat turn failed for user %s", session.user.id)
            error = {"type": "error", "kind": "internal", "message": msg("chat.failed"), "retryable": True}
            yield held + _sse(error)

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def chat_delta(request: Request) -> JSONResponse:
    """`POST /api/chat/delta` {"delta": <the delta of a `delta` event>}: confirm a proposed edit. Applied
    at once for an admin, filed as a suggestion for a learner; both need `data_write`."""
    # a write: the role as it is now
    session, body = await _signed_in_json(request, DELTA_MAX_BODY_BYTES, fresh=True)
    if not isinstance(body, dict) or not isinstance(body.get("delta"), dict):
        raise ApiError(400, "invalid_request", 'The body must be {"delta": {"reason", "topics", "relations"}}.')
    try:
        outcome = await confirm_delta(session.user, body["delta"], services().chat)
    except ChatRefused as exc:
        raise _refusal(exc) from exc
    except DeltaNotApplied as exc:
        log.info("delta not applied for user %s: %s", session.user.id, exc)
        raise ApiError(422, "delta_not_applied", exc.user_message) from exc
    return JSONResponse(outcome.as_dict())


CONFIRM_STATUS = {"unknown": 404, "other_user": 403, "expired": 410, "used": 409, "unavailable": 503}


async def chat_confirm(request: Request) -> JSONResponse:
    """`POST /api/chat/confirm` {"id", "decision": "allow"|"deny"}: answer a `confirm_required` event of a
    running turn (a high-risk external tool waits for it). Bound to the user; usable once; 5 minutes."""
    session, body = await _signed_in_json(request, QUIZ_END_MAX_BODY_BYTES)
    if (not isinstance(body, dict) or not isinstance(body.get("id"), str)
            or body.get("decision") not in ("allow", "deny")):
        raise ApiError(400, "invalid_request",
                       'The body must be {"id": "<confirmation id>", "decision": "allow"|"deny"}.')
    try:
        await services().external.broker.answer(body["id"], session.user.id, body["decision"])
    except ConfirmationError as exc:
        raise ApiError(CONFIRM_STATUS.get(exc.kind, 404), f"confirmation_{exc.kind}", exc.user_message) from exc
    return JSONResponse({"id": body["id"], "decision": body["decision"]})


UPLOAD_MAX_BODY_BYTES = 120 * 1024 * 1024  # one request: a few documents (50 MB each at most, MAX_FILE_BYTES)


def _cut(cut: UploadCut, read_timeout: float) -> ApiError:
    if cut.kind == "timeout":
        return ApiError(408, "upload_timeout", msg("doc.upload_timeout", seconds=math.ceil(read_timeout)))
    if cut.kind == "too_large":
        return _too_large(UPLOAD_MAX_BODY_BYTES)
    if cut.kind == "too_many_files":
        return ApiError(400, "invalid_request", msg("doc.too_many_files", maximum=MAX_FILES))
    return ApiError(400, "invalid_request", "Send the files as multipart/form-data in the field `files`.")


async def kb_documents(request: Request) -> JSONResponse:
    """`POST /api/kb/documents` (multipart, field `files`, one or more; optional field `type`): import documents
    into the caller's tenant (admins only). Each file is checked in the parse sandbox; the good ones are
    written, the bad ones refused with their reason. 200 {"files": [...]} when at least one file is imported,
    422 when every file is refused, 400 without files, 403 for a learner, 413 over UPLOAD_MAX_BODY_BYTES, 429
    (Retry-After) while the user or the tenant has as many uploads in flight as allowed, 408 when the body
    stops coming for R42_UPLOAD_READ_TIMEOUT_S. Nothing is read before the token and the slots are checked; the
    files go to disk as they arrive (services/uploads.py), and are gone when the answer is sent."""
    session = await _session(_token(request), fresh=True)  # a write: the role as it is now
    if not session.user.is_admin or not session.user.tenant_id:
        raise ApiError(403, "forbidden", msg("kb.refused"))
    _declared_size(request, UPLOAD_MAX_BODY_BYTES)
    cfg = services().settings
    user = session.user
    limits = slot_limits(user.id, user.tenant_id, cfg.uploads_per_user, cfg.uploads_per_tenant)
    async with upload_slots(services().shared, limits, holder=secrets.token_hex(8)) as taken:
        if not taken:
            raise ApiError(429, "uploads_busy", msg("doc.uploads_busy", seconds=RETRY_AFTER_S),
                           {"Retry-After": str(RETRY_AFTER_S)})
        try:
            form = await receive_form(request.receive, request.headers.get("content-type", ""),
                                      incoming_dir(cfg.data_dir), timeout=cfg.upload_read_timeout,
                                      limit=UPLOAD_MAX_BODY_BYTES, max_files=MAX_FILES, max_fields=20)
        except UploadCut as cut:
            log.info("document upload of user %s cut off: %s", user.id, cut)
            raise _cut(cut, cfg.upload_read_timeout) from cut
        try:
            return await _import_received(form, user)
        finally:
            await asyncio.to_thread(form.close)


async def _import_received(form: ReceivedForm, user: Any) -> JSONResponse:
    if not form.files:
        raise ApiError(400, "invalid_request", "Send one or more files in the multipart field `files`.")
    topic_type = form.fields.get("type")
    if topic_type is not None and topic_type not in TOPIC_TYPES:
        raise ApiError(400, "invalid_request", f"type must be one of {', '.join(TOPIC_TYPES)}.")
    tenant = user.tenant
    importer = services().importer
    outcomes = []
    seen: set[str] = set()
    for received in form.files:
        name = upload_name(received.filename)
        if name_key(name) in seen:  # a second file of the same name would overwrite the first
            outcomes.append(FileOutcome(name, "refused", msg("doc.duplicate", filename=name), "doc.duplicate"))
            continue
        seen.add(name_key(name))
        if received.size > MAX_FILE_BYTES:  # refused by its size, without reading it into memory
            size = f"{received.size / 1024 / 1024:.1f}".replace(".", ",")
            outcomes.append(FileOutcome(name, "refused", msg("doc.too_large", filename=name, size=size,
                                                             maximum=MAX_FILE_BYTES // 1024 // 1024), "doc.too_large"))
            continue
        data = await asyncio.to_thread(received.read)
        try:
            outcome = await asyncio.to_thread(importer.import_file, tenant, name, data, topic_type)
        except (KBError, PBError) as exc:
            log.error("storing document %s failed: %s", name, exc)
            outcome = FileOutcome(name, "refused", msg("doc.write_failed", filename=name), "doc.write_failed")
        del data
        outcomes.append(outcome)
    body = {"files": [o.to_json() for o in outcomes]}
    return JSONResponse(body, status_code=200 if any(o.ok for o in outcomes) else 422)


async def kb_document_file(request: Request) -> Response:
    """`GET /api/kb/documents/{id}/file?tenant=&expires=&sig=`: the original file of a document, through a link
    the topic page signed for the tenant's users (core/documents.py download_url). Always an attachment."""
    doc_id = request.path_params["doc_id"]
    tenant_id = request.query_params.get("tenant", "")
    expires = request.query_params.get("expires", "")
    sig = request.query_params.get("sig", "")
    if not re.fullmatch(r"[0-9]{1,12}", expires) or int(expires) < time.time():
        raise ApiError(410, "link_expired", msg("doc.link_expired"))
    good = download_signature(services().download_secret, tenant_id, doc_id, int(expires))
    if not hmac.compare_digest(good, sig):
        raise ApiError(403, "forbidden", msg("doc.link_expired"))
    store = services().documents
    try:
        tenant = Tenant(tenant_id, "", "")
        doc = await asyncio.to_thread(store.get, tenant, doc_id)
        data = await asyncio.to_thread(store.file_bytes, doc) if doc else None
    except PBError as exc:
        log.error("reading document %s failed: %s", doc_id, exc)
        raise ApiError(503, "unavailable", msg("doc.download_failed")) from exc
    if doc is None or data is None:
        raise ApiError(404, "not_found", msg("doc.download_failed"))
    return Response(data, media_type=DOWNLOAD_TYPES.get(doc.kind, "application/octet-stream"), headers={
        "Content-Disposition": f"attachment; filename*=UTF-8''{quote_url(doc.filename)}",
        "X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-store"})


DOWNLOAD_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "md": "text/markdown; charset=utf-8", "html": "application/octet-stream", "txt": "text/plain; charset=utf-8",
}


# -- people (issue 46): one service with /admin/people and `r42 user` (services/store/people.py) ---------------------

PEOPLE_STATUS = {"bad_input": 400, "not_found": 404, "conflict": 409}
PEOPLE_TYPES = {"bad_input": "invalid_request", "not_found": "not_found", "conflict": "conflict"}
PEOPLE_MAX_BODY_BYTES = 8 * 1024  # a person or a change as JSON
ME_MAX_BODY_BYTES = 1024  # {"language": ...}
PEOPLE_IMPORT_MAX_BODY_BYTES = MAX_IMPORT_BYTES + 64 * 1024  # the CSV and the multipart around it


async def _people_admin(request: Request) -> Session:
    """The caller as an admin of their tenant, checked with PocketBase now (people are written), or the refusal."""
    session = await _session(_token(request), fresh=True)
    if not session.user.is_admin or not session.user.tenant_id:
        raise ApiError(403, "forbidden", msg("people.admins_only"))
    return session


async def _people_call(call: Callable[..., T], *args: Any) -> T:
    """A people service call in a thread: its value; 4xx for a refusal, 503 when PocketBase cannot be reached."""
    try:
        return await asyncio.to_thread(call, *args)
    except PeopleError as exc:
        raise ApiError(PEOPLE_STATUS.get(exc.kind, 400), PEOPLE_TYPES.get(exc.kind, "invalid_request"),
                       exc.user_message) from exc
    except PBError as exc:
        log.error("people API: PocketBase failed: %s", exc)
        raise ApiError(503, "unavailable", msg("people.save_failed")) from exc


async def people(request: Request) -> JSONResponse:
    """`GET /api/people?q=&role=&state=&page=&per_page=` -> {"items": [{"id", "email", "name", "role", "state",
    "last_sign_in"}], "page", "total"}; `POST /api/people` {"email", "name"?, "role"?} -> 201 {"id", "state":
    "invited", "invite_url", "mailed", "mail_error", "again"}. An admin's token; their own tenant only."""
    user = (await _people_admin(request)).user
    if request.method == "GET":
        q = request.query_params
        try:
            page, per_page = int(q.get("page", "1")), int(q.get("per_page", "50"))
        except ValueError:
            raise ApiError(400, "invalid_request", "page and per_page must be whole numbers.") from None
        if not 1 <= page <= 100_000 or not 1 <= per_page <= 500:
            raise ApiError(400, "invalid_request", "page is 1 or more, per_page 1 to 500.")
        items, total = await _people_call(services().people.list, user.tenant, q.get("q", "")[:100],
                                          q.get("role", ""), q.get("state", ""), page, per_page)
        return JSONResponse({"items": [p.to_json() for p in items], "page": page, "total": total})
    body = await _people_body(request)
    link = await _people_call(services().people.invite, user.tenant, Actor.of(user), body.get("email"),
                              body.get("name") or "", body.get("role") or "learner")
    return JSONResponse(link.to_json(), status_code=201)


async def _people_body(request: Request) -> dict:
    body = _json(await _read_body(request, PEOPLE_MAX_BODY_BYTES))
    if not isinstance(body, dict) or any(not isinstance(v, str | None) for v in body.values()):
        raise ApiError(400, "invalid_request", "Send a JSON object of strings.")
    return body


def _me(user: SignedInUser) -> dict:
    return {"id": user.id, "email": user.email, "name": user.name, "role": user.role,
            "tenant": {"slug": user.tenant_slug, "name": user.tenant_name}, "language": user.language}


async def me(request: Request) -> JSONResponse:
    """`GET /api/me`: who the token is (with the language R42 speaks to them). `PATCH /api/me` {"language": "nl" |
    "en"}: the person's own language (issue 52), on every device from their next page or request; "" goes back to
    their organisation's."""
    if request.method == "GET":
        return JSONResponse(_me((await _session(_token(request))).user))
    session, body = await _signed_in_json(request, ME_MAX_BODY_BYTES, fresh=True)
    asked = body.get("language") if isinstance(body, dict) and set(body) == {"language"} else None
    if not isinstance(asked, str) or (asked and language_of(asked) != asked):
        raise ApiError(400, "invalid_request", msg("me.bad_language", languages=", ".join(LANGUAGES)))
    language = str(asked)
    try:
        await asyncio.to_thread(services().auth.set_language, session.user.id, language)
    except (PBError, AuthError) as exc:
        log.warning("storing the language of user %s failed: %s", session.user.id, exc)
        raise ApiError(503, "unavailable", msg("me.language_not_stored")) from exc
    user = dataclasses.replace(session.user, language=language or await asyncio.to_thread(
        services().auth.tenant_language, session.user.tenant_id))
    set_language(user.language)
    return JSONResponse(_me(user))


async def person(request: Request) -> JSONResponse:
    """`PATCH /api/people/{id}` {"role": "learner"|"admin"} or {"state": "active"|"deactivated"} -> the person."""
    session = await _people_admin(request)
    body = await _people_body(request)
    if set(body) not in ({"role"}, {"state"}):
        raise ApiError(400, "invalid_request", 'Send {"role": ...} or {"state": ...}.')
    user, person_id = session.user, request.path_params["person_id"]
    service = services().people
    if "role" in body:
        done = await _people_call(service.set_role, user.tenant, Actor.of(user), person_id, body["role"])
    else:
        done = await _people_call(service.set_state, user.tenant, Actor.of(user), person_id, body["state"])
        if done.state == "deactivated":
            await services().auth.sessions_ended(done.id)  # every worker, at once
    return JSONResponse(done.to_json())


async def person_invite(request: Request) -> JSONResponse:
    """`POST /api/people/{id}/invite`: a new invitation link for an invited person (mailed when mail is on)."""
    user = (await _people_admin(request)).user
    link = await _people_call(services().people.resend, user.tenant, Actor.of(user), request.path_params["person_id"])
    return JSONResponse(link.to_json())


async def people_import(request: Request) -> JSONResponse:
    """`POST /api/people/import?dry_run=1` (multipart, the CSV in field `file`) -> {"rows", "bad": [{"line",
    "email", "reason"}], "invited", "new", "unchanged", "mail_failures"}; nothing is written with dry_run=1, nor
    when any row is bad. Without mail, "links" lists the invitation links to hand over."""
    session = await _people_admin(request)
    read_timeout = services().settings.upload_read_timeout
    try:  # a body that stops coming is dropped, as a document upload's is (R42_UPLOAD_READ_TIMEOUT_S)
        raw = await asyncio.wait_for(_read_body(request, PEOPLE_IMPORT_MAX_BODY_BYTES), read_timeout)
    except TimeoutError:
        log.info("people import of user %s: the body stopped coming", session.user.id)
        raise ApiError(408, "upload_timeout", msg("doc.upload_timeout", seconds=math.ceil(read_timeout))) from None
    except ApiError as exc:
        if exc.status == 413:
            raise ApiError(413, "payload_too_large", msg("people.csv_too_big", size="> 1", maximum="1")) from exc
        raise

    async def replay() -> dict:
        return {"type": "http.request", "body": raw, "more_body": False}

    not_a_form = ApiError(400, "invalid_request", "Send the CSV as multipart/form-data in the field `file`.")
    try:
        form = await Request(request.scope, replay).form(max_files=1, max_fields=5)
    except Exception as exc:  # noqa: BLE001 - any malformed multipart is the client's
        log.info("people import: not a form: %s", exc)
        raise not_a_form from exc
    upload = form.get("file")
    if upload is None or isinstance(upload, str):
        raise not_a_form
    data = await upload.read()
    dry_run = request.query_params.get("dry_run", "0") in ("1", "true", "yes")
    user = session.user
    report = await _people_call(services().people.import_csv, user.tenant, Actor.of(user), data, dry_run)
    out = report.to_json()
    if report.links and not services().people.mailer.on:
        out["links"] = [{"email": link.person.email, "invite_url": link.url} for link in report.links]
    return JSONResponse(out, status_code=200 if not report.bad else 422)


class _SpeaksTheirLanguage:
    """Every request starts in the Accept-Language's language (else Dutch); `_session` then switches to the
    person's. Pure ASGI, so the endpoint runs in the context this sets."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"accept-language"), "")
            set_language(best_language(header[:500]))
        await self.app(scope, receive, send)


api = Starlette(routes=[Route("/api/health", health, methods=["GET"]), Route("/api/chat", chat, methods=["POST"]),
                        Route("/api/chat/delta", chat_delta, methods=["POST"]),
                        Route("/api/chat/confirm", chat_confirm, methods=["POST"]),
                        Route("/api/quiz/end", quiz_end, methods=["POST"]),
                        Route("/api/kb/documents", kb_documents, methods=["POST"]),
                        Route("/api/kb/documents/{doc_id}/file", kb_document_file, methods=["GET"]),
                        Route("/api/me", me, methods=["GET", "PATCH"]),
                        Route("/api/people", people, methods=["GET", "POST"]),
                        Route("/api/people/import", people_import, methods=["POST"]),
                        Route("/api/people/{person_id}", person, methods=["PATCH"]),
                        Route("/api/people/{person_id}/invite", person_invite, methods=["POST"]),
                        *sso_routes.routes, *lti_routes.routes],
                exception_handlers={ApiError: _answer}, middleware=[Middleware(_SpeaksTheirLanguage)])
