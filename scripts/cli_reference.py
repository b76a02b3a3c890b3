"""The command-line reference of the documentation site, rendered from the ``pymtl-fp`` argparse parsers.

:func:`render` walks :func:`pymtl_fp.cli.main.build_parser`'s parser and every sub-parser under it
(``train``, ``explore scaling``, ``bench model``, ...), depth first in the order they were added, and
returns one Markdown page: per command its one-line help, its usage, and every argument and option
with its help text, its choices and its default.  The site's build hook
(:mod:`pymtl_fp.cli.docs_hooks`) calls it on every build, so the page always lists the options the
installed command has; ``tests/test_docs_site.py`` checks that every option of every parser is there.

``python -m pymtl_fp.cli.cli_reference`` prints the page.  Only ``-h``/``--help`` is not repeated
under every command: the page says once that every command takes it.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from dataclasses import dataclass

#: the width the usage lines are wrapped at (fixed, so the page does not depend on the terminal)
USAGE_WIDTH = 96
#: options every parser has, documented once at the top of the page
HELP_OPTIONS = ("-h", "--help")

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


@dataclass(frozen=True)
class Command:
    """One parser of the tree: its words after ``pymtl-fp`` (``()`` for the top level), the parser and
    its one-line help as the parent lists it."""

    words: tuple
    parser: argparse.ArgumentParser
    help: str

    @property
    def title(self) -> str:
        return " ".join(("pymtl-fp", *self.words))


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def commands(parser: argparse.ArgumentParser | None = None) -> Iterator[Command]:
    """Every parser of the tree, the top level first, then each sub-command and its own
    sub-commands, in the order they were added."""
    if parser is None:
        from pymtl_fp.cli.main import build_parser

        parser = build_parser()[0]
    yield from _walk(parser, (), parser.description or "")


def _walk(parser, words, help_text) -> Iterator[Command]:
    yield Command(words, parser, help_text)
    sub = _subparsers(parser)
    if sub is None:
        return
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    for name, child in sub.choices.items():
        yield from _walk(child, (*words, name), helps.get(name, ""))


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments and options a user can give this parser (not ``-h``, not hidden ones, not the
    sub-command selector, which the sub-commands' own sections cover)."""
    out = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        out.append(action)
    return out


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string (``--nodes``, ``-n``) this parser takes, ``-h``/``--help`` left out."""
    return [s for a in options(parser) for s in a.option_strings if s not in HELP_OPTIONS]


def _escape(text: str) -> str:
    """Help text as Markdown: code spans kept, the characters Markdown would read as markup
    escaped elsewhere."""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_escape_plain(text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_escape_plain(text[pos:]))
    return "".join(out)


def _escape_plain(text: str) -> str:
    text = text.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"([*_\[\]`|])", r"\\\1", text)


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text as ``--help`` prints it (``%(default)s`` and the like expanded)."""
    if not action.help:
        return ""
    formatter = parser._get_formatter()
    try:
        return formatter._expand_help(action)
    except (KeyError, TypeError, ValueError):
        return action.help


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = argparse.HelpFormatter(parser.prog, width=USAGE_WIDTH)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _name(action: argparse.Action) -> str:
    """``--nodes N``, ``--level {cl,rtl}``, ``--no-plot`` or a positional's name."""
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    if action.nargs == 0:
        return ", ".join(f"`{s}`" for s in action.option_strings)
    if action.metavar is not None:
        meta = action.metavar if isinstance(action.metavar, str) else " ".join(action.metavar)
    elif action.choices is not None:
        meta = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        meta = action.dest.upper()
    if action.nargs in ("*", "+", argparse.REMAINDER):
        meta += " ..."
    elif isinstance(action.nargs, int) and action.nargs > 1 and isinstance(action.metavar, str | None):
        meta = " ".join([meta] * action.nargs)
    elif action.nargs == "?":
        meta = f"[{meta}]"
    return ", ".join(f"`{s} {meta}`" for s in action.option_strings)


def _facts(action: argparse.Action) -> list[str]:
    facts = []
    if action.required and action.option_strings:
        facts.append("required")
    if isinstance(action, argparse._AppendAction):
        facts.append("repeatable")
    if action.choices is not None and action.nargs != 0:
        facts.append("one of " + ", ".join(f"`{c}`" for c in action.choices))
    default = action.default
    flag = action.nargs == 0 and isinstance(default, bool)
    if default not in (None, argparse.SUPPRESS) and not flag and not isinstance(action, argparse._VersionAction):
        if isinstance(default, (list, tuple)):
            default = " ".join(map(str, default))
        facts.append(f"default `{default}`")
    return facts


def _anchor(cmd: Command) -> str:
    return "-".join(("pymtl-fp", *cmd.words)).replace(" ", "-")


def section(cmd: Command) -> str:
    """One command's Markdown: heading, help, usage, sub-commands and options."""
    level = "#" * min(2 + max(len(cmd.words) - 1, 0), 4)
    lines = [f"{level} `{cmd.title}` {{#{_anchor(cmd)}}}", ""]
    if cmd.help:
        lines += [_escape(cmd.help), ""]
    lines += ["```text", _usage(cmd.parser), "```", ""]
    sub = _subparsers(cmd.parser)
    if sub is not None:
        lines += ["Sub-commands:", ""]
        helps = {a.dest: a.help or "" for a in sub._choices_actions}
        for name in sub.choices:
            child = Command((*cmd.words, name), sub.choices[name], helps.get(name, ""))
            lines.append(f"* [`{name}`](#{_anchor(child)}): {_escape(child.help)}")
        lines.append("")
    acts = options(cmd.parser)
    if acts:
        lines += ["| argument | description |", "|---|---|"]
        for action in acts:
            text = _escape(_help(cmd.parser, action))
            facts = _facts(action)
            if facts:
                text = (text + " " if text else "") + "(" + "; ".join(facts) + ")"
            lines.append(f"| {_name(action)} | {text.replace(chr(10), ' ')} |")
        lines.append("")
    elif sub is None:
        lines += ["No options.", ""]
    return "\n".join(lines)


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole reference page as Markdown."""
    cmds = list(commands(parser))
    head = [
        "# Command-line reference",
        "",
        "Every command, sub-command and option of `pymtl-fp`, generated from its argparse parsers when",
        "the site is built (`pymtl_fp.cli.cli_reference`), so it lists what the installed command takes.",
        "Every command also takes `-h`/`--help`, which prints the same text in the terminal.",
        "",
    ]
    return "\n".join(head + [section(c) for c in cmds]).rstrip() + "\n"


def main() -> int:
    print(render(), end="")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
