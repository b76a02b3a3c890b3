"""Check the documentation: README.md is short, and no relative link or image is broken.

Run from anywhere: ``python3 scripts/check_docs.py``.  It checks

* that ``README.md`` has at most :data:`MAX_README_LINES` lines;
* that every relative link ``[text](path)`` and image ``![alt](path)`` in ``README.md`` and
  every ``.md`` file under ``docs/`` (sub-folders included) names a file or folder that exists
  and, inside a git checkout, is tracked by git (an image left out of a commit, or ignored by
  ``.gitignore``, is a problem).  The pages the site's build generates (:data:`GENERATED`, by
  ``scripts/docs_hooks.py``) count as existing.  Anchors
  (``page.md#section``, ``#section``) are not checked; links with a scheme (``https:``,
  ``mailto:``) are skipped, and so is everything inside code spans and fenced code blocks.

It prints one line per problem (``file:line: message``) and exits 1 if there is any; otherwise
it prints one line starting with ``OK`` and exits 0.  Standard library only.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_README_LINES = 300
#: pages that exist only in the built site, made by scripts/docs_hooks.py (a link to them is fine)
GENERATED = ("docs/reference/cli.md", "docs/readme.md")

#: an inline link or image: [text](target) or ![alt](target), with an optional "title"
LINK = re.compile(r'!?\[(?:[^\]\\]|\\.)*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)')
#: a reference definition: [label]: target
REFDEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)")
CODE_SPAN = re.compile(r"(`+).+?\1")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def tracked_files() -> set[Path] | None:
    """Files git tracks under ROOT, or None outside a git checkout (then existence is enough)."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {(ROOT / name).resolve() for name in out.decode().split("\0") if name}


def links(text: str):
    """(line number, target) of every link and image outside code."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * 3
            elif stripped.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        line = CODE_SPAN.sub("", line)
        for m in LINK.finditer(line):
            yield number, m.group(1).strip("<>")
        m = REFDEF.match(line)
        if m:
            yield number, m.group(1).strip("<>")


def problems() -> list[str]:
    found = []
    readme = ROOT / "README.md"
    if not readme.is_file():
        return ["README.md: missing"]
    n_lines = len(readme.read_text(encoding="utf-8").splitlines())
    if n_lines > MAX_README_LINES:
        found.append(f"README.md: {n_lines} lines, more than {MAX_README_LINES}")
    tracked = tracked_files()
    for page in [readme, *sorted((ROOT / "docs").rglob("*.md"))]:
        rel = page.relative_to(ROOT)
        for number, target in links(page.read_text(encoding="utf-8")):
            if SCHEME.match(target) or target.startswith("#"):
                continue
            path_part = target.split("#", 1)[0].split("?", 1)[0]
            if not path_part:
                continue
            dest = (page.parent / path_part).resolve()
            if dest in {(ROOT / g).resolve() for g in GENERATED}:
                continue
            if not dest.exists():
                found.append(f"{rel}:{number}: link to {target}: no such file")
            elif tracked is not None and dest.is_file() and dest not in tracked:
                found.append(f"{rel}:{number}: link to {target}: the file is not tracked by git")
            elif tracked is not None and dest.is_dir() and not any(dest in f.parents for f in tracked):
                found.append(f"{rel}:{number}: link to {target}: no file under it is tracked by git")
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    if found:
        return 1
    pages = len(list((ROOT / "docs").rglob("*.md")))
    print(f"OK: README.md within {MAX_README_LINES} lines; every relative link in it and in {pages} docs pages resolves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
