"""The LTI 1.3 tool's HTTP routes (issue 48, part 2; mounted with api.py's):

    GET|POST /lti/login   the platform's third-party login initiation -> 302 to its authentication request
    POST     /lti/launch  the launch (form post of id_token and state) -> 303 to the targeted page, signed in
    GET      /lti/jwks    the tool's public key set (for the deep-linking responses it will sign)

A refusal is a small Dutch page saying why (status 400, 403 or 503). The work is services/lti_launch.py.
"""

from __future__ import annotations

import html
import logging

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from r42_app.container import services
from r42_app.core.errors import UserError
from r42_app.core.messages import msg
from r42_app.services.runtime.shared_state import SharedStateUnavailable
from r42_app.services.store.pb import PBError

log = logging.getLogger(__name__)

LAUNCH = "/lti/launch"
MAX_FORM = 64_000  # bytes of a login initiation or launch form


def _launch_url() -> str:
    return services().settings.link_base.rstrip("/") + LAUNCH


def refusal(code: str, status: int = 400) -> HTMLResponse:
    """A page that says why in Dutch (the catalogue's words), with the way back to the learning environment."""
    text = html.escape(msg(code) if "{" not in msg(code) else msg("lti.failed"))
    body = ("<!doctype html><html lang=\"nl\"><head><meta charset=\"utf-8\"><title>R42</title>"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"></head>"
            "<body style=\"font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; padding: 0 1rem\">"
            f"<h1 style=\"font-size: 1.4rem\">R42 kan niet openen</h1><p id=\"lti-error\" role=\"alert\">{text}</p>"
            "</body></html>")
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})


async def _params(request: Request) -> dict[str, str]:
    if request.method == "POST":
        if int(request.headers.get("content-length") or 0) > MAX_FORM:
            return {}
        form = await request.form()
        return {k: v for k, v in form.items() if isinstance(v, str)}
    return dict(request.query_params)


async def login(request: Request) -> Response:
    try:
        url = await services().lti_launches.login(await _params(request), _launch_url())
    except UserError as exc:
        log.info("lti login initiation refused (%s): %s", exc.code, exc)
        return refusal(exc.code)
    except (PBError, SharedStateUnavailable) as exc:
        log.error("lti login initiation failed: %s", exc)
        return refusal("lti.unreachable", 503)
    return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})


async def launch(request: Request) -> Response:
    params = await _params(request)
    try:
        landed = await services().lti_launches.launch(params.get("id_token", ""), params.get("state", ""))
    except UserError as exc:
        log.info("lti launch refused (%s): %s", exc.code, exc)
        return refusal("lti.deactivated" if exc.code in ("auth.deactivated", "lti.deactivated") else exc.code,
                       403 if exc.code.endswith("deactivated") or exc.code == "auth.tenant_disabled" else 400)
    except (PBError, SharedStateUnavailable) as exc:
        log.error("lti launch failed: %s", exc)
        return refusal("lti.unreachable", 503)
    return RedirectResponse(landed.path, status_code=303, headers={"Cache-Control": "no-store"})


async def jwks(request: Request) -> Response:  # noqa: ARG001 - Starlette's signature
    """The tool's public key set (what an LMS checks R42's deep-linking responses with)."""
    import asyncio

    try:
        keys = await asyncio.to_thread(lambda: services().tool_key.public())
    except PBError as exc:
        log.error("the tool's key set could not be read: %s", exc)
        return JSONResponse({"type": "unavailable", "message": msg("lti.unreachable")}, status_code=503)
    return JSONResponse(keys, headers={"Cache-Control": "public, max-age=300"})


routes = [Route("/lti/login", login, methods=["GET", "POST"]), Route(LAUNCH, launch, methods=["POST"]),
          Route("/lti/jwks", jwks, methods=["GET"])]
