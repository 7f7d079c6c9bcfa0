"""`r42 seed demo`: two tenants with their users and knowledge bases. Safe to run again and again."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from r42_app.core.capabilities import (
    DATA_WRITE,
    DEFAULT_CAPABILITIES,
    DENY,
    KB_SEARCH,
    QA_HELP,
    AccessRow,
    with_override,
)
from r42_app.core.identity import Tenant
from r42_app.services.store.kb_store import ImportResult, KBStore
from r42_app.services.store.pb import PBError, PocketBase, quote

SEED_DIR = Path(__file__).resolve().parents[2] / "seed_data"


@dataclass(frozen=True)
class DemoUser:
    email: str
    name: str
    role: str
    tenant: str
    access: AccessRow | None = None  # a chatbot_access row, created when the user has none yet


# Sanne has a legacy exact list (V1), Daan one deny: /admin/chatbot shows every state out of the box.
_DAAN = with_override(None, DEFAULT_CAPABILITIES, DATA_WRITE, DENY)


DEMO_CAPABILITIES = ("qa_help", "kb_search", "data_write", "external_tools")
DEMO_TENANTS = {"demo": "Demo Pensioenacademie", "acme": "Acme Logistiek"}
DEMO_USERS = (
    DemoUser("learner@example.com", "Lotte de Leerling", "learner", "demo"),
    DemoUser("admin@example.com", "Anton Admin", "admin", "demo"),
    DemoUser("sanne@example.com", "Sanne van Oud", "learner", "demo", AccessRow((QA_HELP, KB_SEARCH))),
    DemoUser("daan@example.com", "Daan de Vries", "learner", "demo", _DAAN),
    DemoUser("learner@acme.example", "Bram Bakker", "learner", "acme"),
    DemoUser("admin@acme.example", "Aisha Acme", "admin", "acme"),
)


def ensure_user(pb: PocketBase, tenant: Tenant, user: DemoUser, password: str) -> bool:
    """Create the user if missing; reset the password only if it no longer matches. True if written."""
    row = pb.first("users", f"email = {quote(user.email)}")
    body = {"name": user.name, "role": user.role, "tenant": tenant.id}
    if row is None:
        pb.create(
            "users",
            {**body, "email": user.email, "password": password, "passwordConfirm": password, "verified": True},
        )
        return True
    changed = any(row.get(k) != v for k, v in body.items())
    try:  # signed in through the superuser connection, like the app: not subject to the per-IP limit
        pb.send("POST", "/api/collections/users/auth-with-password",
                body={"identity": user.email, "password": password})
        password_ok = True
    except PBError:
        password_ok = False
    if not password_ok:
        # Changing the password logs the user out everywhere, so only do it when it is wrong.
        body.update(password=password, passwordConfirm=password)
    if changed or not password_ok:
        pb.update("users", row["id"], body)
        return True
    return False


def ensure_access(pb: PocketBase, tenant: Tenant, user: DemoUser) -> bool:
    """Give a demo user its access row once; a row an admin changed since is left alone."""
    row = pb.first("users", f"email = {quote(user.email)}")
    if row is None or user.access is None:
        return False
    if pb.first("chatbot_access", f"tenant = {quote(tenant.id)} && user = {quote(row['id'])}"):
        return False
    pb.create("chatbot_access", {"tenant": tenant.id, "user": row["id"], **user.access.to_record()})
    return True


def seed_demo(pb: PocketBase, password: str, log=print) -> list[ImportResult]:
    """Tenants `demo` (four users) and `acme` (two), their knowledge bases and demo access rows."""
    if len(password) < 8:
        raise ValueError("R42_DEMO_PASSWORD must be at least 8 characters (PocketBase's minimum)")
    store = KBStore(pb)
    results = []
    for slug, name in DEMO_TENANTS.items():
        data = json.loads((SEED_DIR / f"{slug}.json").read_text(encoding="utf-8"))
        result = store.import_document(slug, data, tenant_name=name)
        if result.created_tenant and slug == "demo":  # the demo shows external tools; new tenants get them off
            pb.update("tenants", result.tenant.id, {"chatbot_default_capabilities": list(DEMO_CAPABILITIES)})
        results.append(result)
        log(f"seed: {result.summary()}")
        for user in DEMO_USERS:
            if user.tenant == slug:
                ensure_user(pb, result.tenant, user, password)
                if user.access is not None:
                    ensure_access(pb, result.tenant, user)
    return results


def demo_mcp_config(messages_file: Path) -> dict:
    """The MCP servers of the demo: the `mcp-server-time` package and R42's own demo server."""
    bin_dir = Path(sys.executable).parent
    return {
        "mcpServers": {
            "time": {"command": sys.executable,
                     "args": ["-m", "mcp_server_time", "--local-timezone", "Europe/Amsterdam"]},
            "r42demo": {"command": str(bin_dir / "r42"), "args": ["mcp", "demo-server"],
                        "env": {"R42_MCP_DEMO_MESSAGES": str(messages_file)}},
        },
        "high_risk": ["r42demo__send_message"],
        "low_risk": ["time__get_current_time", "time__convert_time", "r42demo__pension_accrual"],
        "timeout_seconds": 20,
        "calls_per_minute": 10,
    }


def ensure_mcp_config(path: Path, messages_file: Path) -> bool:
    """Write the demo MCP config when there is none yet (an operator's file is never touched)."""
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(demo_mcp_config(messages_file), indent=2) + "\n", encoding="utf-8")
    return True
