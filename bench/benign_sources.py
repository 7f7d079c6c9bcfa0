"""Benign instructional prose, in English and in Dutch, for training and measuring the injection detector.

The learned detector (`bench/injection_learned.py`) falsely flags ordinary how-to text addressed to a
reader ("Click ...", "You can ...", "To do X, ..."), FAQ answers, handbooks, and any Dutch. These
functions return such text as clean plain-text passages, read from documentation that Debian ships:

    english_instructional_train()    LibreOffice help + GIMP manual + Python HOWTOs/tutorial/FAQ + Debian Reference
    english_instructional_heldout()  GNOME help + Debian Handbook + Debian Edu manual + Debian FAQ
    dutch_instructional_train()      LibreOffice help (nl) + GIMP manual (nl)
    dutch_instructional_heldout()    GNOME help + Debian Handbook (nl-NL) + Debian Edu manual + Debian FAQ, in Dutch
    english_encyclopaedic()          FOLDOC, the Free On-line Dictionary of Computing (encyclopaedic entries)

Training and held-out text never come from the same package or the same kind of document: the held-out
functions measure whether the detector generalises to help prose it has not seen (desktop help, an
administrator's handbook, a school network's manual, FAQ answers) rather than to more pages of the same
manual. The families are on the same side in both languages (LibreOffice and GIMP for training; GNOME,
the Debian Handbook, Debian Edu and the Debian FAQ held out). No held-out passage near-duplicates a
training one (checked with `_dedupe` over both).

Sources: Debian 12 "bookworm" packages; licences from /usr/share/doc/PKG/copyright in each package;
passages after cleaning, as measured when this file was written ("reader" = share that address the
reader: you/your/click/select/choose/press, u/uw/je/klik/kies/selecteer/druk):

    package==version                          licence                               split         passages reader
    libreoffice-help-en-us==4:7.4.7-1+deb12u14  MPL-2.0 (some Apache-2.0 material)  en train         4,128   71%
    gimp-help-en==2.10.34-2                   GFDL-1.2+, no invariant sections      en train         2,877   65%
    python3.11-doc==3.11.2-6+deb12u9          PSF licence (Python documentation)    en train         1,778   44%
    debian-reference-en==2.100                GPL-2+                                en train           392   39%
    gnome-user-docs==43.0-2 (C)               CC-BY-SA-3.0                          en held-out        951   89%
    debian-handbook==11.20220922 (en-US)      GPL-2.0+ or CC-BY-SA-3.0              en held-out      1,800   25%
    debian-edu-doc-en==2.12.23~deb12u1        GPL-2+                                en held-out        251   41%
    debian-faq==11.1                          SPI notice: verbatim and modified     en held-out        280   36%
                                              copies and translations permitted
    libreoffice-help-nl==4:7.4.7-1+deb12u14   MPL-2.0 (some Apache-2.0 material)    nl train         4,107   72%
    gimp-help-nl==2.10.34-2                   GFDL-1.2+, no invariant sections      nl train           952   75%
    gnome-user-docs==43.0-2 (nl)              CC-BY-SA-3.0                          nl held-out        646   91%
    debian-handbook==11.20220922 (nl-NL)      GPL-2.0+ or CC-BY-SA-3.0              nl held-out        390   27%
    debian-edu-doc-nl==2.12.23~deb12u1        GPL-2+                                nl held-out        255   56%
    debian-faq-nl==11.1                       SPI notice (as debian-faq)            nl held-out        288   39%
    dict-foldoc==20230119-1                   GFDL-1.1+ (FOLDOC, ed. Denis Howe)    en encyclopaedic 8,198  8%

    added in issue 27's second round (training, but GnuCash: held out, never trained or tuned on):
    git-doc==1:2.39.5-0+deb12u3               GPL-2 (Git's documentation)           en train         4,382
    installation-guide-amd64==20230508+deb12u1 GPL-2+                               en train           661
    installation-guide-amd64 (nl)             GPL-2+                                nl train           695
    dict-jargon==4.4.7-3.1                    public domain (the Jargon File)       en train         1,543
    gnucash-docs==4.13-1 (guide, help; en)    GFDL-1.1+                             en held-out    (below)

    totals: en train 9,175; en held-out 3,282; nl train 5,059; nl held-out 1,579; en encyclopaedic 8,198.

What is read from each package: LibreOffice's help pages (text/*/, without the menu-path pages in the
"00" folders and without the Basic macro reference text/sbasic); every page of the GIMP manual but the
licence and bibliography; Python's tutorial/, howto/, faq/, using/, installing/, distributing/ and
extending/ pages; all Debian Reference chapters; every GNOME Mallard page (gnome-help, and for C also
the system-admin-guide); every Debian Handbook chapter and section page; the Debian Edu bookworm
manual; every Debian FAQ chapter; every FOLDOC entry but the dictionary's notice and the GFDL's text.
The Dutch GIMP manual and Dutch Debian Handbook are partly untranslated: their English paragraphs are
dropped by the language check, which is why they give fewer passages than the English ones.

Cleaning, the same for every source: HTML (lxml) or Mallard XML is walked block by block (paragraphs,
list items, definition terms and bodies, FOLDOC paragraphs). Code and terminal blocks (pre, screen,
code listings, Sphinx highlight blocks), tables, figures, navigation (headers, footers, tables of
contents, sidebars, "related topics", LibreOffice's "how to get there" menu paths), footnotes and box
titles ("Note", "TIP") are dropped and break the passage; inline markup keeps its text (a key sequence
becomes "Ctrl+C", a GUI path "Edit > Preferences"; of LibreOffice's per-module and per-system
variants only the default one is kept). Whitespace is normalised. A block is dropped when more than 6%
of its words look like code (paths, options, braces, `=`, `()`, `$`, `::`, ...), when it holds a
spreadsheet formula or cell range, when it is not in the expected language (a stop-word count), when
it has no verb-like stop word, or when it continues in lower case right after a dropped block. Blocks
are merged in reading order within a section (never across a heading or a dropped block) until a
passage has at least 40 words and ends a sentence; a heading that asks a question (FAQ) opens the next
passage. Passages hold 25-250 words, start with a capital, digit or quote, end at a sentence end
(a trailing lead-in "...:" is cut when enough is left), and are deduplicated: exact duplicates and near
ones (60% of their word 6-grams in one earlier passage). The order is deterministic: the sources in the
order above, each package's files sorted by path, the text of a file in reading order; shuffle to sample.

The .deb files are fetched with `apt-get download` into tools/bench-wheels/debs (gitignored; about
180 MB; `apt-get update` is run once if apt cannot find them) and read in place with Python's tarfile,
never installed; the cleaned passages are cached per package as tools/bench-wheels/benign-text/*.json.gz
(about 3 MB). Once cached each function takes well under a second; a first extraction takes 3-10 s per
function. When Debian replaces a pinned version (point releases, security updates), the candidate
version is fetched instead and named in the cache file: counts may then differ slightly.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import re
import subprocess
import tarfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "tools" / "bench-wheels"
CLEANING_VERSION = 2  # bump when the cleaning changes: the cached passages are then rebuilt

PACKAGES = {  # package -> the version this file was measured on (fetched if still served, else the candidate)
    "libreoffice-help-en-us": "4:7.4.7-1+deb12u14",
    "libreoffice-help-nl": "4:7.4.7-1+deb12u14",
    "python3.11-doc": "3.11.2-6+deb12u9",
    "debian-reference-en": "2.100",
    "gnome-user-docs": "43.0-2",
    "debian-handbook": "11.20220922",
    "debian-faq": "11.1",
    "debian-faq-nl": "11.1",
    "gimp-help-en": "2.10.34-2",
    "gimp-help-nl": "2.10.34-2",
    "debian-edu-doc-en": "2.12.23~deb12u1",
    "debian-edu-doc-nl": "2.12.23~deb12u1",
    "dict-foldoc": "20230119-1",
    # added for issue 27's second round: more training prose, and one more source never trained or tuned on
    "git-doc": "1:2.39.5-0+deb12u3",
    "installation-guide-amd64": "20230508+deb12u1",
    "dict-jargon": "4.4.7-3.1",
    "gnucash-docs": "4.13-1",
}

MIN_WORDS, TARGET_WORDS, MAX_WORDS = 25, 40, 250
MAX_CODE_FRACTION = 0.06

# --------------------------------------------------------------------------------------------------
# fetching and reading .deb files


def _deb(package: str) -> Path:
    """The package's .deb in tools/bench-wheels/debs, downloaded with apt-get if it is not there yet."""
    directory = CACHE / "debs"
    version = PACKAGES[package]
    pinned = directory / f"{package}_{version.replace(':', '%3a')}_all.deb"
    if pinned.exists():
        return pinned
    found = sorted(directory.glob(f"{package}_*.deb"))
    if found:
        return found[-1]
    directory.mkdir(parents=True, exist_ok=True)

    def download(spec: str) -> bool:
        return subprocess.run(["apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", spec], cwd=directory,
                              capture_output=True).returncode == 0

    if not (download(f"{package}={version}") or download(package)):
        subprocess.run(["apt-get", "update", "-q"], capture_output=True)
        if not (download(f"{package}={version}") or download(package)):
            raise RuntimeError(f"could not fetch the Debian package {package} with apt-get download")
    found = sorted(directory.glob(f"{package}_*.deb"))
    return pinned if pinned.exists() else found[-1]


