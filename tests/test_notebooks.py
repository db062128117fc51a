"""Every notebook in notebooks/ executes without error in fast mode (JAXPROX_FAST=1)."""
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("JAXPROX_FAST", "1")
    # the kernel compiles at XLA's default level (conftest sets level 0 for the suite's own process):
    # the notebooks run long enough that level 0's slower code costs more than its faster compile
    # (05_drsvm: 22 s at the default level, 38 s at level 0)
    flags = os.environ.get("XLA_FLAGS", "").replace("--xla_backend_optimization_level=0", "").strip()
    monkeypatch.setenv("XLA_FLAGS", flags)
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
