"""Issue 51, item 2: one definition per tool. A tool's input is one typed model (core/tools.py); the JSON schema the
model sees, the validation of a call and PocketBase's rule for what may be stored all come from it. A limit added
to the model, and nothing else, changes all three."""

import shutil
from typing import Annotated

import pytest
from pydantic import Field

from r42_app.core.capabilities import DATA_WRITE
from r42_app.core.delta import GraphSnapshot, Rejected, ValidDelta, validate_delta
from r42_app.core.kb import Topic
from r42_app.core.tools import PROPOSE_GRAPH_DELTA, ProposeGraphDeltaInput, Text, ToolSpec, pocketbase_shapes
from r42_app.services.runtime.pb_server import HOOKS_DIR, PocketBaseServer, ensure_superuser
from r42_app.services.store.pb import PBError, PocketBase
from r42_app.services.store.tenants import Tenants
from tests.conftest import DEMO_PASSWORD, direct_sign_in, free_port


class TighterReason(ProposeGraphDeltaInput):
    """The tool's input with one limit added: a reason of at most 40 characters (today: 300)."""

    reason: Annotated[Text(40), Field(description="One sentence: why this edit helps.")]  # type: ignore[valid-type]


REASON = "Dit onderwerp ontbreekt nog in de kennisbank."  # 45 characters
KB = GraphSnapshot([Topic("aow", "AOW", "concept", "De AOW.")], [])


def delta(reason: str) -> dict:
    return {"reason": reason, "topics": [{"id": "wezenpensioen", "label": "Wezenpensioen", "type": "concept",
                                          "description": "Pensioen voor wezen."}],
            "relations": [{"source": "wezenpensioen", "target": "aow", "type": "related_to"}]}


def test_a_limit_added_to_the_tool_definition_changes_schema_validation_and_pocketbase(tmp_path):
    tighter = ToolSpec.typed(PROPOSE_GRAPH_DELTA.name, PROPOSE_GRAPH_DELTA.description, TighterReason, DATA_WRITE)

    # the schema the model sees
    assert PROPOSE_GRAPH_DELTA.definition()["input_schema"]["properties"]["reason"]["maxLength"] == 300
    assert tighter.definition()["input_schema"]["properties"]["reason"]["maxLength"] == 40

    # the validation in Python, with the reason the model reads
    assert isinstance(validate_delta(delta(REASON), KB), ValidDelta)
    refused = validate_delta(delta(REASON), KB, shape=TighterReason)
    assert isinstance(refused, Rejected) and refused.message == "reason is longer than 40 characters"
    assert isinstance(validate_delta(delta("Ontbreekt nog."), KB, shape=TighterReason), ValidDelta)

    # PocketBase's rule for every writer: a PocketBase whose hooks hold the shapes generated from the new definition
    hooks = tmp_path / "pb_hooks"
    shutil.copytree(HOOKS_DIR, hooks)
    (hooks / "r42_tool_shapes.js").write_text(pocketbase_shapes((tighter,)), encoding="utf-8")
    pb_dir = tmp_path / "pb_data"
    creds = ensure_superuser(pb_dir, tmp_path / "superuser.json")
    server = PocketBaseServer(pb_dir, free_port(), hooks_dir=hooks).start()
    try:
        admin = PocketBase(server.url).as_superuser(creds.email, creds.password)
        tenant = Tenants(admin).create("vorm", "Vorm")
        learner = admin.create("users", {"email": "leerling@example.com", "password": DEMO_PASSWORD,
                                         "passwordConfirm": DEMO_PASSWORD, "name": "Leerling", "role": "learner",
                                         "tenant": tenant.id, "verified": True})
        own = PocketBase(server.url, token=direct_sign_in(server.url, "leerling@example.com"))

        def file(reason: str) -> dict:
            return own.create("suggestions", {"tenant": tenant.id, "user": learner["id"], "delta": delta(reason),
                                               "status": "pending"})

        with pytest.raises(PBError) as too_long:
            file(REASON)
        assert too_long.value.status == 400 and "reason is longer than 40 characters" in str(too_long.value.data).lower()
        assert file("Ontbreekt nog.")["status"] == "pending"
        assert len(admin.all("suggestions")) == 1  # the refused one left nothing
    finally:
        server.stop()


def test_pocketbase_takes_the_shapes_of_todays_definition(pb_server, seeded, admin_pb):
    """The committed hooks file is the one generated from the tools as defined (python -m r42_app.docsgen), and the
    running PocketBase accepts a 45-character reason that the tighter definition above refuses."""
    assert (HOOKS_DIR / "r42_tool_shapes.js").read_text(encoding="utf-8") == pocketbase_shapes()
    demo = admin_pb.first("tenants", 'slug = "demo"')
    from tests.conftest import throwaway_user

    with throwaway_user(admin_pb) as (email, row):
        own = PocketBase(pb_server.url, token=direct_sign_in(pb_server.url, email))
        stored = own.create("suggestions", {"tenant": demo["id"], "user": row["id"], "delta": delta(REASON),
                                            "status": "pending"})
        assert stored["delta"]["reason"] == REASON