def _deb_version(deb: Path) -> str:
    return deb.name.split("_")[1].replace("%3a", ":")


def _data_tar(deb: Path) -> tarfile.TarFile:
    """The data.tar member of a .deb (an ar archive), opened from memory."""
    raw = deb.read_bytes()
    if not raw.startswith(b"!<arch>\n"):
        raise ValueError(f"{deb} is not a .deb")
    pos = 8
    while pos + 60 <= len(raw):
        name = raw[pos:pos + 16].decode().strip().rstrip("/")
        size = int(raw[pos + 48:pos + 58].decode().strip())
        body = raw[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name.startswith("data.tar"):
            if name.endswith(".xz"):
                body = lzma.decompress(body)
            elif name.endswith(".gz"):
                body = gzip.decompress(body)
            elif name.endswith(".zst"):  # no zstd in Python 3.11's standard library: let dpkg-deb unpack it
                body = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True,
                                      check=True).stdout
            return tarfile.open(fileobj=io.BytesIO(body))
    raise ValueError(f"{deb} has no data.tar")


def _members(deb: Path, wanted: Callable[[str], bool]) -> Iterator[tuple[str, bytes]]:
    """(path, content) of the package's regular files whose path (without the leading ./) is wanted, sorted."""
    with _data_tar(deb) as tar:
        chosen = sorted((m.name.removeprefix("./"), m) for m in tar.getmembers()
                        if m.isfile() and wanted(m.name.removeprefix("./")))
        for name, member in chosen:
            data = tar.extractfile(member).read()
            if name.endswith((".gz", ".dz")):  # .dz: dictzip, gzip-compatible
                data = gzip.decompress(data)
            yield name, data


