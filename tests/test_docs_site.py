"""The documentation site's generated parts (``mkdocs.yml``, ``scripts/docs_hooks.py``):

* the command-line reference (:mod:`pymtl_fp.cli.cli_reference`) has a section for every parser of
  ``pymtl-fp`` (sub-commands of sub-commands included) and, in it, every option that parser takes,
  its help text and its default;
* the README's page has its ``docs/`` links made relative to the site and its other repository
  links turned into code names, and a page's link to the README points at that page;
* the docstrings' Sphinx roles read as Markdown code spans in the API reference.

The site itself is built with ``mkdocs build --strict`` by CI (``.ci/run``).
"""

from __future__ import annotations

import argparse
import re

import pytest

from pymtl_fp.cli import cli_reference, docs_hooks
from pymtl_fp.cli.main import build_parser

PARSER = build_parser()[0]
COMMANDS = list(cli_reference.commands(PARSER))
PAGE = cli_reference.render(PARSER)


def _sections(page: str) -> dict:
    """Heading title (``pymtl-fp explore scaling``) -> the text up to the next heading."""
    out, title, lines = {}, None, []
    for line in page.splitlines():
        m = re.match(r"#{2,4} `([^`]+)` \{#[^}]+\}$", line)
        if m:
            if title is not None:
                out[title] = "\n".join(lines)
            title, lines = m.group(1), []
        elif title is not None:
            lines.append(line)
    if title is not None:
        out[title] = "\n".join(lines)
    return out


SECTIONS = _sections(PAGE)


def test_the_walk_reaches_every_nested_parser():
    titles = [c.title for c in COMMANDS]
    assert titles[0] == "pymtl-fp"
    for name in ("train", "translate", "fuzz", "explore", "bench", "doctor", "run-op"):
        assert f"pymtl-fp {name}" in titles
    for study in ("scaling", "partition", "design", "parallelism", "modes", "zoo"):
        assert f"pymtl-fp explore {study}" in titles
    for target in ("engine", "engine-cl", "model", "scaling", "storage"):
        assert f"pymtl-fp bench {target}" in titles
    assert sorted(SECTIONS) == sorted(titles)


@pytest.mark.parametrize("cmd", COMMANDS, ids=[c.title for c in COMMANDS])
def test_every_option_of_every_parser_is_in_its_section(cmd):
    text = SECTIONS[cmd.title]
    assert "usage: " + cmd.parser.prog in text
    for action in cli_reference.options(cmd.parser):
        strings = [s for s in action.option_strings if s not in cli_reference.HELP_OPTIONS]
        for s in strings:
            assert re.search(rf"`{re.escape(s)}[ `]", text), f"{cmd.title}: {s} missing"
        if not action.option_strings:
            assert f"`{action.metavar or action.dest}`" in text, f"{cmd.title}: argument {action.dest} missing"
        words = re.findall(r"[A-Za-z]{4,}", action.help or "")[:3]
        for w in words:  # the help text is there (escaped Markdown keeps the words)
            assert w in text, f"{cmd.title}: help of {strings or action.dest} missing {w!r}"
        if action.default not in (None, argparse.SUPPRESS, False, True) and action.nargs != 0 \
                and not isinstance(action.default, (list, tuple)):
            assert f"default `{action.default}`" in text, f"{cmd.title}: default of {strings} missing"


def test_every_option_string_of_the_tree_is_on_the_page():
    """The same from the other side: no option of any parser is left out of the page."""
    every = {s for c in COMMANDS for s in cli_reference.option_strings(c.parser)}
    assert len(every) > 100
    assert not [s for s in sorted(every) if f"`{s}" not in PAGE]


def test_help_text_is_escaped_but_code_spans_are_kept():
    assert cli_reference._escape("a_b * c <d> `x_y*`") == r"a\_b \* c &lt;d&gt; `x_y*`"


def test_the_readme_page_links_into_the_site():
    text = ("See [`docs/DESIGN.md`](docs/DESIGN.md) and [the\nnode](docs/cluster-node.md#the-node), "
            "[set up](#set-up), [PyMTL3](https://github.com/pymtl/pymtl3), [the runner](.ci/run).\n"
            "```\n[kept](docs/x.md)\n```\n`[kept too](docs/y.md)`\n")
    page = docs_hooks.readme_page(text)
    assert "[`docs/DESIGN.md`](DESIGN.md)" in page
    assert "[the\nnode](cluster-node.md#the-node)" in page
    assert "[set up](#set-up)" in page and "(https://github.com/pymtl/pymtl3)" in page
    assert "the runner (`.ci/run`)" in page
    assert "[kept](docs/x.md)" in page and "`[kept too](docs/y.md)`" in page


def test_a_link_to_the_readme_points_at_its_page():
    assert docs_hooks.readme_links_to_page("[README](../README.md)", "index.md") == "[README](readme.md)"
    assert docs_hooks.readme_links_to_page("[set-up](../../README.md#set-up)", "tutorials/x.md") == \
        "[set-up](../readme.md#set-up)"
    assert docs_hooks.readme_links_to_page("[other](../setup.cfg)", "index.md") == "[other](../setup.cfg)"


def test_sphinx_roles_read_as_code_spans():
    pytest.importorskip("griffe")
    from pymtl_fp.cli.docs_griffe import markdown

    assert markdown("see :func:`load_net` and :class:`~pymtl_fp.net.Net`, as follows::\n\n    x\n") == \
        "see `load_net` and `Net`, as follows:\n\n    x\n"
    assert markdown("a block ::\n") == "a block\n"


def test_the_link_checker_knows_the_generated_pages():
    from pymtl_fp.cli import check_docs

    assert set(check_docs.GENERATED) == {f"docs/{docs_hooks.CLI_PAGE}", f"docs/{docs_hooks.README_PAGE}"}


def test_every_included_result_is_written_by_a_listed_command():
    """Each file a results page includes (``--8<--``) is written by a job of ``regenerate_docs``, whose
    command the page shows; each job names the files it writes."""
    from pymtl_fp.cli import regenerate_docs

    jobs = regenerate_docs.JOBS
    assert len({j.name for j in jobs}) == len(jobs)
    pages = sorted((docs_hooks.ROOT / "docs" / "results").glob("*.md"))
    included = 0
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for path in re.findall(r'^--8<-- "([^"]+)"$', text, re.MULTILINE):
            writers = [j for j in jobs if f"docs/{path}" in j.writes]
            assert writers, f"{page.name}: no regenerate_docs job writes {path}"
            assert writers[0].shell() in text, f"{page.name}: the command of {writers[0].name} is not shown"
            assert (docs_hooks.ROOT / "docs" / path).is_file()
            included += 1
    assert included >= 8
    assert regenerate_docs.select("zoo,design", fast=False) == [j for j in jobs if j.name in ("zoo", "design")]
    assert all(j.fast for j in regenerate_docs.select(None, fast=True))


def test_the_regenerate_script_lists_its_commands(capsys):
    from pymtl_fp.cli import regenerate_docs

    assert regenerate_docs.main(["--list", "--fast"]) == 0
    out = capsys.readouterr().out
    fast = [j for j in regenerate_docs.JOBS if j.fast]
    assert all(j.shell() in out for j in fast) and "bench model" not in out
    with pytest.raises(SystemExit):
        regenerate_docs.select("no-such-job", fast=False)
