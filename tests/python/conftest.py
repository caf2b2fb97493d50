"""conftest.py — fixtures of the Python binding's tests: the golden vectors' folder and a real
ringkeeperd (rkserver.py; RINGKEEPERD names the binary)."""
import os
import tempfile

import pytest

from rkserver import Server

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def server():
    with tempfile.TemporaryDirectory(prefix="rk-py-") as tmp:
        s = Server(os.environ["RINGKEEPERD"], tmp)
        try:
            yield s
        finally:
            s.stop()


@pytest.fixture
def vectors():
    return os.environ.get("RK_VECTORS_DIR", os.path.join(HERE, "..", "vectors"))
