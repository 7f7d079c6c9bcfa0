"""Every message a user reads comes from one Dutch catalogue (core/messages.py): the codes the package uses
exist, every entry is Dutch, no state shows an exception's own text or an English literal, and the Dutch
texts PocketBase's hooks send are the catalogue's. Pure AST and text: no app, no services."""

import ast
import re
from pathlib import Path

import pytest

from r42_app.core.kb import parse_relation, parse_topic
from r42_app.core.messages import CATALOGUE, msg

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "r42_app"
SOURCES = sorted(PKG.rglob("*.py"))
UI_MODULES = sorted([*(PKG / "state").glob("*.py"), *(PKG / "pages").glob("*.py"), *(PKG / "components").glob("*.py"),
                     PKG / "chat" / "window.py"])
STATE_MODULES = sorted((PKG / "state").glob("*.py"))


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name}:{node.lineno}"


def name_of(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


# -- (a) every code used exists --------------------------------------------------------------------------


def user_error_classes(trees: list[ast.Module]) -> dict[str, str]:
    """The UserError subclasses of the package, each with its `code_prefix` (inherited), by class name."""
    bases: dict[str, list[str]] = {}
    prefixes: dict[str, str] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [name_of(b) for b in node.bases]
                for stmt in node.body:
                    if (isinstance(stmt, ast.Assign) and any(name_of(t) == "code_prefix" for t in stmt.targets)
                            or isinstance(stmt, ast.AnnAssign) and name_of(stmt.target) == "code_prefix"):
                        prefixes[node.name] = stmt.value.value
    found = {"UserError": ""}
    while True:
        more = {c: prefixes.get(c, next(found[b] for b in bs if b in found))
                for c, bs in bases.items() if c not in found and any(b in found for b in bs)}
        if not more:
            return found
        found.update(more)


def codes_used(path: Path, tree: ast.Module, classes: dict[str, str]) -> list[tuple[str, str]]:
    """(place, code) for every literal code: msg("..."), translate(language, "..."), a UserError subclass raised with a literal code (or
    kind, with its class's prefix, unless a `code=` is given) or `code="..."`, and Issue(where, message, "...").
    An f-string code (msg(f"quiz.{ending}")) yields its literal prefix, ending in "*"; a conditional both."""
    out = []

    def literal(node: ast.expr | None, prefix: str = "") -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
            return [prefix + node.value]
        if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            return [prefix + node.values[0].value + "*"]
        if isinstance(node, ast.IfExp):
            return literal(node.body, prefix) + literal(node.orelse, prefix)
        return []

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        called = name_of(node.func)
        keyword = next((k.value for k in node.keywords if k.arg == "code"), None)
        codes = []
        if called in ("msg", "tm") and node.args:
            codes = literal(node.args[0])
        elif called == "translate" and len(node.args) > 1:  # translate(language, "code", ...)
            codes = literal(node.args[1])
        elif called in classes:
            codes = literal(keyword) if keyword is not None else literal(node.args[0] if node.args else None,
                                                                            classes[called])
        elif called == "Issue":
            codes = literal(keyword) + (literal(node.args[2]) if len(node.args) > 2 else [])
        out += [(where(path, node), code) for code in codes]
    return out


def test_every_code_the_package_uses_is_in_the_catalogue():
    trees = {path: parsed(path) for path in SOURCES}
    classes = user_error_classes(list(trees.values()))
    assert {"KBError", "AuthError", "WrongPassword", "ChatRefused", "ConfirmationError", "FeedbackError"} <= set(classes)
    used = [pair for path, tree in trees.items() for pair in codes_used(path, tree, classes)]
    assert len(used) > 100  # the scan sees the package's codes, not nothing
    missing = [f"{place}: {code}" for place, code in used
               if (code.endswith("*") and not any(k.startswith(code[:-1]) for k in CATALOGUE))
               or (not code.endswith("*") and code not in CATALOGUE)]
    assert not missing, "codes missing from core/messages.py:\n" + "\n".join(missing)


def test_the_code_scan_sees_prefixes_and_keywords(tmp_path):
    source = tmp_path / "x.py"
    source.write_text('class Refused(UserError):\n    code_prefix = "chat."\n\n'
                      'class Later(Refused):\n    pass\n\n'
                      'msg("chat.failed")\nRefused("rate_limited")\nLater("nope", code="kb.nope")\n'
                      'Issue("id", "is required", "kb.required")\nmsg(f"quiz.{ending}")\n')
    tree = parsed(source)
    classes = user_error_classes([tree])
    assert classes == {"UserError": "", "Refused": "chat.", "Later": "chat."}
    assert [code for _, code in codes_used(source, tree, classes)] == [
        "chat.failed", "chat.rate_limited", "kb.nope", "kb.required", "quiz.*"]


# -- (b) every entry is Dutch --------------------------------------------------------------------------

# words an English sentence can hardly do without, and that Dutch does not have (so not "is", "in", "was",
# "had", "over", "door", "me", "we": Dutch words too)
ENGLISH_ONLY = frozenset("""
    the a an and you your yours please could would should cannot can can't not with been which this that these
    those must failed failure error invalid unknown already exists does doesn't don't isn't for from to it its be
    are were has have will there their what when who why how try again saved deleted added removed refused
    denied allowed available unavailable required too many no yes or on at by than then only any some all sign
""".split())  # not "later": Dutch too
# Dutch function words, a greeting and the imperatives of short entries; a Dutch entry has one of these or
# a word of Dutch shape: a Dutch digraph, a participle or plural (opgeslagen, verwijderd, onbekend, onderwerpen)
DUTCH_WORDS = frozenset("""
    de het een je jij jou jouw u uw ik niet geen en of van voor met op om te er dit deze die dat naar bij nog al
    ook kan kon konden mag mogen moet moeten wordt worden werd zijn heeft hebt hoort zo dan maar als wat waar welk
    welke niets meer alleen dezelfde hetzelfde hoi hallo bedankt vul kies kiezen onderwerp wachtwoord deelnemer
    beheerder
""".split())
DUTCH_SHAPE = re.compile(r"ij|oe|ui|aa|uu|uw|sch"
                         r"|^(?:op|af|toe|aan|uit|in|om|mee|weg|terug)?ge\w{2,}(?:d|t|en)$"
                         r"|^(?:ver|be|ont|her|on)\w{2,}(?:d|t|en|de|te)$")


def words(text: str) -> list[str]:
    """The words of a template, its {fields} left out."""
    return re.findall(r"[^\W\d_]+", re.sub(r"\{[^}]*\}", " ", text).lower())


def english_words(text: str) -> list[str]:
    return [w for w in words(text) if w in ENGLISH_ONLY]


def looks_dutch(text: str) -> bool:
    """No English-only word, and a Dutch function word or a word of Dutch shape."""
    found = words(text)
    return (not english_words(text)
            and any(w in DUTCH_WORDS or DUTCH_SHAPE.search(w) for w in found))


@pytest.mark.parametrize("code", sorted(CATALOGUE))
def test_every_catalogue_entry_is_dutch(code):
    text = CATALOGUE[code]
    assert text.strip() and not english_words(text), f"{code}: English words {english_words(text)} in {text!r}"
    assert looks_dutch(text), f"{code}: {text!r} does not read as Dutch"


@pytest.mark.parametrize("english", [
    "Could not load the topics. Please try again.", "Your rating was not stored.", "Saved", "Copied",
    "Topic deleted", "Invalid input", "The topic is not valid.", "Sign in to use R42.", "label is required",
    "Something went wrong while answering your question.", "Too many attempts, try again in a minute."])
def test_the_dutch_check_refuses_english(english):
    assert not looks_dutch(english)


@pytest.mark.parametrize("dutch", ["Je beoordeling is niet opgeslagen.", "Relatie verwijderd.", "Voorstel afgewezen.",
                                   "Onbeperkt", "Hoi!", "Welke rol voert {subject} uit?"])
def test_the_dutch_check_takes_dutch(dutch):
    assert looks_dutch(dutch)


def test_fields_are_filled_and_an_unknown_code_is_loud():
    assert msg("chat.too_long", length="8.001", maximum="8.000").startswith("Je bericht is 8.001 tekens")
    with pytest.raises(KeyError):
        msg("chat.no_such_code")


def test_topic_editor_issues_are_dutch_by_code():
    _, issues = parse_topic({"id": "Geen Slug", "label": "", "type": "x", "description": "d" * 600})
    dutch = {i.where: i.user_message for i in issues}
    assert dutch["topic.id"].startswith("Gebruik kleine letters")
    assert dutch["topic.label"] == "Dit veld is verplicht."
    assert dutch["topic.type"] == "Kies een van de toegestane waarden."
    assert dutch["topic.description"] == "Te lang: 600 tekens (maximaal 500)."
    assert "is required" in str(next(i for i in issues if i.where == "topic.label"))  # the CLI's words stay English
    _, [itself] = parse_relation({"source": "a", "target": "a", "type": "part_of"})
    assert itself.user_message == "Een onderwerp kan geen relatie met zichzelf hebben."


# -- (c) no exception's own text reaches the UI ----------------------------------------------------------

ALLOWED_ATTRIBUTES = {"user_message", "code", "kind", "issues", "retry_after", "status"}
RAW_ATTRIBUTES = {"message", "args"}
LOGGERS = {"log", "logger", "logging", "publish_log"}


def _is_log_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id in LOGGERS)


