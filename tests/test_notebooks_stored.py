"""The shipped notebooks are what notebooks/make_notebooks.py writes, and they carry the outputs and
inline figures the docs render (mkdocs-jupyter with execute: false; tests/test_notebooks.py executes
them again)."""
import importlib.util
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("make_notebooks", ROOT / "notebooks" / "make_notebooks.py")
make_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_notebooks)


def test_every_generated_notebook_is_shipped_and_in_the_docs_nav():
    shipped = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert shipped == set(make_notebooks.NOTEBOOKS)
    nav = (ROOT / "mkdocs.yml").read_text()
    assert all(f"notebooks/{name}" in nav for name in shipped)
    assert (ROOT / "docs" / "notebooks" / "00_getting_started.ipynb").exists()  # docs/notebooks -> ../notebooks


@pytest.mark.parametrize("name", sorted(make_notebooks.NOTEBOOKS))
def test_shipped_notebook_matches_its_generator_and_carries_figures(name):
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    expected = [("markdown" if kind == "md" else "code", src) for kind, src in make_notebooks.NOTEBOOKS[name]]
    assert [(c.cell_type, c.source) for c in nb.cells] == expected, "re-run make_notebooks.py --execute"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "re-run make_notebooks.py --execute"
    outputs = [o for c in code for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs), "no inline figure"


def test_the_strict_docs_build_renders_every_notebook_with_its_figures(tmp_path):
    pytest.importorskip("mkdocs_jupyter")  # the docs extra
    import os
    import subprocess
    import sys

    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in make_notebooks.NOTEBOOKS:
        page = (tmp_path / "notebooks" / name.removesuffix(".ipynb") / "index.html").read_text()
        stored = nbformat.read(ROOT / "notebooks" / name, as_version=4)
        figures = sum("image/png" in o.get("data", {})
                      for c in stored.cells if c.cell_type == "code" for o in c.outputs)
        assert page.count('src="data:image/png') == figures, name
    assert (tmp_path / "img" / "demo.png").exists()
