"""`r42 seed demo`: two tenants with their users and knowledge bases. Safe to run again and again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from r42_app.services.kb_store import ImportResult, KBStore, Tenant
from r42_app.services.pb import PBError, PocketBase, quote

SEED_DIR = Path(__file__).resolve().parents[1] / "seed_data"


@dataclass(frozen=True)
class DemoUser:
    email: str
    name: str
    role: str
    tenant: str


DEMO_TENANTS = {"demo": "Demo Pensioenacademie", "acme": "Acme Logistiek"}
DEMO_USERS = (
    DemoUser("learner@example.com", "Lotte de Leerling", "learner", "demo"),
    DemoUser("admin@example.com", "Anton Admin", "admin", "demo"),
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
        pb.send("POST", "/api/collections/users/auth-with-password", body={"identity": user.email, "password": password})
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


def seed_demo(pb: PocketBase, password: str, log=print) -> list[ImportResult]:
    """Tenants `demo` and `acme`, two users each, and their knowledge bases."""
    if len(password) < 8:
        raise ValueError("R42_DEMO_PASSWORD must be at least 8 characters (PocketBase's minimum)")
    store = KBStore(pb)
    results = []
    for slug, name in DEMO_TENANTS.items():
        data = json.loads((SEED_DIR / f"{slug}.json").read_text(encoding="utf-8"))
        result = store.import_document(slug, data, tenant_name=name)
        results.append(result)
        log(f"seed: {result.summary()}")
        for user in DEMO_USERS:
            if user.tenant == slug:
                ensure_user(pb, result.tenant, user, password)
    return results