def _walk_outside_logs(nodes):
    """Every node under `nodes`, leaving out the subtrees of log calls (the log is where exceptions go)."""
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if _is_log_call(node):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _bare(node: ast.AST, name: str) -> bool:
    """Whether `node` uses the exception `name` other than through an allowed attribute."""
    if isinstance(node, ast.Name):
        return node.id == name
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name:
        return node.attr not in ALLOWED_ATTRIBUTES
    return any(_bare(child, name) for child in ast.iter_child_nodes(node))


def raw_exception_uses(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, what) wherever an `except ... as name:` block lets `name`'s own text out: str(name), repr(name),
    an f-string or %-format with name, "...".format(name), name.message / name.args, or name itself as a
    toast or a state attribute. Log calls are exempt."""
    found = []
    for handler in ast.walk(tree):
        if not isinstance(handler, ast.ExceptHandler) or not handler.name:
            continue
        name = handler.name
        for node in _walk_outside_logs(handler.body):
            if isinstance(node, ast.Call) and name_of(node.func) in ("str", "repr") and any(
                    _bare(arg, name) for arg in node.args):
                found.append((node.lineno, f"{name_of(node.func)}({name})"))
            elif isinstance(node, ast.Call) and name_of(node.func) == "format" and any(
                    _bare(arg, name) for arg in [*node.args, *(k.value for k in node.keywords)]):
                found.append((node.lineno, f".format({name})"))
            elif isinstance(node, ast.FormattedValue) and _bare(node.value, name):
                found.append((node.lineno, f"f-string with {name}"))
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and _bare(node.right, name):
                found.append((node.lineno, f"% {name}"))
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == name
                  and node.attr in RAW_ATTRIBUTES):
                found.append((node.lineno, f"{name}.{node.attr}"))
            elif isinstance(node, ast.Call) and _is_toast(node.func) and any(
                    isinstance(a, ast.Name) and a.id == name for a in node.args):
                found.append((node.lineno, f"toast of {name}"))
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == name and any(
                    isinstance(t, ast.Attribute) for t in node.targets):
                found.append((node.lineno, f"attribute = {name}"))
    return sorted(found)


@pytest.mark.parametrize("path", UI_MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_the_ui_shows_no_exception_text(path):
    found = raw_exception_uses(parsed(path))
    assert not found, f"{path.relative_to(ROOT)} shows exception text: " + ", ".join(f"line {n}: {w}" for n, w in found)


def test_the_exception_rule_catches_str_and_f_strings():
    tree = ast.parse("""
