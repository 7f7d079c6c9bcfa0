"""`pip install ARGS` into the venv whose Python runs this, faster on a machine that did it before (the Makefile's
`make setup` and `make check`): `python make/pyinstall.py CACHE UV_VERSION USE_UV [--editable] -- ARGS...`.

- uv (UV_VERSION, a wheel from PyPI, installed once into CACHE/uv-VERSION-MACHINE) installs ARGS when USE_UV is 1
  and it can be had; pip does otherwise, or when uv fails. pip keeps no cache on these machines (the registry's
  answers carry no caching headers), so every clone downloaded ~650 MB again; uv keeps what it downloads in
  CACHE/uv (a wheel is reused for the same file name from the same index: a released file on PyPI never changes)
  and copies the files into the venv (UV_LINK_MODE=copy: with `hardlink` a write into the venv would change the
  cache). uv reads the indexes of this machine's pip configuration (`pip config list`: its files and PIP_*
  variables; a setting this does not translate means pip) and resolves like pip (--index-strategy
  unsafe-best-match): the same `pip freeze` (checked).
- Bytecode, as pip compiles it at install: the sessions here run with PYTHONDONTWRITEBYTECODE=1 (CI may too), so a
  module left without it would be compiled again by every process that imports it (twice the import time).
  Compiling site-packages takes ~65 CPU-seconds, so the compiled files are kept too, in CACHE/bytecode/KEY.tar
  (KEY: the Python version and every installed distribution's name and version). They are hash-checked .pyc
  files (PEP 552): Python compares the hash of the source that each records with the source beside it at every
  import, so a kept file is never used for a source that differs, whatever the key. After the install every .py in
  site-packages is checked the same way (~1 s), the ones without a valid .pyc are taken from KEY.tar or compiled,
  and the ones compiled are added to KEY.tar.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

# settings of pip's that change nothing uv installs
NO_EFFECT = {"default-timeout", "timeout", "retries", "disable-pip-version-check", "progress-bar", "no-input",
             "no-color", "quiet", "verbose", "cache-dir", "no-cache-dir", "root-user-action"}
FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint", "trusted-host": "--allow-insecure-host"}


def pip(*argv: str, quiet: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *argv], check=False, capture_output=quiet, text=True)


def pip_config() -> dict[str, str]:
    """This machine's pip settings as pip applies them: PIP_* variables over [install] over [global]."""
    rank = {"global": 0, "install": 1, ":env:": 2}
    listed = pip("config", "list").stdout.splitlines()
    config = {}
    for line in sorted(listed, key=lambda line: rank.get(line.partition(".")[0], -1)):
        key, _, value = line.partition("=")
        section, _, name = key.partition(".")
        if section in rank:
            config[name.replace("_", "-")] = ast.literal_eval(value)
    return config


def uv_command(cache: Path, version: str) -> tuple[list[str], dict[str, str]] | None:
    """`uv pip install` reading pip's indexes, and its environment; None: install with pip."""
    options = ["--no-config", "--index-strategy", "unsafe-best-match"]
    env = dict(os.environ, UV_CACHE_DIR=str(cache / "uv"))
    env.setdefault("UV_LINK_MODE", "copy")
    for name, value in pip_config().items():
        if name in FLAGS:
            options += [part for item in value.split() for part in (FLAGS[name], item)]
        elif name == "no-index":
            options += ["--no-index"] if value.lower() in ("1", "true", "yes", "on") else []
        elif name == "cert":
            env["SSL_CERT_FILE"] = value
        elif name not in NO_EFFECT:
            print(f"pip's setting {name!r} has no uv equivalent here: installing with pip")
            return None
    home = cache / f"uv-{version}-{os.uname().machine}"
    uv = home / "bin" / "uv"
    if not os.access(uv, os.X_OK):
        print(f"installing uv {version} into {home} (once per machine)")
        cache.mkdir(parents=True, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".uv-", dir=cache)
        got = pip("install", "-q", "--no-deps", "--only-binary", ":all:", "--target", tmp, f"uv=={version}")
        if got.returncode == 0:
            try:
                os.rename(tmp, home)  # atomic; fails when another clone put it there first
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.access(uv, os.X_OK):
            print(f"uv {version} could not be installed: installing with pip")
            return None
    return [str(uv), "pip", "install", "-q", "--python", sys.executable, *options], env


# --- bytecode ---------------------------------------------------------------------------------------------------

