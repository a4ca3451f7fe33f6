"""Griffe extension of the documentation site (mkdocs.yml, mkdocstrings ``extensions``).

numpydoc writes a parameter with a fixed set of values as
``task : {"regression", "binary", "multiclass"}`` and reads the first value
as the default. Griffe follows that rule even when the signature has no
default, so a required parameter was shown with the first choice as its
default. This extension gives each documented parameter the signature's
default instead: a required one shows "required", a defaulted one the value
the code uses. It acts when a docstring is parsed (for the pages that
render it), so griffe's own warnings still come from rendered objects only.
"""

from __future__ import annotations

from functools import cached_property

import griffe


class _SignatureDocstring(griffe.Docstring):
    """A docstring whose parsed parameters take their defaults from the signature."""

    @cached_property
    def parsed(self) -> list:
        """The sections, parsed as griffe does, with each parameter's default from the signature."""
        sections = self.parse()
        try:
            params = self.parent.parameters  # a function's, or a class's __init__'s
        except Exception:
            return sections
        for section in sections:
            if section.kind is griffe.DocstringSectionKind.parameters:
                for p in section.value:
                    if p.name in params:
                        p.default = params[p.name].default
        return sections


class SignatureDefaults(griffe.Extension):
    """Make the docstring of every function and class default its parameters from the signature."""

    def on_instance(self, *, obj, **kwargs) -> None:
        """Swap in :class:`_SignatureDocstring` (parsing stays lazy)."""
        if (obj.is_function or obj.is_class) and obj.docstring is not None:
            obj.docstring.__class__ = _SignatureDocstring
