"""MkDocs hooks of the documentation site (``hooks:`` in ``mkdocs.yml``): the pages made at build time.

* ``reference/cli.md``: the command-line reference, rendered from the ``pymtl-fp`` argparse parsers
  by :func:`pymtl_fp.cli.cli_reference.render` on every build, so it cannot go stale;
* ``readme.md``: the repository's ``README.md`` (set-up, the main command, the command list) as a
  page of the site, its links into ``docs/`` made relative to the site (``docs/cluster.md`` ->
  ``cluster.md``) and its links to other files of the repository turned into code names;
* a page's link to the README (``../README.md`` from ``docs/index.md``) points at that page;
* ``build/docs-api/pymtl_fp``: the package as it installs (``cluster/`` as ``pymtl_fp.cluster``,
  ``scripts/`` as ``pymtl_fp.cli``, ``tb/`` as ``pymtl_fp.tb``, setup.cfg's ``package_dir``), made
  of symbolic links, for mkdocstrings to read the docstrings from (its ``paths`` option): its
  static analysis follows folders, not the editable install's import hooks.

Every other link is left to MkDocs's own validation, which ``mkdocs build --strict`` turns into
errors.  The module imports MkDocs only inside the hooks, so the package imports without it.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: where the generated pages sit in the site
CLI_PAGE = "reference/cli.md"
README_PAGE = "readme.md"
#: the package tree mkdocstrings reads (mkdocs.yml: plugins / mkdocstrings / python / paths)
API_TREE = ROOT / "build" / "docs-api"
#: sub-packages that live in folders of their own (setup.cfg [options] package_dir)
PACKAGE_DIRS = {"cluster": "cluster", "cli": "scripts", "tb": "tb"}

#: an inline link or image, not inside a code span: [text](target "title")
_LINK = re.compile(r'(!?)\[((?:[^\]\\]|\\.)*)\]\(\s*([^)\s]+)((?:\s+"[^"]*")?)\s*\)')
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+).+?\1")


def _sub_links(text: str, fix) -> str:
    """Replace every inline link of ``text`` by ``fix(match)``, leaving fenced code blocks and links
    that start inside a code span alone (a link's text may hold a code span or span two lines)."""
    out, prose, fence = [], [], None

    def flush():
        chunk = "".join(prose)
        spans = [(c.start(), c.end()) for c in _CODE_SPAN.finditer(chunk)]

        def one(link):
            if any(a <= link.start() < b for a, b in spans):
                return link.group(0)
            return fix(link)

        out.append(_LINK.sub(one, chunk))
        prose.clear()

    for line in text.splitlines(keepends=True):
        m = _FENCE.match(line)
        if fence is None and not m:
            prose.append(line)
            continue
        flush()
        if m and fence is None:
            fence = m.group(1)[0] * 3
        elif m and line.lstrip().startswith(fence):
            fence = None
        out.append(line)
    flush()
    return "".join(out)


def readme_page(text: str) -> str:
    """The README as a page at the site's root: ``docs/X`` links become ``X``; a link to another
    file of the repository becomes its text followed by the path as a code name."""

    def one(m):
        bang, label, target, title = m.groups()
        if _SCHEME.match(target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        if path.startswith("docs/"):
            new = path[len("docs/"):] + (f"#{anchor}" if anchor else "")
            return f"{bang}[{label}]({new}{title})"
        return f"{label} (`{path}`)"

    return _sub_links(text, one)


def readme_links_to_page(markdown: str, src_uri: str) -> str:
    """Links from ``docs/<src_uri>`` that resolve to the repository's README point at its page."""
    here = posixpath.dirname(src_uri)

    def one(m):
        bang, label, target, title = m.groups()
        path, _, anchor = target.partition("#")
        if _SCHEME.match(target) or not path:
            return m.group(0)
        if posixpath.normpath(posixpath.join("docs", here, path)) != "README.md":
            return m.group(0)
        new = posixpath.relpath(README_PAGE, here or ".") + (f"#{anchor}" if anchor else "")
        return f"{bang}[{label}]({new}{title})"

    return _sub_links(markdown, one)


def api_tree(dest: Path = API_TREE) -> Path:
    """Make ``dest/pymtl_fp``: a link to every entry of ``pymtl_fp/`` and one per sub-package kept
    in its own folder (:data:`PACKAGE_DIRS`), i.e. the import namespace the install makes."""
    pkg = dest / "pymtl_fp"
    pkg.mkdir(parents=True, exist_ok=True)
    want = {p.name: p for p in (ROOT / "pymtl_fp").iterdir() if p.name != "__pycache__"}
    want.update({name: ROOT / folder for name, folder in PACKAGE_DIRS.items()})
    for entry in pkg.iterdir():
        if entry.is_symlink() and want.get(entry.name) != Path(entry.readlink()):
            entry.unlink()
    for name, target in want.items():
        link = pkg / name
        if not link.is_symlink():
            link.symlink_to(target, target_is_directory=target.is_dir())
    return dest


def on_startup(command, dirty):
    """Before any plugin reads its configuration: mkdocstrings looks for the tree then."""
    api_tree()


def on_files(files, config):
    """Add the generated pages to the site's files (before the nav is built)."""
    from mkdocs.structure.files import File

    from pymtl_fp.cli.cli_reference import render

    for uri, content in ((CLI_PAGE, render()), (README_PAGE, readme_page(README.read_text(encoding="utf-8")))):
        old = files.get_file_from_path(uri)
        if old is not None:
            files.remove(old)
        files.append(File.generated(config, uri, content=content))
    return files


def on_page_markdown(markdown, page, config, files):
    return readme_links_to_page(markdown, page.file.src_uri)
