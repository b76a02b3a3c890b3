"""A griffe extension of the documentation site's API reference (``mkdocs.yml``: mkdocstrings's
``extensions``): the docstrings' reStructuredText markup read as Markdown.

The package's docstrings use Sphinx's roles (``:func:`load_net```, ``:class:`~pymtl_fp.net.Net```)
and literal blocks introduced by ``::``.  mkdocstrings renders Markdown, where those would show as
typed; :class:`RestRoles` rewrites them, before rendering, into code spans (the role's target,
its last component with ``~``) and a plain colon.  The docstrings in the source stay as they are
(``help()`` and the source read the same).  Needs griffe (a dependency of mkdocstrings).
"""

from __future__ import annotations

import re

import griffe

#: ``:role:`target``` (``:func:``, ``:class:``, ``:mod:``, ... and ``:py:func:``)
ROLE = re.compile(r":(?:py:)?(?:mod|class|func|meth|data|attr|exc|obj|const|ref|doc|term):`(~?)([^`]+)`")
#: a paragraph ending in ``::`` (a literal block follows)
LITERAL = re.compile(r"(?<=\S)::$", re.MULTILINE)
#: `` ::`` on its own after a space: the colon goes too
LITERAL_ALONE = re.compile(r"\s+::$", re.MULTILINE)


def markdown(text: str) -> str:
    """The reStructuredText roles and ``::`` of a docstring as Markdown."""

    def role(m):
        target = m.group(2)
        if m.group(1):
            target = target.rsplit(".", 1)[-1]
        return f"`{target}`"

    text = ROLE.sub(role, text)
    text = LITERAL_ALONE.sub("", text)
    return LITERAL.sub(":", text)


class RestRoles(griffe.Extension):
    """Rewrite every object's docstring with :func:`markdown` once it is loaded."""

    def on_object(self, *, obj, loader, **kwargs) -> None:
        doc = obj.docstring
        if doc is not None and doc.value:
            doc.value = markdown(doc.value)
