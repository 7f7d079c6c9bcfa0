"""The Chroma server R42 starts (issue 21): chromadb's own Python server (FastAPI under uvicorn, on the same Rust
core and on-disk format as `chroma run`) with its token authentication switched on.

`chroma run`, the Rust server of chromadb 1.5.9, has no working authentication, and every local user can reach
127.0.0.1: anyone on the machine could read every tenant's passages. This server refuses every request without
the bearer token with 403, except the heartbeat, the version and the API's description. The token is read from
its file (mode 0600, made if missing), so it is on no command line.

    python -m r42_app.services.runtime.chroma_server --path DIR --port N --token-file FILE [--host 127.0.0.1]

Two fixes to chromadb 1.5.9's server, both to `get` and `query`: the Rust core returns embeddings as lists
while the server calls `.tolist()` on each (an AttributeError, chroma-core/chroma PR 5350), and FastAPI's
`jsonable_encoder` takes ~17 ms for 50 embeddings: the results are written with orjson instead. Its
OpenTelemetry middleware is taken off (nothing collects it).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from starlette.requests import Request
from starlette.responses import Response

from r42_app.services.runtime.private import secret_file

TOKEN_PROVIDER = "chromadb.auth.token_authn.TokenAuthenticationServerProvider"


def _as_arrays(results: Any, nested: bool) -> Any:
    """A GetResult or QueryResult (typed dicts) with each embedding as the array the server expects."""
    if results.get("embeddings") is not None:
        results["embeddings"] = [[np.asarray(e) for e in row] for row in results["embeddings"]] if nested \
            else [np.asarray(e) for e in results["embeddings"]]
    return results


def build_app(path: Path, token: str):
    """The ASGI app: chromadb's server on the index in `path`, answering only requests with `token`."""
    import chromadb
    from chromadb.server import fastapi as chroma_fastapi

    class Server(chroma_fastapi.FastAPI):  # (the annotations are read by FastAPI: Request is imported above)
        def __init__(self, settings):
            super().__init__(settings)
            api = self._api
            get, query = api._get, api._query
            # the fix of chromadb 1.5.9 (module docstring) on its internal API object
            api._get = lambda *a, **kw: _as_arrays(get(*a, **kw), nested=False)  # type: ignore[method-assign]
            api._query = lambda *a, **kw: _as_arrays(query(*a, **kw), nested=True)  # type: ignore[method-assign]

        async def get(self, collection_id: str, tenant: str, database_name: str, request: Request) -> Response:
            result = await super().get(collection_id, tenant, database_name, request)
            return Response(orjson.dumps(result), media_type="application/json")

        async def get_nearest_neighbors(self, tenant: str, database_name: str, collection_id: str,
                                        request: Request) -> Response:  # the `query` route
            result = await super().get_nearest_neighbors(tenant, database_name, collection_id, request)
            return Response(orjson.dumps(result), media_type="application/json")

    settings = chromadb.Settings(
        is_persistent=True, persist_directory=str(path), anonymized_telemetry=False, allow_reset=False,
        chroma_server_authn_provider=TOKEN_PROVIDER, chroma_server_authn_credentials=token,
    )
    app = Server(settings).app()
    # chromadb instruments its server for OpenTelemetry, which R42 does not collect: ~3 ms a request saved
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.uninstrument_app(app)
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m r42_app.services.runtime.chroma_server",
                                     description="chromadb's server with a bearer token (R42)")
    parser.add_argument("--path", required=True, type=Path, help="the index directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--token-file", required=True, type=Path, help="the token (made, mode 0600, if missing)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", module="fastapi")  # chromadb's server uses ORJSONResponse, deprecated there
    import uvicorn

    args.path.mkdir(parents=True, exist_ok=True)
    app = build_app(args.path, secret_file(args.token_file))
    print(f"Chroma server (token required) on http://{args.host}:{args.port}, index in {args.path}", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
