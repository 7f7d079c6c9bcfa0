"""One `r42 serve` per build folder: a second server on the same `.web` refuses, naming the first and the way out."""

import subprocess
import sys

import pytest

from r42_app.services.runtime.web_lock import WebDirLock


def test_a_second_server_on_one_build_folder_refuses_and_says_how_to_run_both(tmp_path):
    first = WebDirLock(3000, tmp_path / ".web").acquire()
    with pytest.raises(RuntimeError) as refused:
        WebDirLock(3100, tmp_path / ".web").acquire()
    assert "port 3000" in str(refused.value) and "REFLEX_WEB_WORKDIR" in str(refused.value)
    other = WebDirLock(3100, tmp_path / "web-2").acquire()  # a folder of its own: fine
    first.release()
    WebDirLock(3100, tmp_path / ".web").acquire().release()  # free again once the first has stopped
    other.release()


def test_the_lock_goes_with_its_process(tmp_path):
    code = ("import sys; from pathlib import Path; from r42_app.services.runtime.web_lock import WebDirLock; "
            f"WebDirLock(3000, Path({str(tmp_path / '.web')!r})).acquire(); sys.exit(0)")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)  # exits without releasing
    WebDirLock(3100, tmp_path / ".web").acquire().release()