# --------------------------------------------------------------------------------------------------
# language and junk checks

_EN = set("""the a an and or of to in on for with is are was were be been it this that these those you your
can will would should may might must not no by from as at if when then than there their they we our which
what who how do does did have has had but so also into out up about more most other some such only its
use used using click select choose press open""".split())
_NL = set("""de het een en of van in op voor met is zijn was waren worden wordt werd je jij u uw kunt kan
kunnen zal zullen moet moeten niet geen door uit als bij dan er hun ze zij wij we ons onze die dat deze
dit wat wie hoe doen doet heeft hebben had maar dus ook naar over meer meest andere sommige alleen om te
tot aan nog wel al hier daar waar wanneer klik kies selecteer druk open gebruik""".split())
_VERBISH_EN = set("is are was were be can will would should may might must has have had do does "
                  "click select choose press open use enter type".split())
_VERBISH_NL = set("is zijn was waren worden wordt werd kunt kan kunnen zal zullen moet moeten heeft hebben "
                  "had klik kies selecteer druk open gebruik voer typ".split())
_CODE_TOKEN = re.compile(r"[{}<>=\\|$`@#~^]|_\w|\w\(|::|^--?\w|/\w+/|\w/\w+\.\w|\.\w+\(|^\w+\.\w+\.\w+|;\S|\[\d*\]")
_FORMULA = re.compile(r"(^|\s)=[A-Za-z(]|\b[A-Z]{1,3}\d+:[A-Z]{1,3}\d+\b|\w;\w|<\?>|\b[a-z]\w*\([^)]*\)\s*[:;{]")
_WORD = re.compile(r"[a-zà-ÿ]+(?:['’][a-z]+)?")
_END = (".", "!", "?", ":", "\"", "”", "’", "'", ")", "…")


def _code_fraction(text: str) -> float:
    tokens = text.split()
    return sum(1 for t in tokens if _CODE_TOKEN.search(t)) / max(1, len(tokens))


def _language_ok(text: str, lang: str) -> bool:
    words = _WORD.findall(text.lower())
    if len(words) < 4:
        return False
    en = sum(w in _EN for w in words)
    nl = sum(w in _NL for w in words)
    if lang == "en":
        return en >= 0.18 * len(words) and en > 1.5 * nl and any(w in _VERBISH_EN for w in words)
    return nl >= 0.18 * len(words) and nl > 1.5 * en and any(w in _VERBISH_NL for w in words)


