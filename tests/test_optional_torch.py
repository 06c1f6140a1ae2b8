"""Papers that do not declare the ``torch`` extra must import without PyTorch installed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from icml25.harness.registry import catalogue

WITHOUT_TORCH = [e.declared["module"] for e in catalogue().values() if e.implemented and "torch" not in e.extras]

BLOCK_TORCH = """
import importlib, sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked for this test")

sys.meta_path.insert(0, NoTorch())
importlib.import_module({!r})
"""


@pytest.mark.parametrize("module", WITHOUT_TORCH)
def test_imports_without_torch(module):
    done = subprocess.run([sys.executable, "-c", BLOCK_TORCH.format(module)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1]
