"""The `pymtl-fp` dispatcher: every subcommand is listed, missing ones say so and exit 2, a
broken one does not take the others down, user errors are one line without a traceback."""

import subprocess
import sys

import pytest

from pymtl_fp.cli import main as cli
from pymtl_fp.cli.errors import UserError


def run_cli(*argv):
    return subprocess.run([sys.executable, "-m", "pymtl_fp.cli", *argv], capture_output=True,
                          text=True, timeout=300)


def test_help_lists_every_subcommand():
    out = run_cli("--help")
    assert out.returncode == 0
    for name in cli.SUBCOMMANDS:
        assert name in out.stdout


@pytest.mark.parametrize("name", list(cli.SUBCOMMANDS))
def test_each_subcommand_has_help_or_says_it_is_missing(name):
    out = run_cli(name, "--help")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr


def test_missing_subcommand_says_so_and_exits_2(monkeypatch, capsys):
    monkeypatch.setitem(cli.SUBCOMMANDS, "nonesuch", "some later issue")
    assert cli.main(["nonesuch"]) == 2
    assert "not implemented yet" in capsys.readouterr().err


def test_broken_subcommand_module_does_not_break_the_others(monkeypatch, capsys):
    def fake_import(modname):
        if modname == "pymtl_fp.cli.cmd_doctor":
            raise SyntaxError("invalid syntax (cmd_doctor.py, line 1)")
        return real_import(modname)

    real_import = cli.importlib.import_module
    monkeypatch.setattr(cli.importlib, "import_module", fake_import)
    assert cli.main(["doctor"]) == 1
    assert "failed to import" in capsys.readouterr().err
    _parser, modules = cli.build_parser()  # the parser still builds, other commands intact
    assert modules["doctor"].HELP.startswith("(failed to load")
    assert not isinstance(modules["train"], cli._Broken)


def test_user_error_is_one_line_without_traceback(monkeypatch, capsys):
    class Fake:
        HELP = "fake"

        @staticmethod
        def add_arguments(parser):
            pass

        @staticmethod
        def main(args):
            raise UserError("the case file has no key 'x'")

    monkeypatch.setattr(cli, "_load", lambda name: Fake if name == "doctor" else None)
    assert cli.main(["doctor"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "pymtl-fp doctor: error: the case file has no key 'x'"