def _normalise(text: str) -> str:
    text = " ".join(text.replace("\u00a0", " ").replace("\u00ad", "").replace("\u200b", "").replace("¶", " ").split())
    text = re.sub(r"\s+([,.;:!?)])(?=\s|$)", r"\1", text)  # "word ." -> "word." (not ".BAK", ".dsc")
    text = re.sub(r"([(“])\s+", r"\1", text).replace(" ”", "”")
    text = re.sub(r"\s\(\s*\)(?=[\s.,;:])", "", text)  # the parentheses of a dropped inline image
    return re.sub(r"(?<=[a-zà-ÿ]{2}[.!?])(?=[A-Z][a-zà-ÿ]{2})", " ", text)  # "Tabel.De" (two joined elements)


def _clean_block(text: str, lang: str) -> str | None:
    text = _normalise(text)
    if not text or _code_fraction(text) > MAX_CODE_FRACTION or _FORMULA.search(text) \
            or not _language_ok(text, lang):
        return None
    return text


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9“\"'(])")


def _split_long(text: str) -> list[str]:
    """A block of more than MAX_WORDS words, cut at sentence ends into pieces of at most MAX_WORDS words."""
    pieces, current = [], []
    for sentence in _SENTENCE_END.split(text):
        words = sentence.split()
        if len(words) > MAX_WORDS:  # a run-on "sentence": dropped, as it can only be cut mid-sentence
            if current:
                pieces.append(" ".join(current))
                current = []
            continue
        if len(current) + len(words) > MAX_WORDS:
            pieces.append(" ".join(current))
            current = []
        current += words
    if current:
        pieces.append(" ".join(current))
    return pieces


def _passages(blocks: Iterable[str | None], lang: str) -> list[str]:
    """Passages from a document's blocks in reading order; None marks a section boundary (a heading or a
    dropped code block, table or figure). A passage starts at a capital (or digit/quote), ends at a
    sentence end, and does not continue across a dropped block."""
    out: list[str] = []
    buffer: list[str] = []

    def flush() -> None:
        while buffer and not buffer[-1].endswith(_END):  # a trailing fragment: a label, an unfinished lead-in
            buffer.pop()
        text = " ".join(buffer)
        if text.endswith(":"):  # a lead-in to a dropped example or list: cut that sentence if enough is left
            sentences = _SENTENCE_END.split(text)
            if len(sentences) > 1 and len(" ".join(sentences[:-1]).split()) >= MIN_WORDS:
                text = " ".join(sentences[:-1])
        if MIN_WORDS <= len(text.split()) <= MAX_WORDS and not text[0].islower():
            out.append(text)
        buffer.clear()

    after_gap = True
    for block in blocks:
        if block is None:
            flush()
            after_gap = True
            continue
        cleaned = _clean_block(block, lang)
        if cleaned is None or (after_gap and not buffer and cleaned[0].islower()):
            flush()  # a dropped block (code, formulas, another language) breaks the passage, and so does
            after_gap = True  # what continues it in lower case ("... to your /etc/foo.cfg.")
            continue
        after_gap = False
        for piece in (_split_long(cleaned) if len(cleaned.split()) > MAX_WORDS else [cleaned]):
            if buffer and len(" ".join(buffer).split()) + len(piece.split()) > MAX_WORDS:
                flush()
            buffer.append(piece)
            if len(" ".join(buffer).split()) >= TARGET_WORDS and piece.endswith((".", "!", "?", "…", "”", "\"", ")")):
                flush()  # (not after "...:" or "...;", whose list goes on in the next blocks)
    flush()
    return out


def _dedupe(passages: Iterable[str], shingle: int = 6, overlap: float = 0.6) -> list[str]:
    """Passages without exact or near duplicates: a passage is dropped when `overlap` of its word
    6-grams are in one passage kept before it (the help pages repeat shared paragraphs with small edits)."""
    seen: set[str] = set()
    index: dict[int, list[int]] = {}
    out: list[str] = []
    for p in passages:
        key = re.sub(r"[^0-9a-zà-ÿ]+", "", p.lower())
        if key in seen:
            continue
        words = re.findall(r"[0-9a-zà-ÿ]+", p.lower())
        grams = {zlib.crc32(" ".join(words[i:i + shingle]).encode()) for i in range(max(1, len(words) - shingle + 1))}
        counts: dict[int, int] = {}
        for g in grams:
            for j in index.get(g, ()):
                counts[j] = counts.get(j, 0) + 1
        if counts and max(counts.values()) >= overlap * len(grams):
            continue
        seen.add(key)
        for g in grams:
            index.setdefault(g, []).append(len(out))
        out.append(p)
    return out


# --------------------------------------------------------------------------------------------------
# HTML (Sphinx, DocBook, Publican, LibreOffice help) and Mallard (GNOME help) block extraction

