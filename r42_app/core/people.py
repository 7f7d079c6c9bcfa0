"""People of an organisation (issue 46), as pure rules: what an e-mail address, a name, a role and a password may be,
and how a CSV of people is read. The people service (services/store/people.py) writes only what passes here, and
PocketBase's rules (pb_migrations, pb_hooks) refuse the rest whoever writes.

Every problem is a catalogue code (core/messages.py) with an English detail for the CLI and the logs.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass

from r42_app.core.messages import N_, number

ROLES = ("learner", "admin")
STATES = ("invited", "active", "deactivated")
ROLE_NAMES = {"learner": N_("deelnemer"), "admin": N_("beheerder")}  # as the pages say them
STATE_NAMES = {"invited": N_("uitgenodigd"), "active": N_("actief"), "deactivated": N_("gedeactiveerd")}
# what a CSV's role column may say (Dutch or English, any case); empty is a learner
ROLE_WORDS = {"learner": "learner", "leerling": "learner", "deelnemer": "learner", "cursist": "learner",
              "student": "learner", "admin": "admin", "beheerder": "admin", "administrator": "admin"}

MAX_EMAIL = 254
MAX_NAME = 100
PASSWORD_MIN = 10
PASSWORD_MAX = 71  # PocketBase's bcrypt reads no further; a longer one would be cut without a word
INVITE_DAYS = 7  # an invitation link works this long, once
RESET_HOURS = 2  # a password-reset link works this long, once
MAX_IMPORT_ROWS = 5_000
MAX_IMPORT_BYTES = 1 << 20  # 5,000 rows of e-mail, name and role are ~300 KB
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet runs a cell that starts so (CSV injection)

# local@domain.tld, as people type them: no display name, no quotes, no comments, no IP literal
EMAIL_RE = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$")
# a few passwords people choose first (a longer list would be a file; these are the ones that pass the length rule)
COMMON_PASSWORDS = {"welkom1234", "wachtwoord", "wachtwoord1", "wachtwoord123", "password12", "password123",
                    "1234567890", "qwertyuiop", "welkomwelkom", "zomer20252026", "abcdefghij", "0987654321",
                    "iloveyou12", "welkom12345", "password1234", "qwerty1234", "1q2w3e4r5t"}


class PeopleInputError(ValueError):
    """Input about people that cannot be used: `code` for the catalogue, `fields` to fill it in, `str()` in English."""

    def __init__(self, code: str, detail: str, **fields: object):
        super().__init__(detail)
        self.code = code
        self.fields = fields


def _odd_character(text: str) -> str:
    """The first control or invisible character of `text` (as U+XXXX), or ""."""
    for c in text:
        if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"):
            return f"U+{ord(c):04X}"
    return ""


# the codes clean_email refuses an address with
EMAIL_CODES = ("people.email_required", "people.bad_email", "people.email_no_at", "people.email_no_domain",
               "people.not_email")


def clean_email(raw: object) -> str:
    """The address, trimmed and in lower case; PeopleInputError (one of EMAIL_CODES) when it is not one plain
    address."""
    if not isinstance(raw, str) or not raw.strip():
        raise PeopleInputError("people.email_required", "an e-mail address is required")
    email = raw.strip()
    if len(email) > MAX_EMAIL:
        raise PeopleInputError("people.bad_email", f"an e-mail address is at most {MAX_EMAIL} characters",
                               email=email[:60] + "…")
    if "<" in email or ">" in email or " " in email:
        raise PeopleInputError("people.bad_email", f"{email!r}: only the address itself, without a name or <…>",
                               email=email[:80])
    odd = _odd_character(email)
    if email.count("@") != 1 and not odd:
        raise PeopleInputError("people.email_no_at", f"{email!r} is not an e-mail address: one @ is needed",
                               email=email[:80])
    if "." not in email.partition("@")[2].strip(".") and not odd:  # "foo@bar": said how to mend it
        raise PeopleInputError("people.email_no_domain", f"{email!r} has no domain after the @", email=email[:80])
    if odd or not EMAIL_RE.match(email) or ".." in email:
        raise PeopleInputError("people.not_email", f"{email!r} is not an e-mail address", email=email[:80])
    return email.lower()


def clean_name(raw: object, email: str = "") -> str:
    """A person's name, trimmed (empty: the part of the e-mail before the @); PeopleInputError for a name that is
    too long, holds control or invisible characters, or starts like a spreadsheet formula."""
    name = raw.strip() if isinstance(raw, str) else ""
    if raw is not None and not isinstance(raw, str):
        raise PeopleInputError("people.bad_name", "a name must be text", reason="geen tekst")
    if not name:
        name = email.split("@")[0] if email else ""
        if not name:
            raise PeopleInputError("people.bad_name", "a name is required", reason="leeg")
    if len(name) > MAX_NAME:
        raise PeopleInputError("people.bad_name", f"a name is at most {MAX_NAME} characters",
                               reason=f"langer dan {MAX_NAME} tekens")
    if odd := _odd_character(name):
        raise PeopleInputError("people.bad_name", f"a name cannot hold control or invisible characters ({odd})",
                               reason=f"onzichtbaar teken {odd}")
    if name.startswith(FORMULA_START):
        raise PeopleInputError("people.formula", f"a name cannot start with {name[0]!r} (a spreadsheet formula)",
                               start=name[0])
    return name


def clean_role(raw: object) -> str:
    """'learner' or 'admin' from what a form, the API or a CSV says (empty: learner)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return "learner"
    role = ROLE_WORDS.get(raw.strip().lower()) if isinstance(raw, str) else None
    if role is None:
        shown = str(raw)[:40]
        raise PeopleInputError("people.bad_role", f"unknown role {shown!r}: learner or admin", role=shown)
    return role


