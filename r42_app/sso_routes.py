"""The two HTTP routes of signing in through the organisation's identity provider (mounted with api.py's):

    GET /auth/oidc/start?email=&next=   -> 302 to the provider (a round trip bound to this browser by a cookie)
    GET /auth/oidc/callback?code=&state= -> 302 back to `next` with a one-time sign-in code, or with
                                            `r42_signin_error=<catalogue code>` saying why not

The work is services/sso_signin.py; these only read the request and write the redirect.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route

from r42_app.container import services
from r42_app.core.errors import UserError
from r42_app.core.sso import safe_next
from r42_app.services.runtime.shared_state import SharedStateUnavailable
from r42_app.services.sso_signin import COOKIE, ERROR_PARAM, ROUND_TRIP_S, with_param
from r42_app.services.store.auth import AuthError
from r42_app.services.store.pb import PBError

log = logging.getLogger(__name__)

CALLBACK = "/auth/oidc/callback"
STARTS_PER_MINUTE = 20.0  # per browser address: each start keeps a round trip for ten minutes
STARTS_BURST = 10


def _redirect_uri() -> str:
    return services().settings.link_base.rstrip("/") + CALLBACK


def _back(next_path: str, code: str) -> RedirectResponse:
    response = RedirectResponse(with_param(next_path, ERROR_PARAM, code), status_code=303)
    response.headers["Cache-Control"] = "no-store"
    return response


async def start(request: Request) -> RedirectResponse:
    email = request.query_params.get("email", "")[:320]
    next_path = safe_next(request.query_params.get("next", "/"))
    client = request.client.host if request.client else ""
    try:
        if await services().shared.take_token(f"sso-start:{client}", STARTS_PER_MINUTE / 60.0, STARTS_BURST) > 0:
            log.info("sso start refused for %s: too many", client)
            return _back(next_path, "auth.too_many_attempts")
        started = await services().sso_signin.start(email, next_path, _redirect_uri(),
                                                   request.cookies.get(COOKIE, ""))
    except UserError as exc:
        log.info("sso start refused: %s", exc)
        return _back(next_path, exc.code)
    except (PBError, SharedStateUnavailable) as exc:
        log.error("sso start failed: %s", exc)
        return _back(next_path, "auth.unreachable")
    response = RedirectResponse(started.url, status_code=302)
    response.headers["Cache-Control"] = "no-store"
    response.set_cookie(COOKIE, started.cookie, max_age=int(ROUND_TRIP_S), httponly=True, samesite="lax",
                        secure=services().settings.link_base.startswith("https://"), path="/")
    return response


async def callback(request: Request) -> RedirectResponse:
    params = request.query_params
    try:
        finished = await services().sso_signin.finish(params.get("state", ""), params.get("code", ""),
                                                      params.get("error", ""), request.cookies.get(COOKIE, ""),
                                                      _redirect_uri())
    except UserError as exc:
        log.info("sso sign-in refused (%s): %s", exc.code, exc)
        code = exc.code
        if isinstance(exc, AuthError) and code == "auth.deactivated":
            code = "sso.deactivated"
        return _back(str(exc.fields.get("next") or "/"), code)
    except (PBError, SharedStateUnavailable) as exc:
        log.error("sso sign-in failed: %s", exc)
        return _back("/", "auth.unreachable")
    response = RedirectResponse(finished.next_path, status_code=303)
    response.headers["Cache-Control"] = "no-store"
    return response


routes = [Route("/auth/oidc/start", start, methods=["GET"]), Route(CALLBACK, callback, methods=["GET"])]
