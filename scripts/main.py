"""``pymtl-fp`` console entry point: one dispatcher, one module per subcommand.

Each subcommand lives in ``scripts/cmd_<name>.py`` (``-`` in the name becomes ``_``) and
provides::

    HELP = "one line shown by pymtl-fp --help"
    def add_arguments(parser: argparse.ArgumentParser) -> None: ...
    def main(args: argparse.Namespace) -> int: ...   # exit status

A subcommand whose module is not there yet is listed as "not implemented yet"; running it says
so and exits with status 2 instead of pretending to work.  Errors a user can fix (bad options,
malformed input files, missing tools) are raised as :class:`scripts.errors.UserError` and
printed as one line, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from pymtl_fp.cli.errors import UserError

#: subcommand -> the issue that delivers it (shown while it is missing)
SUBCOMMANDS = {
    "doctor": "foundation",
    "run-op": "engine FL/RTL",
    "train": "golden model / cluster",
    "translate": "fuzzing and translation",
    "fuzz": "fuzzing and translation",
    "explore": "design-space studies",
    "bench": "engine / link benchmarks",
    "import": "bring your own network",
}


class _Broken:
    """A subcommand module that exists but fails to import: the other commands keep working."""

    def __init__(self, modname: str, exc: Exception):
        self.HELP = f"(failed to load: {type(exc).__name__}: {exc})"
        self._message = (f"{modname} failed to import ({type(exc).__name__}: {exc}); "
                         f"run `python -c 'import {modname}'` for the traceback")

    def add_arguments(self, parser):
        parser.add_argument("rest", nargs=argparse.REMAINDER)

    def main(self, args):
        print(f"pymtl-fp {args.command}: internal error: {self._message}", file=sys.stderr)
        return 1


def _load(name: str):
    modname = "pymtl_fp.cli.cmd_" + name.replace("-", "_")
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as exc:
        if exc.name == modname:
            return None
        return _Broken(modname, exc)
    except Exception as exc:
        return _Broken(modname, exc)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line, as every other error (the sub-parsers
    of every command and target are of this class too)."""

    def error(self, message):
        message = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    from pymtl_fp import __version__

    parser = _Parser(
        prog="pymtl-fp",
        description="Multi-level simulator and generator for CNN training on FPGA clusters.",
        epilog="The main command: pymtl-fp train --engine cluster (LeNet on the digits, trained on 4 simulated "
               "FPGAs at the cycle level and checked bit for bit against the golden model).",
    )
    parser.add_argument("--version", action="version", version=f"pymtl-fp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {}
    for name, owner in SUBCOMMANDS.items():
        mod = _load(name)
        modules[name] = mod
        if mod is None:
            p = sub.add_parser(name, help=f"(not implemented yet: {owner})", add_help=True)
            p.add_argument("rest", nargs=argparse.REMAINDER)
        else:
            p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
            mod.add_arguments(p)
    return parser, modules


#: the last file this process opened for writing (set by an audit hook, see :func:`_watch_writes`)
_LAST_WRITE: list = [None]
#: refusals of a write that carry no file name (a full disk shows on ``write`` or ``close``)
_WRITE_ERRNOS = ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS")


def _watch_writes() -> None:
    """Remember the last file opened for writing, whoever opens it (our code, NumPy's ``savez``,
    matplotlib's ``savefig``), so that a refusal without a file name, such as a full disk on
    ``write``, names the file.  The audit hook is installed once per process."""
    import os

    if _LAST_WRITE[0] is not None:
        return
    _LAST_WRITE[0] = ""
    writing = os.O_WRONLY | os.O_RDWR

    def hook(event, args):
        if event != "open" or not args or not isinstance(args[0], (str, os.PathLike)):
            return
        mode, flags = (tuple(args) + (None, 0))[1:3]
        if (mode and any(c in mode for c in "wax+")) or (mode is None and (flags or 0) & writing):
            _LAST_WRITE[0] = os.fspath(args[0])

    sys.addaudithook(hook)


def _os_error(exc: OSError) -> str:
    """One line for an operating-system refusal: the error and the file (the last one opened for
    writing when the error names none and is a write's)."""
    import errno

    name = exc.filename
    if not name and exc.errno in {getattr(errno, e, None) for e in _WRITE_ERRNOS} and _LAST_WRITE[0]:
        name = _LAST_WRITE[0]
    where = f": {str(name)[:200]}" if name else ""
    return f"{exc.strerror or exc}{where}"


def _interrupted(command: str | None) -> int:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not break the clean-up
    print(f"pymtl-fp{' ' + command if command else ''}: interrupted", file=sys.stderr)
    return 130


def main(argv: list[str] | None = None) -> int:
    try:  # (Ctrl-C while the subcommands' modules load: one line too)
        parser, modules = build_parser()
    except KeyboardInterrupt:
        return _interrupted(None)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        print(f"pymtl-fp: error: give a command: {', '.join(SUBCOMMANDS)} (see pymtl-fp --help)", file=sys.stderr)
        return 2
    mod = modules[args.command]
    if mod is None:
        print(
            f"pymtl-fp {args.command}: not implemented yet "
            f"(arrives with the {SUBCOMMANDS[args.command]} work); nothing was run.",
            file=sys.stderr,
        )
        return 2
    try:
        from pymtl_fp.cli import validate

        validate.no_empty_values(argv)
        validate.environment()
        _watch_writes()
        return int(mod.main(args) or 0)
    except UserError as exc:
        message = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        print(f"pymtl-fp {args.command}: error: {message}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # output piped into `head` and closed early: not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # the operating system refused a file (a name too long, a full disk, ...)
        print(f"pymtl-fp {args.command}: error: {_os_error(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return _interrupted(args.command)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