try:
    pass
except KBError as exc:
    self.error = str(exc)
    rx.toast.error(f"x {exc}")
    rx.toast.error(exc.message)
    self.notice = exc
    rx.toast.error("{}".format(exc))
    log.error("failed: %s %s", exc, str(exc))
    rx.toast.error(exc.user_message)
    self.field_errors = {i.where: i.user_message for i in exc.issues}
    if exc.kind == "quota_exceeded":
        pass
""")
    assert [what for _, what in raw_exception_uses(tree)] == [
        "str(exc)", "f-string with exc", "exc.message", "attribute = exc", ".format(exc)"]


# -- (d) no literal text reaches a toast or a message attribute of a state ------------------------------

UI_ATTRIBUTE = re.compile(r"error|notice|message|reason")


def _is_toast(func: ast.expr) -> bool:
    """rx.toast(...), rx.toast.error(...) and the like."""
    while isinstance(func, ast.Attribute):
        if func.attr == "toast" and isinstance(func.value, ast.Name) and func.value.id == "rx":
            return True
        func = func.value
    return False


def _module_texts(tree: ast.Module) -> set[str]:
    """Module-level names bound to a text literal (REFUSED = "..."): passing one is passing the literal."""
    out = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and _is_text(stmt.value, set()):
            out.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
    return out


def _is_text(node: ast.expr | None, texts: set[str]) -> bool:
    """Whether `node` is words written in code rather than taken from msg(): a non-empty string literal, an
    f-string, a concatenation or %-format of one, a conditional with one, or a module constant holding one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value.strip() != ""
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _is_text(node.left, texts) or _is_text(node.right, texts)
    if isinstance(node, ast.IfExp):
        return _is_text(node.body, texts) or _is_text(node.orelse, texts)
    if isinstance(node, ast.Name):
        return node.id in texts
    return False


