"""The README and the documentation site: short README, links that resolve, no undocumented rendered object.

``make docs`` (``mkdocs build --strict``, run by CI) checks the site's own
links and pages; these tests check what it does not: the README's length
and relative links (GitHub renders them, MkDocs never sees the README), and
that the hook behind the "missing docstring" failure finds one.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

#: Markdown links and images: ``[text](target)`` / ``![alt](target)``.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_links(text: str) -> list:
    """The targets of ``text``'s Markdown links that are paths in the repository (no URL, no bare anchor)."""
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def broken_links(md: Path) -> list:
    """Relative link targets of ``md`` that name no existing file (the ``#anchor`` part ignored)."""
    return [t for t in relative_links(md.read_text()) if not (md.parent / t.split("#")[0]).exists()]


def test_readme_is_at_most_200_lines():
    assert len(README.read_text().splitlines()) <= 200


def test_every_relative_link_of_the_readme_resolves():
    links = relative_links(README.read_text())
    assert len(links) >= 5  # the five next steps at least, into docs/
    assert broken_links(README) == []


def test_link_check_sees_a_broken_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# a\n")
    md = tmp_path / "README.md"
    md.write_text("[ok](docs/a.md#top) [web](https://x.org/y.md) [gone](docs/b.md) ![img](docs/img/x.png) [here](#h)\n")
    assert relative_links(md.read_text()) == ["docs/a.md#top", "docs/b.md", "docs/img/x.png"]
    assert broken_links(md) == ["docs/b.md", "docs/img/x.png"]


def test_every_page_of_the_nav_exists():
    nav = re.findall(r":\s+([\w./-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(), re.M)
    assert len(nav) >= 20
    assert [p for p in nav if not (REPO / "docs" / p).exists()] == []


@pytest.fixture()
def hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "scripts" / "docs_hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_docs_hook_finds_each_missing_docstring(hooks, tmp_path, monkeypatch):
    (tmp_path / "toypkg").mkdir()
    (tmp_path / "toypkg" / "__init__.py").write_text('"""Toy."""\n')
    (tmp_path / "toypkg" / "mod.py").write_text(
        '"""Module."""\n'
        "import os\n"
        "def documented():\n    '''Yes.'''\n"
        "def bare():\n    pass\n"
        "def _private():\n    pass\n"
        "class Thing:\n    '''A thing.'''\n"
        "    def ok(self):\n        '''Fine.'''\n"
        "    def silent(self):\n        pass\n"
        "    @property\n    def size(self):\n        return 1\n"
        "    def _hook(self):\n        pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert hooks.missing_docstrings("toypkg.mod") == ["toypkg.mod.bare"]
        assert hooks.missing_docstrings("toypkg.mod.Thing") == ["toypkg.mod.Thing.silent", "toypkg.mod.Thing.size"]
        assert hooks.missing_docstrings("toypkg.mod.Thing", ["ok", "_hook"]) == ["toypkg.mod.Thing._hook"]
        assert hooks.missing_docstrings("toypkg.mod.documented") == []
        with pytest.raises(AttributeError):
            hooks.missing_docstrings("toypkg.mod.nothing")
    finally:
        for name in ("toypkg", "toypkg.mod"):
            sys.modules.pop(name, None)


def test_the_docs_hook_warns_per_block(hooks, tmp_path, monkeypatch, caplog):
    (tmp_path / "toy2.py").write_text('"""Module."""\ndef bare():\n    pass\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    page = type("Page", (), {"file": type("File", (), {"src_path": "ref.md"})()})()
    md = "# Ref\n\n::: toy2.bare\n\n::: toy2.missing\n    options:\n      members: [a]\n"
    try:
        with caplog.at_level("WARNING", logger="mkdocs.plugins.docstrings"):
            assert hooks.on_page_markdown(md, page, None, None) == md
    finally:
        sys.modules.pop("toy2", None)
    assert [r.getMessage() for r in caplog.records] == [
        "ref.md: toy2.bare has no docstring",
        "ref.md: '::: toy2.missing' does not resolve: module 'toy2' has no attribute 'missing'",
    ]


def test_the_rendered_api_has_every_docstring(hooks, caplog):
    blocks = []
    with caplog.at_level("WARNING", logger="mkdocs.plugins.docstrings"):
        for path in sorted((REPO / "docs").rglob("*.md")):
            text = path.read_text()
            blocks += re.findall(r"^:::\s+([\w.]+)", text, re.M)
            page = type("Page", (), {"file": type("File", (), {"src_path": str(path)})()})()
            hooks.on_page_markdown(text, page, None, None)
    assert {"baselines.Adapter._plan", "joker.estimators.JokerRegressor", "reports.cli.build_report"} <= set(blocks)
    assert [r.getMessage() for r in caplog.records] == []


def test_the_docs_hook_drops_sphinx_roles(hooks):
    html = "<p>See :meth:<code>fit</code> and :py:class:<code>a.B</code>; ratio 2:1, a:b <code>x</code>.</p>"
    assert hooks.strip_roles(html) == "<p>See <code>fit</code> and <code>a.B</code>; ratio 2:1, a:b <code>x</code>.</p>"


TOY3 = '''"""Module."""
def f():
    """Minimises sum_i loss(y_i, <theta, phi(x_i)>).

    Safe: ``<theta, x>``, `<a>`, a < b.
    """
'''


def test_the_docs_hook_finds_text_read_as_html(hooks, tmp_path, monkeypatch):
    (tmp_path / "toy3.py").write_text(TOY3)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert hooks.html_like_text("toy3.f") == [("toy3.f", "Minimises sum_i loss(y_i, <theta, phi(x_i)>).")]
    finally:
        sys.modules.pop("toy3", None)


TOY4 = '''"""Module."""
def f(task, kernel="laplacian"):
    """F.

    Parameters
    ----------
    task : {"regression", "binary"}
        Required.
    kernel : {"gaussian", "laplacian"}
        Defaults to the second.
    """
'''


def test_the_griffe_extension_takes_defaults_from_the_signature(tmp_path):
    griffe = pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("docs_griffe", REPO / "scripts" / "docs_griffe.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    (tmp_path / "toy4.py").write_text(TOY4)

    def defaults(extensions):
        loader = griffe.GriffeLoader(search_paths=[str(tmp_path)], docstring_parser="numpy", extensions=extensions)
        sections = loader.load("toy4")["f"].docstring.parsed
        return {p.name: p.default for s in sections if s.kind.value == "parameters" for p in s.value}

    # numpydoc's rule, griffe's reading: the first choice is the default
    assert defaults(griffe.load_extensions()) == {"task": '"regression"', "kernel": '"gaussian"'}
    fixed = defaults(griffe.load_extensions(mod.SignatureDefaults()))
    assert fixed["task"] is None and str(fixed["kernel"]) == "'laplacian'"
