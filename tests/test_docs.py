"""The docs cover the public surface and their links resolve inside the repository."""
import inspect
import pathlib
import re

import jaxprox as jp

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _documented_modules():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "hooks.py")
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = hooks.expand((ROOT / "docs" / "api.md").read_text())  # as the docs build renders it
    return set(re.findall(r"^::: ([\w.]+)", page, flags=re.M))


def test_every_public_name_is_in_the_api_reference():
    mods = _documented_modules()
    missing = [n for n in jp.__all__ if getattr(jp, n).__module__ not in mods]
    assert not missing, missing
    for module in (jp.losses, jp.penalties, jp.constraints, jp.projections, jp.schedules, jp.restarts,
                   jp.baselines):
        for name, obj in vars(module).items():
            if name.startswith("_") or not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if obj.__module__.startswith("jaxprox"):
                assert obj.__module__ in mods, (module.__name__, name, obj.__module__)


def test_every_public_solver_has_a_docstring_with_its_paper_or_method():
    for cls in jp.capabilities.public_solvers():
        doc = inspect.getdoc(cls) or ""
        assert len(doc) > 80, cls.__name__
        assert "paper 00" not in doc, cls.__name__


def test_links_resolve_inside_the_repository():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    bad = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+://", target):
                continue
            if not (page.parent / target).exists():
                bad.append((page.relative_to(ROOT), target))
    assert not bad, bad
