"""mkdocs hook: a line ``--8<-- "FILE"`` in a page is replaced by FILE's text (a path from the
repository root), so the home page is the README itself, not a copy. The README's links are
relative to the repository root: ``docs/...`` becomes a link inside the site, and a link to any
other file of the repository (a results file, a script) becomes its path, in code."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def for_site(text: str) -> str:
    text = re.sub(r"\]\(docs/", "](", text)
    return re.sub(r"(?<!!)\[[^\]]*\]\(((?![a-z]+://)[^)#\s]+)\)",
                  lambda m: m.group(0) if (ROOT / "docs" / m.group(1)).exists() else f"`{m.group(1)}`", text)


def on_page_markdown(markdown, page, config, files):
    return re.sub(r'^--8<-- "([^"]+)"[ \t]*$', lambda m: for_site((ROOT / m.group(1)).read_text()), markdown,
                  flags=re.M)
