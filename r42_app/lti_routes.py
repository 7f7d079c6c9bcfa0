"""The LTI 1.3 tool's HTTP routes (issue 48, part 2; mounted with api.py's):

    GET|POST /lti/login   the platform's third-party login initiation -> 302 to its authentication request
    POST     /lti/launch  the launch (form post of id_token and state) -> 303 to the targeted page, signed in and
                          allowed to be framed by the platform; a deep-linking launch -> the picker
    POST     /lti/deep-link  the picker's choice -> the signed response, posted back to the platform by the browser
    GET      /lti/register   dynamic registration: the LMS opens R42's one-time registration URL
    GET      /lti/jwks    the tool's public key set (what the platform checks the deep-linking response with)

A refusal is a small Dutch page saying why (status 400, 403 or 503); it may be framed by anyone (it has nothing to
click), so the learner reads it inside the LMS instead of a browser error. The work is services/lti_launch.py.
"""

from __future__ import annotations

import html
import logging

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from r42_app.container import services
from r42_app.core.errors import UserError
from r42_app.core.lti import LtiError, origin_of
from r42_app.core.messages import msg
from r42_app.http_headers import FORM_ACTION, FRAME_ANCESTORS
from r42_app.services.runtime.shared_state import SharedStateUnavailable
from r42_app.services.store.pb import PBError

log = logging.getLogger(__name__)

LAUNCH = "/lti/launch"
DEEP_LINK = "/lti/deep-link"
MAX_FORM = 64_000  # bytes of a login initiation or launch form


def _launch_url() -> str:
    return services().settings.link_base.rstrip("/") + LAUNCH


_STYLE = ("body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;color:#1f2328;"
          "line-height:1.5}h1{font-size:1.4rem}label{display:block;font-weight:600;margin:1rem 0 .4rem}"
          "select{width:100%;font:inherit;padding:.5rem;border:1px solid #8c959f;border-radius:6px;background:#fff}"
          "button{font:inherit;margin-top:1rem;padding:.55rem 1.1rem;border:0;border-radius:6px;background:#0b5cad;"
          "color:#fff;cursor:pointer}button:focus-visible,select:focus-visible{outline:3px solid #f0b429;"
          "outline-offset:2px}.hint{color:#57606a;font-size:.95rem}")


