"""HTTP API mounted on the Reflex backend; the same chat turn as the UI.

    GET  /api/health
    POST /api/quiz/end  ends the caller's quiz (Bearer token, or {"token": ...} for navigator.sendBeacon)
    POST /api/chat   Authorization: Bearer <PocketBase token>
                     {"messages": [{"role", "content"}, ...], "mode"?: "fts"|"semantic"|"hybrid"}
                     -> text/event-stream of `data: {"type": ...}` events (see r42_app.chat.turn)

Errors are JSON {"type", "message"}: 401 without a valid token, 400 for bad input, 429 with
Retry-After when one user sends too fast, 403 when the guard refuses, 423 Locked
{"type": "quiz_active", ...} while the user takes a quiz.
"""

from __future__ import annotations

import asyncio
import json
import math

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from r42_app.chat import deps as chat_deps
from r42_app.chat.turn import ChatRefused, guard, run_turn
from r42_app.core.chat import ChatInputError, validate_messages
from r42_app.services import deps
from r42_app.services.auth import AuthError, Session
from r42_app.services.pb import PocketBase
from r42_app.services.retrieval import MODES

REFUSAL_STATUS = {"unauthenticated": 401, "forbidden": 403, "quiz_active": 423, "quota_exceeded": 402}


def _error(status: int, kind: str, message: str, headers: dict | None = None) -> JSONResponse:
    return JSONResponse({"type": kind, "message": message}, status_code=status, headers=headers)


async def health(request: Request) -> JSONResponse:  # noqa: ARG001
    """`GET /api/health`: the app answers and can reach PocketBase."""
    pb = PocketBase(deps.settings().pb_url, timeout=2)
    try:
        ok = await asyncio.to_thread(pb.health)
    finally:
        pb.close()
    return JSONResponse({"status": "ok" if ok else "degraded", "pocketbase": ok}, status_code=200 if ok else 503)


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "")
    return header[7:].strip() if header.lower().startswith("bearer ") else ""


async def _session(token: str) -> Session | JSONResponse:
    """The signed-in session of a PocketBase token, or the error response (401, or 503 when
    PocketBase cannot be asked)."""
    try:
        session = await asyncio.to_thread(deps.auth_service().verify, token)
    except AuthError as exc:
        return _error(503, "unavailable", str(exc))
    if session is None:
        return _error(401, "unauthenticated", "The token is invalid or expired; sign in again.")
    return session


async def quiz_end(request: Request) -> JSONResponse:
    """`POST /api/quiz/end`: the tab closes mid-quiz; end this user's quiz session so chat unlocks."""
    token = _bearer(request)
    if not token:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            body = None
        token = str(body.get("token", "")) if isinstance(body, dict) else ""
    if not token:
        return _error(401, "unauthenticated", "Send your PocketBase token as a Bearer header or {\"token\": ...}.")
    session = await _session(token)
    if isinstance(session, JSONResponse):
        return session
    ended = await asyncio.to_thread(deps.quiz_store().end, session.user.id)
    return JSONResponse({"ended": ended})


async def chat(request: Request):
    """`POST /api/chat`: one streamed, grounded answer."""
    token = _bearer(request)
    if not token:
        return _error(401, "unauthenticated", "Send your PocketBase token as `Authorization: Bearer <token>`.")
    session = await _session(token)
    if isinstance(session, JSONResponse):
        return session
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(400, "invalid_request", "The body must be JSON.")
    if not isinstance(body, dict):
        return _error(400, "invalid_request", 'The body must be an object {"messages": [...]}.')
    mode = body.get("mode", "hybrid")
    try:
        messages = validate_messages(body.get("messages"))
        if mode not in MODES:
            raise ChatInputError(f"mode must be one of {', '.join(MODES)}")
        await asyncio.to_thread(guard, session.user, chat_deps.chat_deps().quiz)
    except ChatInputError as exc:
        return _error(400, "invalid_request", str(exc))
    except ChatRefused as exc:
        return _error(REFUSAL_STATUS.get(exc.kind, 403), exc.kind, exc.message)
    wait = chat_deps.rate_limiter().check(session.user.id)
    if wait > 0:
        return _error(429, "rate_limited", "Too many questions in a short time; wait a moment.",
                      {"Retry-After": str(max(1, math.ceil(wait)))})

    raw = [{"role": m.role, "content": m.content} for m in messages]

    async def events():
        try:
            async for event in run_turn(session.user, raw, chat_deps.chat_deps(), mode):
                yield f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
        except (ChatInputError, ChatRefused) as exc:
            yield f"data: {json.dumps({'type': 'error', 'kind': 'refused', 'message': str(exc)})}\n\n"

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


api = Starlette(routes=[Route("/api/health", health, methods=["GET"]), Route("/api/chat", chat, methods=["POST"]),
                        Route("/api/quiz/end", quiz_end, methods=["POST"])])
