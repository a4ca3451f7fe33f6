"""MkDocs hook of the documentation site (mkdocs.yml ``hooks``): no rendered public object without a docstring.

mkdocstrings renders an object without a docstring silently (its signature
only). This hook reads every ``::: identifier`` block of a page before it
is rendered, imports the object, and logs a warning (an error under
``mkdocs build --strict``, as ``make docs`` and CI run it) for the object
and for each public member it would render that has no docstring: the
functions and classes a module defines, the public methods and properties a
class defines, or the members the block lists under ``members:``. An
identifier that does not import is a warning too, and so is docstring text
that Markdown would read as an HTML tag (:func:`html_like_text`).

The docstrings cross-reference in Sphinx's roles (``:func:`x```,
``:class:`x```, ...), which mkdocstrings leaves as text: the rendered page
would show ``:func:`` before the name. :func:`on_page_content` drops the role
and keeps the name in code style.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re

log = logging.getLogger("mkdocs.plugins.docstrings")

_BLOCK = re.compile(r"^:::\s+([\w.]+)[ \t]*\n((?:[ \t]+.*\n?)*)", re.M)
_MEMBERS = re.compile(r"^\s+members:\s*\[([^\]]*)\]", re.M)
#: A Sphinx role left before a code span by the Markdown rendering of a docstring (``:meth:<code>fit</code>``).
_ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|attr|data|exc|obj|const|term|ref):(?=<code>)")


def resolve(identifier: str):
    """The object named by a dotted ``identifier`` (a module, or attributes below the longest importable module).

    Raises
    ------
    ImportError
        When no prefix of ``identifier`` imports.
    AttributeError
        When a name after the module is missing.
    """
    parts = identifier.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(f"no module in {identifier!r} imports")


def _public_members(obj) -> dict:
    """What mkdocstrings renders of ``obj`` by default (the public names it defines)."""
    if inspect.ismodule(obj):
        names = getattr(obj, "__all__", None) or [n for n in vars(obj) if not n.startswith("_")]
        return {n: getattr(obj, n) for n in names if hasattr(obj, n)
                and (inspect.isfunction(getattr(obj, n)) or inspect.isclass(getattr(obj, n)))
                and getattr(getattr(obj, n), "__module__", "").startswith(obj.__name__.split(".")[0])}
    if inspect.isclass(obj):
        return {n: v for n, v in vars(obj).items() if not n.startswith("_")
                and (inspect.isfunction(v) or isinstance(v, (property, classmethod, staticmethod)))}
    return {}


def _doc(obj) -> str:
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    return (getattr(obj, "__doc__", None) or "").strip()


def rendered_objects(identifier: str, members: list | None = None) -> dict:
    """``{dotted name: object}`` of ``identifier`` and the members its block renders.

    Raises
    ------
    ImportError, AttributeError
        When ``identifier`` or a listed member does not resolve.
    """
    obj = resolve(identifier)
    found = _public_members(obj) if members is None else {n: inspect.getattr_static(obj, n) for n in members}
    return {identifier: obj, **{f"{identifier}.{n}": m for n, m in found.items()}}


def missing_docstrings(identifier: str, members: list | None = None) -> list:
    """Dotted names of ``identifier`` and its rendered members that have no docstring."""
    return [name for name, obj in rendered_objects(identifier, members).items() if not _doc(obj)]


#: Text outside code spans that Markdown would read as an HTML tag (and drop from the page).
_TAG = re.compile(r"<[A-Za-z/!]")


def html_like_text(identifier: str, members: list | None = None) -> list:
    """``(name, line)`` of each docstring line of the rendered objects with ``<word`` outside a code span.

    Markdown passes such text through as an HTML tag, so the browser shows
    nothing of it (``loss(y, <theta, phi(x)>)`` renders as ``loss(y, )``);
    put the formula in double backquotes.
    """
    out = []
    for name, obj in rendered_objects(identifier, members).items():
        for line in _doc(obj).splitlines():
            if _TAG.search(re.sub(r"``[^`]*``|`[^`]*`", "", line)):
                out.append((name, line.strip()))
    return out


def on_page_markdown(markdown, page, config, files):
    """Warn, per ``::: identifier`` block of the page, for each object it renders without a docstring."""
    for match in _BLOCK.finditer(markdown):
        listed = _MEMBERS.search(match.group(2))
        members = [m.strip() for m in listed.group(1).split(",") if m.strip()] if listed else None
        try:
            missing = missing_docstrings(match.group(1), members)
        except (ImportError, AttributeError) as err:
            log.warning("%s: '::: %s' does not resolve: %s", page.file.src_path, match.group(1), err)
            continue
        for name in missing:
            log.warning("%s: %s has no docstring", page.file.src_path, name)
        for name, line in html_like_text(match.group(1), members):
            log.warning("%s: %s: '%s' would be read as an HTML tag (put it in ``...``)",
                        page.file.src_path, name, line)
    return markdown


def strip_roles(html: str) -> str:
    """``html`` without the Sphinx role prefixes of its code spans (``:meth:<code>fit</code>`` -> ``<code>fit</code>``)."""
    return _ROLE.sub("", html)


def on_page_content(html, page, config, files):
    """The rendered page with the docstrings' Sphinx roles dropped (:func:`strip_roles`)."""
    return strip_roles(html)
