"""The documentation's own checks (``scripts/check_docs.py``): the README stays a short page and
no relative link or image of the README or ``docs/`` is broken; and the checker itself catches a
broken link and a long README (run on a copy, so a pass is not vacuous)."""

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECK = REPO / "scripts" / "check_docs.py"


def _check(root: Path):
    return subprocess.run([sys.executable, str(root / "scripts" / "check_docs.py")], capture_output=True, text=True,
                          check=False)


def test_the_readme_is_short_and_every_link_resolves():
    proc = _check(REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("OK")


def test_the_checker_finds_a_broken_link_and_a_long_readme(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(CHECK, tmp_path / "scripts" / "check_docs.py")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Index\n\n[there](no-such-page.md)\n")
    (tmp_path / "README.md").write_text("# R\n" + "line\n" * 400 + "[docs](docs/index.md)\n")
    proc = _check(tmp_path)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert any("no-such-page.md" in line for line in lines), proc.stdout
    assert any("README.md" in line and "300" in line for line in lines), proc.stdout