_HTML_BLOCKS = {"p", "li", "dd", "dt", "blockquote", "caption", "figcaption"}
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_HTML_DROP_TAGS = {"script", "style", "pre", "table", "nav", "header", "footer", "aside", "form", "button",
                   "noscript", "img", "figure", "object", "svg", "math", "head", "select", "input", "label"}
_HTML_DROP_CLASSES = {
    # Sphinx
    "highlight", "headerlink", "sphinxsidebar", "related", "footer", "admonition-title", "toctree-wrapper",
    "sig", "versionmodified", "doctest", "literal-block-wrapper", "contents", "topic", "footnote",
    "footnote-reference", "citation", "clearer", "sidebar-title",
    # DocBook / Publican
    "navheader", "navfooter", "toc", "list-of-tables", "list-of-figures", "list-of-examples", "screen",
    "programlisting", "synopsis", "cmdsynopsis", "funcsynopsis", "informaltable", "table", "figure",
    "mediaobject", "docnav", "footnotes", "authorgroup", "author", "revhistory", "legalnotice", "indexterm",
    "index", "informalfigure", "calloutlist", "literallayout", "example", "informalexample",
    # LibreOffice help
    "relatedtopics", "relatedbody", "howtoget", "howtogetheader", "howtogetbody", "bug", "debug",
    "tableheadintable", "tablecontentintable", "code", "bascode", "pycode", "note-label",
    "tip-label", "warning-label", "noteicon", "tipicon", "warningicon", "acknowgs", "logo", "dropdowns",
}
_HTML_DROP_IDS = {"DEBUG", "SearchFrame", "DonationFrame", "Contents", "Index", "Bookmarks", "TopLeftHeader",
                  "banner", "navigation"}


def _is_block(el) -> bool:
    tag = el.tag if isinstance(el.tag, str) else ""
    return tag in _HTML_BLOCKS or (tag == "div" and "para" in (el.get("class") or "").split())


def _own_text(el) -> str:
    """The text of an element without that of nested blocks (they are read on their own)."""
    parts = [el.text or ""]
    for child in el:
        if isinstance(child.tag, str) and (_is_block(child) or child.tag in _HEADINGS or
                                           child.tag in {"ul", "ol", "dl", "div"}):
            parts.append(" ")
        elif isinstance(child.tag, str):
            parts.append(child.text_content())
        parts.append(child.tail or "")
    return " ".join("".join(parts).split())


_INLINE_TAGS = {"a", "span", "code", "tt", "kbd", "em", "strong", "b", "i", "sup", "sub", "img", "abbr", "acronym",
                "button", "input", "label", "select", "small", "big", "q", "cite", "var", "samp", "br", "wbr",
                "meta", "link", "object", "svg", "math", "noscript", "script", "style"}
_QUESTION_NUMBER = re.compile(r"^\s*(?:[A-Z]?\d+(?:\.\d+)*\.?|Q:)\s+")


def _heading(text: str) -> Iterator[str | None]:
    """A section boundary; a heading that asks a question (FAQ) also starts the next passage."""
    yield None
    text = _QUESTION_NUMBER.sub("", " ".join(text.split()))
    if text.endswith("?") and len(text.split()) >= 3:
        yield text


def _html_blocks(data: bytes, root_xpath: str | None = None) -> Iterator[str | None]:
    import lxml.html

    doc = lxml.html.document_fromstring(data)
    for switch in doc.xpath("//*[contains(@class, 'switch')]"):  # LibreOffice: one text per module and system
        for variant in switch.xpath("./*[@hidden]"):  # (the default one is kept)
            if not (variant.get("id") or "").startswith("default"):
                variant.drop_tree()
    for el in list(doc.iter()):
        if not isinstance(el.tag, str) or el.getparent() is None:
            continue
        classes = set((el.get("class") or "").split())
        title = el.tag == "p" and "title" in classes  # Publican/DocBook box, figure and example titles
        if (el.tag in _HTML_DROP_TAGS or classes & _HTML_DROP_CLASSES or el.get("id") in _HTML_DROP_IDS
                or (el.tag == "div" and any(c.startswith("highlight") for c in classes))
                or el.get("itemprop") == "keywords" or title):
            if el.tag in _INLINE_TAGS:
                el.drop_tree()  # keeps its tail text
            else:  # a block (code, a table, a figure, navigation): keep it as a section boundary, without text
                tail = el.tail
                el.clear()
                el.tag, el.tail = "hr", tail
    roots = doc.xpath(root_xpath) if root_xpath else [doc]
    for root in roots:
        for el in root.iter():
            if not isinstance(el.tag, str):
                continue
            if el.tag == "hr":
                yield None
            elif el.tag in _HEADINGS:
                yield from _heading(el.text_content())
            elif _is_block(el):
                yield _own_text(el)
        yield None