_NOT_LETTERS = re.compile(r"[\W_]+")  # neither letter nor digit: "Jan de Vries" and "jan.devries" read as one name


def password_problem(password: object, email: str = "", name: str = "") -> PeopleInputError | None:
    """Why `password` cannot be someone's password (None when it can): the one rule of every way to set one
    (invitation, reset, change; PocketBase's field keeps the minimum too)."""
    if not isinstance(password, str) or len(password) < PASSWORD_MIN:
        return PeopleInputError("people.password_short", f"a password has at least {PASSWORD_MIN} characters",
                                minimum=PASSWORD_MIN)
    if len(password.encode()) > PASSWORD_MAX:
        return PeopleInputError("people.password_long", f"a password is at most {PASSWORD_MAX} bytes",
                                maximum=PASSWORD_MAX)
    if _odd_character(password):
        return PeopleInputError("people.password_odd", "a password cannot hold control or invisible characters")
    folded = password.casefold()
    local = email.split("@")[0].casefold() if email else ""
    letters = _NOT_LETTERS.sub("", folded)  # "Jan de Vries 2026" and "jan.devries" hold the same name
    names = [p for p in _NOT_LETTERS.split(name.casefold()) if len(p) >= 4] + [_NOT_LETTERS.sub("", name.casefold())]
    guessable = (len(set(folded)) < 4 or folded in COMMON_PASSWORDS
                 or (len(local) >= 4 and local in folded)
                 or any(part and part in letters for part in names))
    if guessable:
        return PeopleInputError("people.password_guessable", "a password that is easy to guess (a common one, "
                                "few different characters, or the e-mail or name in it)")
    return None


@dataclass(frozen=True)
class ImportRow:
    """A good row of a people CSV: its line (1 = the file's first), the address, name and role."""

    line: int
    email: str
    name: str
    role: str


@dataclass(frozen=True)
class BadRow:
    """A row that cannot be imported, and why (`code` in the catalogue, `reason` in English)."""

    line: int
    email: str
    code: str
    reason: str
    fields: tuple[tuple[str, object], ...] = ()

    def to_json(self) -> dict:
        from r42_app.core.messages import msg

        return {"line": self.line, "email": self.email, "reason": msg(self.code, **dict(self.fields)),
                "code": self.code}


HEADER_WORDS = {"email": "email", "e-mail": "email", "emailadres": "email", "e-mailadres": "email", "mail": "email",
                "name": "name", "naam": "name", "volledige naam": "name", "role": "role", "rol": "role"}


def _delimiter(first_line: str) -> str:
    """`;` (what a Dutch Excel writes) or `,`: whichever the first line holds more of, outside quotes."""
    outside = re.sub(r'"[^"]*"', "", first_line)
    return ";" if outside.count(";") > outside.count(",") else ","


def _cell(cells: list[str], columns: dict[str, int], name: str) -> str:
    i = columns.get(name)
    return cells[i] if i is not None and i < len(cells) else ""


def parse_people_csv(data: bytes) -> tuple[list[ImportRow], list[BadRow]]:
    """The rows of a CSV of people (`email,name,role`, a header optional, `;` or `,`, UTF-8 with or without BOM).
    Every bad row is named with its line; a duplicate address is bad on its second line. PeopleInputError for a file
    that cannot be read at all (too big, not UTF-8, too many rows, no rows)."""
    if len(data) > MAX_IMPORT_BYTES:
        raise PeopleInputError("people.csv_too_big", f"the file is {len(data):,} bytes; at most {MAX_IMPORT_BYTES:,}",
                               size=f"{len(data) / (1 << 20):.1f}".replace(".", ","), maximum="1")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PeopleInputError("people.csv_not_utf8", f"not UTF-8 text (byte {exc.start})") from exc
    if "\x00" in text:
        raise PeopleInputError("people.csv_not_utf8", "a NUL byte: not a text file")
    lines = text.splitlines()
    first = next((ln for ln in lines if ln.strip()), "")
    if not first:
        raise PeopleInputError("people.csv_empty", "the file holds no rows")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(first))
    columns = {"email": 0, "name": 1, "role": 2}
    good: list[ImportRow] = []
    bad: list[BadRow] = []
    seen: dict[str, int] = {}
    rows = 0
    header_done = False
    try:
        for record in reader:
            line = reader.line_num
            cells = [c.strip() for c in record]
            if not any(cells):
                continue
            if not header_done:
                header_done = True
                words = [HEADER_WORDS.get(c.lower()) for c in cells]
                if "email" in words:  # a header row: its names say the order
                    columns = {w: i for i, w in enumerate(words) if w}
                    continue
            rows += 1
            if rows > MAX_IMPORT_ROWS:
                raise PeopleInputError("people.csv_too_many", f"more than {MAX_IMPORT_ROWS:,} rows",
                                       maximum=number(MAX_IMPORT_ROWS))  # 5.000, in English 5,000

            raw_email = _cell(cells, columns, "email")
            try:
                email = clean_email(raw_email)
                name = clean_name(_cell(cells, columns, "name"), email)
                role = clean_role(_cell(cells, columns, "role"))
            except PeopleInputError as exc:
                bad.append(BadRow(line, raw_email[:120], exc.code, str(exc), tuple(exc.fields.items())))
                continue
            if email in seen:
                bad.append(BadRow(line, email, "people.csv_duplicate", f"{email} is on line {seen[email]} already",
                                  (("line", seen[email]),)))
                continue
            seen[email] = line
            good.append(ImportRow(line, email, name, role))
    except csv.Error as exc:
        raise PeopleInputError("people.csv_unreadable", f"line {reader.line_num}: {exc}", line=reader.line_num) from exc
    if not good and not bad:
        raise PeopleInputError("people.csv_empty", "the file holds no rows")
    return good, bad