def literal_ui_texts(tree: ast.Module) -> list[int]:
    """Lines where a state sets an *error* / *notice* / *message* / *reason* attribute to, or toasts, text
    that does not come from msg()."""
    texts = _module_texts(tree)
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_toast(node.func):
            if any(_is_text(v, texts) for v in [*node.args[:1], *(k.value for k in node.keywords
                                                                 if k.arg in ("title", "description"))]):
                lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                pairs = (zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple)
                         and isinstance(node.value, ast.Tuple) else [(target, node.value)])
                for t, v in pairs:
                    if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                            and UI_ATTRIBUTE.search(t.attr) and _is_text(v, texts)):
                        lines.append(node.lineno)
    return sorted(set(lines))


@pytest.mark.parametrize("path", STATE_MODULES, ids=lambda p: p.name)
def test_states_show_only_catalogue_messages(path):
    lines = literal_ui_texts(parsed(path))
    assert not lines, f"{path.relative_to(ROOT)}: text not from msg() on line(s) {lines}"


def test_the_literal_rule_catches_toasts_and_attributes():
    tree = ast.parse('''
REFUSED = "Alleen beheerders."
self.error = "Laden mislukt"
self.loading, self.load_error = True, f"Laden mislukt: {x}"
rx.toast.error(REFUSED)
rx.toast("Gekopieerd", duration=1500)
self.notice = "Klaar" if done else msg("chat.failed")
self.error = ""
self.error = msg("chat.failed")
rx.toast.success(msg("kb.relation_added"))
self.messages = [*self.messages, note]
''')
    assert literal_ui_texts(tree) == [3, 4, 5, 6, 7]


# -- PocketBase's hooks say the same ---------------------------------------------------------------------

# (r42_tool_shapes.js is generated data: the tools' schemas as the model reads them, in English, sent to nobody)
HOOKS = sorted(p for p in (ROOT / "pb_hooks").glob("*.js") if p.name != "r42_tool_shapes.js")
HOOK_FIELDS = {"MAX_OPEN_SUGGESTIONS": "count"}  # a JS constant joined into a message, as the template's field


def hook_texts() -> list[str]:
    """The Dutch string literals of pb_hooks/*.js, a joined-in constant written as its template field."""
    out = []
    for path in HOOKS:
        source = path.read_text(encoding="utf-8")
        for constant, field in HOOK_FIELDS.items():
            source = source.replace(f'" + {constant} + "', "{" + field + "}")
        out += [text for text in re.findall(r'"((?:[^"\\\n]|\\.)*)"', source)
                if len(words(text)) >= 3 and looks_dutch(text)]
    return out


def test_the_hooks_send_the_catalogues_words():
    texts = hook_texts()
    for code in ("feedback.too_fast", "feedback.too_large", "chat.data_write_denied", "chat.chatbot_disabled",
                 "chat.forbidden", "auth.too_many_attempts", "auth.no_refresh", "suggestions.too_many_open",
                 "auth.signed_out", "auth.sso_only"):
        assert CATALOGUE[code] in texts, f"pb_hooks/ no longer sends {code}: {CATALOGUE[code]!r}"
    strays = [text for text in texts if text not in CATALOGUE.values()]
    assert not strays, "Dutch texts in pb_hooks/ that differ from core/messages.py:\n" + "\n".join(strays)


def test_the_hooks_count_the_same_open_suggestions():
    from r42_app.services.store.suggestions import MAX_OPEN_SUGGESTIONS

    rules = (ROOT / "pb_hooks" / "r42_rules.js").read_text(encoding="utf-8")
    assert f"const MAX_OPEN_SUGGESTIONS = {MAX_OPEN_SUGGESTIONS};" in rules