_MAL = "{http://projectmallard.org/1.0/}"
_MAL_DROP = {"info", "code", "screen", "media", "table", "comment", "links", "synopsis", "example", "figure",
             "tree", "listing", "quote", "title", "subtitle"}
_MAL_INLINE_KEEP = {"code"}  # inline code keeps its text; a code block is dropped
_MAL_BLOCKS = {"p", "desc"}


def _mallard_text(el) -> str:
    local = el.tag.removeprefix(_MAL) if isinstance(el.tag, str) else ""
    if not isinstance(el.tag, str) or (local in _MAL_DROP and local not in _MAL_INLINE_KEEP):
        return ""
    if local == "keyseq":
        return "+".join(" ".join(_mallard_text(k).split()) for k in el if isinstance(k.tag, str))
    if local == "guiseq":
        return " > ".join(" ".join(_mallard_text(k).split()) for k in el if isinstance(k.tag, str))
    parts = [el.text or ""]
    for child in el:
        parts.append(_mallard_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


def _mallard_blocks(data: bytes) -> Iterator[str | None]:
    from lxml import etree

    root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True, recover=True))
    if root is None or not root.tag.startswith(_MAL):
        return

    def walk(el) -> Iterator[str | None]:
        for child in el:
            if not isinstance(child.tag, str):
                continue
            local = child.tag.removeprefix(_MAL)
            if local == "title":
                yield from _heading(_mallard_text_of_title(child))
            elif local in _MAL_DROP:
                yield None
            elif local in _MAL_BLOCKS:
                yield _mallard_text(child)
            elif local == "section":
                yield None
                yield from walk(child)
                yield None
            else:
                yield from walk(child)

    yield from walk(root)
    yield None


def _mallard_text_of_title(el) -> str:
    parts = [el.text or ""]
    for child in el:
        parts.append(_mallard_text(child))
        parts.append(child.tail or "")
    return "".join(parts)


# --------------------------------------------------------------------------------------------------
# sources: package -> passages, cached


def _cached(name: str, package: str, build: Callable[[Path], list[str]]) -> list[str]:
    deb = _deb(package)
    path = CACHE / "benign-text" / f"{name}-{_deb_version(deb).replace(':', '_')}-v{CLEANING_VERSION}.json.gz"
    if path.exists():
        return json.loads(gzip.decompress(path.read_bytes()))
    passages = _dedupe(build(deb))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(gzip.compress(json.dumps(passages, ensure_ascii=False).encode(), 6))
    tmp.replace(path)
    return passages


def _html_source(deb: Path, wanted: Callable[[str], bool], lang: str, root_xpath: str | None = None) -> list[str]:
    out: list[str] = []
    for _, data in _members(deb, wanted):
        out += _passages(_html_blocks(data, root_xpath), lang)
    return out


def _mallard_source(deb: Path, wanted: Callable[[str], bool], lang: str) -> list[str]:
    out: list[str] = []
    for _, data in _members(deb, wanted):
        out += _passages(_mallard_blocks(data), lang)
    return out


def libreoffice_help(lang: str) -> list[str]:
    """LibreOffice 7.4 help pages (en-US or nl), without the menu-path pages ("00") and the macro reference."""
    code = {"en": "en-US", "nl": "nl"}[lang]
    prefix = f"usr/share/libreoffice/help/{code}/text/"

    def wanted(name: str) -> bool:
        if not (name.startswith(prefix) and name.endswith(".html")):
            return False
        rest = name[len(prefix):].split("/")
        return rest[0] != "sbasic" and "00" not in rest[1:-1]

    package = f"libreoffice-help-{code.lower()}"
    return _cached(f"libreoffice-help-{lang}", package,
                   lambda deb: _html_source(deb, wanted, lang, "//div[@id='DisplayArea']"))


def python_howtos() -> list[str]:
    """The Python 3.11 tutorial, HOWTOs, FAQ and the using/installing/distributing/extending guides."""
    parts = ("tutorial", "howto", "faq", "using", "installing", "distributing", "extending")
    prefix = "usr/share/doc/python3.11/html/"

    def wanted(name: str) -> bool:
        return name.startswith(prefix) and name.endswith(".html") and name[len(prefix):].split("/")[0] in parts

    return _cached("python3.11-doc", "python3.11-doc",
                   lambda deb: _html_source(deb, wanted, "en", "//div[@role='main'] | //div[@class='body']"))


