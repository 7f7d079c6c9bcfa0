"""An event's messages in the reader's language: each Reflex event runs with a language of its own, Dutch until
the event reads who is asking (AuthState.user, an admin check, `_speak`). A handler that built its message before
that said it in Dutch to an English reader (the people page's "De rol is gewijzigd.", a refused file, "too long").
So in every event handler of r42_app/state, the first catalogue message (or a helper that makes one) comes after
an await that reads the reader (an await of something else, such as a liveness check, does not set it)."""

import ast
from pathlib import Path

STATE = Path(__file__).resolve().parents[2] / "r42_app" / "state"
SAYS = ("msg(", "plural(", "number(", "_rated(")
# the calls that read who is asking, and so set the event's language (state/auth.py AuthState.user and its callers)
READS = ("_user(", "_admin(", ".user(", ".admin(", "_speak(", "_admin_tenant(", "_tenant(", "_signed_in(")


def handlers():
    for path in sorted(STATE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                    "event" in ast.unparse(d) for d in node.decorator_list):
                yield f"{path.name}:{node.lineno} {node.name}", ast.unparse(node)


def test_every_event_handler_reads_the_reader_before_it_says_anything():
    early = []
    for where, source in handlers():
        said = [source.find(s) for s in SAYS if s in source]
        if not said:
            continue
        before = source[:min(said)]
        # an await whose line reads the reader ("user = await self._admin(fresh=True)", "await (await
        # self.get_state(AuthState)).user()")
        if not any("await" in line and any(r in line for r in READS) for line in before.splitlines()):
            early.append(where)
    assert early == [], f"these handlers say a message before they know the reader's language: {early}"

