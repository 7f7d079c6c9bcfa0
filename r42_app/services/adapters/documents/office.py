"""Office files (.docx, .pptx): the zip checked from its central directory before it is opened."""

from __future__ import annotations

import io
import zipfile

from r42_app.core.documents import DocumentRefused
from r42_app.services.adapters.documents.common import MB, _mismatch

MAX_UNZIPPED_MB = 200  # an Office file's entries together, as their central directory declares them
MAX_ZIP_ENTRIES = 5_000
MAX_RATIO = 200  # compression ratio of one entry, counted only for entries over RATIO_MIN_BYTES
RATIO_MIN_BYTES = 10 * MB
OFFICE_PARTS = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml"}
_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # a legacy .doc/.ppt, or an Office file with a password


def _open_office_zip(kind: str, data: bytes) -> zipfile.ZipFile:
    """The zip of a .docx/.pptx, after checking that it is one (of the right kind) and no zip bomb."""
    if data.startswith(_OLE_MAGIC):
        if "EncryptedPackage".encode("utf-16-le") in data[:2 * MB] or b"EncryptedPackage" in data[:2 * MB]:
            raise DocumentRefused("encrypted", "OLE container with an EncryptedPackage")
        raise _mismatch(kind, "a legacy binary Office file (.doc/.ppt)")
    if not data.startswith((b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")):
        raise _mismatch(kind, "not a zip")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, NotImplementedError) as e:
        raise DocumentRefused("corrupt", f"zip: {e}") from None
    if len(infos) > MAX_ZIP_ENTRIES:
        raise DocumentRefused("zip_bomb", f"{len(infos)} entries", maximum=MAX_UNZIPPED_MB)
    total = sum(i.file_size for i in infos)
    if total > MAX_UNZIPPED_MB * MB:
        raise DocumentRefused("zip_bomb", f"{total} bytes unzipped", maximum=MAX_UNZIPPED_MB)
    for i in infos:
        if i.file_size > RATIO_MIN_BYTES and i.file_size > MAX_RATIO * max(i.compress_size, 1):
            raise DocumentRefused("zip_bomb", f"{i.filename}: ratio {i.file_size / max(i.compress_size, 1):.0f}",
                                  maximum=MAX_UNZIPPED_MB)
    names = {i.filename for i in infos}
    if "[Content_Types].xml" not in names or OFFICE_PARTS[kind] not in names:
        raise _mismatch(kind, f"zip without [Content_Types].xml or {OFFICE_PARTS[kind]}")
    return zf
