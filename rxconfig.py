"""Reflex configuration. Ports and URLs come from r42_app.settings so one env var moves them everywhere."""

import reflex as rx

from r42_app.components.theme import THEME
from r42_app.settings import load_settings

_settings = load_settings()

config = rx.Config(
    app_name="r42_app",
    frontend_port=_settings.port,
    backend_port=_settings.port,
    api_url=_settings.frontend_url,  # R42_PUBLIC_URL behind a load balancer, else the app's own address
    deploy_url=_settings.frontend_url,
    telemetry_enabled=False,
    show_built_with_reflex=False,
    plugins=[rx.plugins.RadixThemesPlugin(theme=THEME)],
    disable_plugins=[rx.plugins.SitemapPlugin],
    redis_url=_settings.redis_url or None,
    frontend_compression_formats=["gzip"],  # r42_app/http_headers.py reads gzip pages to hash their scripts
    frontend_packages=["rehype-sanitize@6.0.0"],  # the HTML sanitiser r42_app/components/r42_sanitize.js imports
    # Reflex applies this list to its CORS middleware (the backend, api_transformer apps) and to the
    # socket.io server's Origin check on the /_event websocket; its default "*" echoes any Origin.
    cors_allowed_origins=list(_settings.allowed_origins),
)