def debian_reference() -> list[str]:
    """The Debian Reference (Osamu Aoki), English, all chapters."""
    def wanted(name: str) -> bool:
        return re.fullmatch(r"usr/share/debian-reference/(ch\d+|pr\d+|ap\w+)\.en\.html", name) is not None

    return _cached("debian-reference-en", "debian-reference-en", lambda deb: _html_source(deb, wanted, "en"))


def gnome_help(lang: str) -> list[str]:
    """GNOME 43 desktop help (Mallard), C (English, with the system administrator guide) or nl."""
    code = {"en": "C", "nl": "nl"}[lang]
    prefix = f"usr/share/help/{code}/"

    def wanted(name: str) -> bool:
        return name.startswith(prefix) and name.endswith(".page")

    return _cached(f"gnome-user-docs-{lang}", "gnome-user-docs", lambda deb: _mallard_source(deb, wanted, lang))


def debian_handbook(lang: str) -> list[str]:
    """The Debian Administrator's Handbook (bullseye), en-US or nl-NL (whose untranslated paragraphs are dropped)."""
    code = {"en": "en-US", "nl": "nl-NL"}[lang]
    prefix = f"usr/share/doc/debian-handbook/html/{code}/"

    def wanted(name: str) -> bool:
        return name.startswith(prefix) and name.endswith(".html") and "/" not in name[len(prefix):] \
            and not name.endswith(("index.html", "ix01.html"))

    return _cached(f"debian-handbook-{lang}", "debian-handbook", lambda deb: _html_source(deb, wanted, lang))


def debian_faq(lang: str) -> list[str]:
    """The Debian GNU/Linux FAQ, English (debian-faq) or Dutch (debian-faq-nl), all chapters."""
    pattern = {"en": r"usr/share/doc/debian/FAQ/(?!index)[a-z-]+\.en\.html",
               "nl": r"usr/share/doc/debian/FAQ/nl/(?!index)[a-z-]+\.nl\.html"}[lang]
    package = {"en": "debian-faq", "nl": "debian-faq-nl"}[lang]
    return _cached(package, package,
                   lambda deb: _html_source(deb, lambda n: re.fullmatch(pattern, n) is not None, lang))


def debian_edu_manual(lang: str) -> list[str]:
    """The Debian Edu (Skolelinux) bookworm manual, a school network's handbook, en or nl."""
    name = f"usr/share/doc/debian-edu-doc-{lang}/debian-edu-bookworm-manual.html"
    return _cached(f"debian-edu-doc-{lang}", f"debian-edu-doc-{lang}",
                   lambda deb: _html_source(deb, lambda n: n == name, lang))


def gimp_help(lang: str) -> list[str]:
    """The GIMP 2.10 user manual, en or nl (whose untranslated English paragraphs are dropped)."""
    prefix = f"usr/share/gimp/2.0/help/{lang}/"

    def wanted(name: str) -> bool:
        page = name[len(prefix):]
        return name.startswith(prefix) and name.endswith(".html") and "/" not in page \
            and not page.startswith(("gfdl", "legal", "bibliography"))  # the licence text, the references

    return _cached(f"gimp-help-{lang}", f"gimp-help-{lang}", lambda deb: _html_source(deb, wanted, lang))


def _dictd_source(deb: Path, dictionary: str) -> list[str]:
    """Each entry of a dictd dictionary (`dictionary`.dict.dz: FOLDOC's format) as passages."""
    out: list[str] = []
    for _, data in _members(deb, lambda n: n.endswith(f"{dictionary}.dict.dz")):
        for paragraphs in _foldoc_entries(data.decode("utf-8", "replace")):
            out += _passages(paragraphs, "en")
    return out


def foldoc() -> list[str]:
    """FOLDOC entries (dictd format): each entry's paragraphs, cross-reference braces and edit dates removed."""
    return _cached("dict-foldoc", "dict-foldoc", lambda deb: _dictd_source(deb, "foldoc"))


def _foldoc_entries(text: str) -> Iterator[list[str | None]]:
    """Each FOLDOC entry as its paragraphs: an entry is headword lines (at column 0) then indented paragraphs."""
    headword, paragraphs, current = "", [], []

    def entry() -> list[str | None]:
        if current:
            paragraphs.append(_foldoc_clean(" ".join(current)))
            current.clear()
        skip = headword.startswith(("00-", "Free On-line Dictionary")) or "Documentation License" in headword
        return [] if skip else [*paragraphs, None]  # (the dictionary's own notice; the GFDL's full text)

    for line in text.splitlines():
        if line and not line[0].isspace():
            if paragraphs or current:
                yield entry()
                headword = ""
                paragraphs = []
            headword += line
        elif line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(_foldoc_clean(" ".join(current)))
            current = []
    yield entry()


