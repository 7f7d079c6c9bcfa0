"""HTTP API mounted on the Reflex backend (same services as the UI)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from r42_app.services import deps
from r42_app.services.pb import PocketBase


async def health(request: Request) -> JSONResponse:  # noqa: ARG001
    """`GET /api/health`: the app answers and can reach PocketBase."""
    pb = PocketBase(deps.settings().pb_url, timeout=2)
    try:
        ok = pb.health()
    finally:
        pb.close()
    return JSONResponse({"status": "ok" if ok else "degraded", "pocketbase": ok}, status_code=200 if ok else 503)


api = Starlette(routes=[Route("/api/health", health, methods=["GET"])])