def has_valid_pyc(source: Path) -> bool:
    """Whether the .pyc the interpreter would read for `source` is one it would use (importlib's own checks)."""
    try:
        with open(importlib.util.cache_from_source(str(source)), "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") & 1:  # hash-based
        return head[8:16] == importlib.util.source_hash(source.read_bytes())
    st = source.stat()
    return head[8:16] == (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") + \
        (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")


def _compile(sources: list[str]) -> None:
    import py_compile
    import warnings

    warnings.filterwarnings("ignore")
    for source in sources:
        try:  # as pip: a file that does not compile (vendored Python 2, templates) is left without bytecode
            py_compile.compile(source, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
        except Exception:
            pass


def installed() -> tuple[str, set[Path]]:
    """The bytecode's key (the Python version and every distribution installed but the editable ones), and the
    files of the editable ones (this tree's own finder: not kept, as it names the tree)."""
    dists, editable = [], set()
    for dist in importlib.metadata.distributions():
        if json.loads(dist.read_text("direct_url.json") or "{}").get("dir_info", {}).get("editable"):
            editable |= {Path(str(dist.locate_file(f))) for f in dist.files or []}
        else:
            dists.append(f"{dist.metadata['Name']}=={dist.version}")
    text = "\n".join([sys.version, importlib.util.MAGIC_NUMBER.hex(), *sorted(dists)])
    return hashlib.sha256(text.encode()).hexdigest()[:24], editable


def ensure_bytecode(cache: Path) -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    key, editable = installed()
    archive, skip_list = cache / "bytecode" / f"{key}.tar", cache / "bytecode" / f"{key}.skip"
    skip = set(skip_list.read_text().splitlines()) if skip_list.exists() else set()  # sources that do not compile
    missing = [p for p in site.rglob("*.py") if "__pycache__" not in p.parts and p not in editable
               and str(p.relative_to(site)) not in skip and not has_valid_pyc(p)]
    if missing and archive.exists():
        subprocess.run(["tar", "-xf", str(archive), "-C", str(site)], check=True)
        archive.touch()
        missing = [p for p in missing if not has_valid_pyc(p)]
    if not missing:
        return
    print(f"compiling {len(missing):,} Python files to bytecode")
    chunks = [[str(p) for p in missing[i::64]] for i in range(64)]
    with ProcessPoolExecutor(os.cpu_count()) as pool:
        list(pool.map(_compile, chunks))
    compiled = {str(p.relative_to(site)): has_valid_pyc(p) for p in missing}
    archive.parent.mkdir(parents=True, exist_ok=True)
    if not all(compiled.values()):
        write_atomically(skip_list, lambda tmp: Path(tmp).write_text(
            "".join(f"{name}\n" for name in sorted(skip | {n for n, ok in compiled.items() if not ok}))))
    kept = set(subprocess.run(["tar", "-tf", str(archive)], capture_output=True, text=True, check=True)
               .stdout.splitlines()) if archive.exists() else set()
    new = [pyc for pyc in (os.path.relpath(importlib.util.cache_from_source(str(site / n)), site)
                           for n, ok in compiled.items() if ok) if pyc not in kept]
    if new:
        def append(tmp: str) -> None:
            if archive.exists():
                shutil.copyfile(archive, tmp)
            subprocess.run(["tar", "-rf", tmp, "-C", str(site), "--verbatim-files-from", "-T", "-"],
                           input="".join(f"{pyc}\n" for pyc in new), text=True, check=True)
        write_atomically(archive, append)


def write_atomically(path: Path, write) -> None:
    """`write(tmp)` then rename tmp to path: another clone reads the old file or the new one, never half of one."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    cache, version, use_uv = Path(argv[0]), argv[1], argv[2] == "1"
    rest = argv[3:]
    editable = "--editable" in rest[:rest.index("--")]
    args = rest[rest.index("--") + 1:]
    command = uv_command(cache, version) if use_uv else None
    if command and subprocess.run(command[0] + args, check=False, env=command[1]).returncode == 0:
        if editable:  # only this tree's finder to compile, and never to keep: it names the tree
            _compile([str(p) for p in installed()[1] if p.suffix == ".py" and p.exists()])
        else:
            ensure_bytecode(cache)
        return 0
    if command:
        print("uv could not install it: installing with pip")
    return pip("install", "-q", *args, quiet=False).returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