def _foldoc_clean(text: str) -> str:
    text = re.sub(r"\{([^{}|]*)\|?[^{}]*\}", r"\1", text)  # {term} and {term|target} cross-references
    text = re.sub(r"\s*\(\d{4}-\d{2}-\d{2}\)\s*$", "", text)  # the edit date that ends an entry
    text = re.sub(r"\s*<[^<>\s]+@[^<>\s]+>", "", text)  # authors' e-mail addresses
    text = re.sub(r"\s*\[[^\]]*\?\]", "", text)  # editorial questions: "[Details? Dates?]"
    text = re.sub(r"^(?:\d+\.\s*)?(?:<[^>]+>\s*)?(?:/[^/]+/\s*)?", "", text)  # sense number, <subject>, /pronunciation/
    return "" if text.startswith("[") else text  # a bibliographic reference


def git_docs() -> list[str]:
    """Git's documentation (git-doc): the user manual, the guides, the how-tos and every command's manual page."""
    prefix = "usr/share/doc/git-doc/"
    return _cached("git-doc", "git-doc", lambda deb: _html_source(
        deb, lambda n: n.startswith(prefix) and n.endswith(".html") and "/RelNotes" not in n, "en"))


def installation_guide(lang: str) -> list[str]:
    """The Debian 12 installation guide for amd64, en or nl."""
    prefix = f"usr/share/doc/installation-guide-amd64/{lang}/"
    return _cached(f"installation-guide-{lang}", "installation-guide-amd64",
                   lambda deb: _html_source(deb, lambda n: n.startswith(prefix) and n.endswith(".html"), lang))


def jargon() -> list[str]:
    """The Jargon File (dict-jargon, dictd format as FOLDOC's): each entry's paragraphs."""
    return _cached("dict-jargon", "dict-jargon", lambda deb: _dictd_source(deb, "jargon"))


def gnucash_docs() -> list[str]:
    """GnuCash 4.13's Tutorial and Concepts Guide and its Help manual, English: a bookkeeping program's how-to
    prose (held out: never trained or tuned on)."""
    def wanted(name: str) -> bool:
        return re.match(r"usr/share/doc/gnucash-docs/gnucash-(?:guide|help)-en/[^/]+\.html$", name) is not None

    return _cached("gnucash-docs-en", "gnucash-docs", lambda deb: _html_source(deb, wanted, "en"))


# --------------------------------------------------------------------------------------------------
# the corpora


def english_instructional_train() -> list[str]:
    """English help and how-to prose for training: LibreOffice and GIMP help, Python's HOWTOs/tutorial/FAQ, the
    Debian Reference."""
    return _dedupe(libreoffice_help("en") + gimp_help("en") + python_howtos() + debian_reference())


def english_instructional_heldout() -> list[str]:
    """English help prose held out from training: GNOME help, the Debian Handbook, the Debian Edu manual and the
    Debian FAQ."""
    return _dedupe(gnome_help("en") + debian_handbook("en") + debian_edu_manual("en") + debian_faq("en"))


def dutch_instructional_train() -> list[str]:
    """Dutch help prose for training: LibreOffice help and the GIMP manual (nl)."""
    return _dedupe(libreoffice_help("nl") + gimp_help("nl"))


def dutch_instructional_heldout() -> list[str]:
    """Dutch help prose held out from training: GNOME help (nl), the Debian Handbook (nl-NL), the Debian Edu
    manual (nl) and the Debian FAQ (nl)."""
    return _dedupe(gnome_help("nl") + debian_handbook("nl") + debian_edu_manual("nl") + debian_faq("nl"))


def english_encyclopaedic() -> list[str]:
    """English encyclopaedic prose: FOLDOC's entries (computing terms, languages, people, organisations)."""
    return foldoc()


__all__ = ["english_instructional_train", "english_instructional_heldout", "dutch_instructional_train",
           "dutch_instructional_heldout", "english_encyclopaedic"]


if __name__ == "__main__":  # python -m bench.benign_sources: counts and a sample of each corpus
    import random
    import sys
    import time

    for fn in (english_instructional_train, english_instructional_heldout, dutch_instructional_train,
               dutch_instructional_heldout, english_encyclopaedic):
        start = time.perf_counter()
        passages = fn()
        print(f"{fn.__name__}: {len(passages):,} passages in {time.perf_counter() - start:.1f} s")
        for p in random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 0).sample(passages, 3):
            print("   ", p[:300])
