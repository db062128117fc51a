"""mkdocs hook: a line ``--8<-- "FILE"`` in a page is replaced by FILE's text (a path from the
repository root), so the home page is the README itself, not a copy; a line ``::: package.*`` by
one ``::: package.module`` line per module of the package. The README's links are
relative to the repository root: ``docs/...`` becomes a link inside the site, and a link to any
other file of the repository (a results file, a script) becomes its path, in code."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def for_site(text: str) -> str:
    text = re.sub(r"\]\(docs/", "](", text)
    return re.sub(r"(?<!!)\[[^\]]*\]\(((?![a-z]+://)[^)#\s]+)\)",
                  lambda m: m.group(0) if (ROOT / "docs" / m.group(1)).exists() else f"`{m.group(1)}`", text)


def modules(pattern: str) -> str:
    """``::: package.*`` -> one ``::: package.module`` line per module of the package (so that a
    new solver file is documented without an edit of the page)."""
    package = pattern[:-2]
    folder = ROOT.joinpath(*package.split("."))
    names = sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    return "\n\n".join(f"::: {package}.{name}" for name in names)


def expand(markdown: str) -> str:
    """The page with its ``--8<--`` inclusions and ``::: package.*`` lines expanded."""
    markdown = re.sub(r'^--8<-- "([^"]+)"[ \t]*$', lambda m: for_site((ROOT / m.group(1)).read_text()), markdown,
                      flags=re.M)
    return re.sub(r"^::: ([\w.]+\.\*)[ \t]*$", lambda m: modules(m.group(1)), markdown, flags=re.M)


def on_page_markdown(markdown, page, config, files):
    return expand(markdown)