def _page(title: str, body: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    page = ("<!doctype html><html lang=\"nl\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)} · R42</title>"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<style>{_STYLE}</style></head><body><main>{body}</main></body></html>")
    return HTMLResponse(page, status_code=status, headers={"Cache-Control": "no-store", **(headers or {})})


def refusal(code: str, status: int = 400) -> HTMLResponse:
    """A page that says why in Dutch (the catalogue's words), with the way back to the learning environment."""
    text = html.escape(msg(code) if "{" not in msg(code) else msg("lti.failed"))
    return _page("R42 kan niet openen", f"<h1>R42 kan niet openen</h1><p id=\"lti-error\" role=\"alert\">{text}</p>",
                 status, {FRAME_ANCESTORS.decode(): "*"})


def picker(ticket: str, choices: list[tuple[str, str]], frame: tuple[str, ...]) -> HTMLResponse:
    """The deep-linking picker: what the teacher adds to the course (the assistant, or one topic's page)."""
    options = "".join(f"<option value=\"{html.escape(path)}\">{html.escape(title)}</option>"
                      for path, title in choices[:1])
    if len(choices) > 1:
        options += "<optgroup label=\"Onderwerpen\">" + "".join(
            f"<option value=\"{html.escape(path)}\">{html.escape(title)}</option>" for path, title in choices[1:]
        ) + "</optgroup>"
    body = ("<h1>R42 toevoegen aan je cursus</h1>"
            "<p class=\"hint\">Kies wat je deelnemers zien als ze de link in de cursus openen: R42 zelf, of één "
            "onderwerp met R42 ernaast. Ze zijn daarna meteen ingelogd.</p>"
            f"<form method=\"post\" action=\"{DEEP_LINK}\"><input type=\"hidden\" name=\"ticket\" "
            f"value=\"{html.escape(ticket)}\"><label for=\"lti-target\">Wat voeg je toe?</label>"
            f"<select id=\"lti-target\" name=\"target\" autofocus>{options}</select>"
            "<button id=\"lti-add\" type=\"submit\">Toevoegen aan de cursus</button></form>")
    return _page("R42 toevoegen", body, headers={FRAME_ANCESTORS.decode(): " ".join(frame)})


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
    if landed.ticket:  # deep linking: the teacher picks what to add
        choices = await services().lti_launches.choices(landed.tenant_id)
        return picker(landed.ticket, choices, landed.launch.frame_origins)
    return RedirectResponse(landed.path, status_code=303, headers={"Cache-Control": "no-store"})


async def deep_link(request: Request) -> Response:
    """The picker's choice: the signed LtiDeepLinkingResponse, in a form the browser posts to the platform."""
    params = await _params(request)
    try:
        picked = await services().lti_launches.pick(params.get("ticket", ""), params.get("target", "")[:300])
    except LtiError as exc:
        log.info("lti deep linking refused (%s): %s", exc.code, exc)
        return refusal(exc.code)
    except (PBError, SharedStateUnavailable) as exc:
        log.error("lti deep linking failed: %s", exc)
        return refusal("lti.unreachable", 503)
    body = (f"<h1>Terug naar je leeromgeving…</h1><form method=\"post\" "
            f"action=\"{html.escape(picked.return_url)}\" id=\"lti-return\"><input type=\"hidden\" name=\"JWT\" "
            f"value=\"{html.escape(picked.jwt)}\"><noscript><button type=\"submit\">Verder</button></noscript>"
            "</form><script>document.getElementById(\"lti-return\").submit()</script>")
    return _page("R42 toevoegen", body, headers={FRAME_ANCESTORS.decode(): " ".join(picked.frame_origins),
                                                 FORM_ACTION.decode(): origin_of(picked.return_url)})


async def jwks(request: Request) -> Response:  # noqa: ARG001 - Starlette's signature
    """The tool's public key set (what an LMS checks R42's deep-linking responses with)."""
    import asyncio

    try:
        keys = await asyncio.to_thread(lambda: services().tool_key.public())
    except PBError as exc:
        log.error("the tool's key set could not be read: %s", exc)
        return JSONResponse({"type": "unavailable", "message": msg("lti.unreachable")}, status_code=503)
    return JSONResponse(keys, headers={"Cache-Control": "public, max-age=300"})


async def register(request: Request) -> Response:
    """IMS Dynamic Registration: the LMS (Moodle, Brightspace) opens the admin's one-time URL with its
    openid_configuration and registration_token; R42 registers itself there and tells the LMS's window to close."""
    from r42_app.services.lti_registration import INVITE_PARAM

    query = request.query_params
    try:
        reg = await services().lti_registrations.register(query.get(INVITE_PARAM, ""),
                                                          query.get("openid_configuration", ""),
                                                          query.get("registration_token", ""))
    except LtiError as exc:
        log.info("lti dynamic registration refused (%s): %s", exc.code, exc)
        return refusal(exc.code, 503 if exc.code == "lti.unreachable" else 400)
    except PBError as exc:
        log.error("lti dynamic registration failed: %s", exc)
        return refusal("lti.unreachable", 503)
    body = ("<h1>R42 is gekoppeld</h1>"
            f"<p id=\"lti-registered\" role=\"status\">Je leeromgeving ({html.escape(reg.issuer)}) kan R42 nu "
            "openen. Zet R42 in een cursus met ‘Activiteit toevoegen’; dit venster sluit vanzelf.</p>"
            # IMS Dynamic Registration 3.7: the LMS closes its registration window on this message
            "<script>(window.opener || window.parent).postMessage({subject: \"org.imsglobal.lti.close\"}, \"*\")"
            "</script>")
    return _page("R42 gekoppeld", body, headers={FRAME_ANCESTORS.decode(): origin_of(reg.issuer)})


routes = [Route("/lti/login", login, methods=["GET", "POST"]), Route(LAUNCH, launch, methods=["POST"]),
          Route(DEEP_LINK, deep_link, methods=["POST"]), Route("/lti/jwks", jwks, methods=["GET"]),
          Route("/lti/register", register, methods=["GET"])]
