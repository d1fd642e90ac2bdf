import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
os.environ.setdefault("TORCHXPLAIN_PROGRESS", "0")


@pytest.fixture(scope="session")
def child():
    """The Child chain classifier (built once per session: variable elimination takes seconds)."""
    pytest.importorskip("pgmpy")
    from torchxplain.idx import datasets

    return datasets.child()
