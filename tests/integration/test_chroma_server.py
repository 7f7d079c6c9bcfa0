"""CHROMA_URL: the same adapter against a real Chroma server (`chroma run`), tenant-scoped as ever."""

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from r42_app.services.adapters.vector_store import VectorStore
from tests.conftest import free_port


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory):
    binary = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    proc = subprocess.Popen([binary, "run", "--path", str(tmp_path_factory.mktemp("chroma-server")), "--host",
                             "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("chroma run did not start")
    yield url
    proc.terminate()
    proc.wait(10)


def unit(seed):
    v = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return v / np.linalg.norm(v)


def test_http_client_writes_and_reads_per_tenant(chroma_url):
    store = VectorStore(url=chroma_url, model_id="test")
    store.write("tenant-a", [("aow#p-1", "aow", unit(1))])
    store.write("tenant-b", [("aow#p-1", "aow", unit(2))])
    got = store.vectors("tenant-a")
    assert got.keys == ["aow#p-1"] and got.slugs == ["aow"] and np.allclose(got.vectors[0], unit(1), atol=1e-6)
    assert store.keys("tenant-b") == {"aow#p-1": "aow"}
    store.delete_topics("tenant-a", ["aow"])
    assert store.count("tenant-a") == 0 and store.count("tenant-b") == 1
