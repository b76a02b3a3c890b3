"""``pymtl-fp bench link`` runs and prints its tables (figures only: nothing is timed)."""

import pytest

from pymtl_fp.cli.main import main


def test_bench_link_quick(capsys):
    assert main(["bench", "link", "--quick", "--level", "cl"]) == 0
    out = capsys.readouterr().out
    assert "credit knee" in out and "bound" in out
    rows = [line.split() for line in out.splitlines() if line[:5].strip().isdigit()]
    sweep = [r for r in rows if len(r) == 17]
    knee = [r for r in rows if len(r) == 10]
    assert len(sweep) == 4 and len(knee) == 2
    for r in sweep:
        assert r[-1] == "yes" and float(r[8]) == pytest.approx(1.0, abs=0.01)  # bw / bound
    for r in knee:
        assert r[6] == r[7]  # measured knee == analytical


def test_bench_link_rtl_with_faults(capsys):
    assert main(["bench", "link", "--level", "rtl", "--phits", "16", "--latencies", "2",
                 "--credits", "4", "--messages", "80", "--fault-rate", "0.02", "--no-knee"]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line[:5].strip().isdigit())
    assert row[-1] == "yes" and int(row[14]) > 0  # retransmissions


def test_bench_link_bad_input(capsys):
    assert main(["bench", "link", "--phits", "8,x"]) == 1
    assert "comma-separated" in capsys.readouterr().err
    assert main(["bench", "link", "--quick", "--msg-bits", "5000"]) == 1
    out, err = capsys.readouterr()
    assert "--msg-bits must be in 1..1023, got 5000" in err and out == ""  # (before the table's header)
