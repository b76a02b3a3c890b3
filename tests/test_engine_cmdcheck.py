"""The kit header's T_cmd_derive() and T_cmd_check() (pymtl_fp/engine/cmdcheck.py), compiled with gcc
-std=c99 -Wall -Werror into a shared library: the derived fields equal those of the Python programs'
commands, each rule refuses its bad field with its own code (and the Python checks refuse the same),
and the C check agrees with the Python one on random valid and mutated commands."""

import ctypes
import subprocess

import numpy as np
import pytest

from pymtl_fp.engine import cmdcheck, encoding, ipkit, msgs, program
from pymtl_fp.engine.cases import CaseError, validate_case
from pymtl_fp.engine.config import PRESETS
from pymtl_fp.tb.engine_harness import random_case

CFG = PRESETS["tiny"]
NOSTOCH = CFG.replace(stochastic=False)
NAMES = [f.name for f in encoding.FIELDS]
DERIVED = {"ct", "kt", "ho", "wo", "lgst", "pt", "hi", "nt"} | set(encoding.PRODUCTS)
WRAP = """#include <string.h>
#include "{T}.h"
int check_{T}(const uint32_t *v) {{ {T}_cmd_t c; memcpy(&c, v, sizeof c); return {T}_cmd_check(&c); }}
int derive_{T}(uint32_t *v, uint32_t stride) {{
  {T}_cmd_t c; int e; memcpy(&c, v, sizeof c); e = {T}_cmd_derive(&c, stride); memcpy(v, &c, sizeof c); return e; }}
const char *error_str_{T}(int code) {{ return {T}_cmd_error_str(code); }}
"""


class Lib:
    def __init__(self, so, top):
        self.so, self.top = so, top

    def _words(self, f):
        return (ctypes.c_uint32 * len(NAMES))(*[int(f.get(n, 0)) & 0xFFFFFFFF for n in NAMES])

    def check(self, f) -> int:
        return getattr(self.so, f"check_{self.top}")(self._words(f))

    def derive(self, f, stride):
        w = self._words(f)
        code = getattr(self.so, f"derive_{self.top}")(w, ctypes.c_uint32(stride))
        return code, dict(zip(NAMES, list(w)))

    def error_str(self, code) -> str:
        fn = getattr(self.so, f"error_str_{self.top}")
        fn.restype = ctypes.c_char_p
        return fn(code).decode()


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmdcheck")
    srcs = []
    for top, cfg in (("K", CFG), ("KN", NOSTOCH)):
        (d / f"{top}.h").write_text(ipkit.c_header(top, cfg))
        (d / f"{top}.c").write_text(WRAP.format(T=top))
        srcs.append(f"{top}.c")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O1", "-shared", "-fPIC",
                    "-o", "libk.so", *srcs], cwd=d, check=True)
    so = ctypes.CDLL(str(d / "libk.so"))
    return Lib(so, "K"), Lib(so, "KN")


def _valid_commands(rng, count):
    """``(op, case, command fields, stride)`` of random valid whole-map cases of every operation."""
    out = []
    ops = list(msgs.OPS)
    while len(out) < count:
        op = ops[len(out) % len(ops)]
        stride = int(rng.choice([1, 1, 2, 4]))
        r, s = int(rng.integers(1, 4)), int(rng.integers(1, 4))
        dims = dict(n=int(rng.integers(1, 4)), c=int(rng.integers(1, 6)), k=int(rng.integers(1, 6)),
                    h=int(rng.integers(2, 7)) * (2 if op.startswith("pool") else 1), w=int(rng.integers(2, 7)) * 2,
                    r=r, s=s, stride=stride, pad=int(rng.integers(0, min(r, s))))
        mode = "stochastic" if rng.random() < 0.5 else "nearest"
        case = random_case(CFG, op, rng, mode=mode, **dims)
        if op == "fwd" and rng.random() < 0.3:
            case["bp"] = 1
        if op == "bwd_weight" and rng.random() < 0.3:
            case["raw"] = 1
        try:
            case = validate_case(CFG, op, case)
        except CaseError:
            continue
        prog = program.build(CFG, op, case)
        out.append((op, case, msgs.cmd_fields(prog.cmds[prog.compute_index]), stride))
    return out


def test_derive_gives_the_python_programs_fields(libs):
    lib, _ = libs
    rng = np.random.default_rng(1)
    for op, _case, f, stride in _valid_commands(rng, 60):
        given = {k: (0 if k in DERIVED else v) for k, v in f.items()}
        code, got = lib.derive(given, stride)
        assert code == 0, (op, lib.error_str(code))
        assert got == f, (op, {k: (got[k], f[k]) for k in f if got[k] != f[k]})
        assert lib.check(got) == 0 == cmdcheck.check(got, CFG)
    code, _ = lib.derive(dict(op=2, n=1, c=1, k=1, h=4, w=4, r=3, s=3), 3)
    assert code == cmdcheck.CODE["STRIDE"]
    code, _ = lib.derive(dict(op=5, n=1, c=1, h=5, w=4, pk=2), 1)
    assert code == cmdcheck.CODE["POOL_SHAPE"]


def _base(op, dims=None, **extra):
    rng = np.random.default_rng(3)
    dims = dims or dict(n=1, c=3, k=3, h=4, w=4, r=3, s=3, pad=1)
    case = validate_case(CFG, op, dict(random_case(CFG, op, rng, **dims), **extra))
    prog = program.build(CFG, op, case)
    return msgs.cmd_fields(prog.cmds[prog.compute_index])


def _raises(fn, *args):
    try:
        fn(*args)
    except ValueError:
        return True
    return False


#: rule -> (the valid command, the bad fields); and which Python check also refuses the bad command
BAD = {
    "OP": (lambda: dict(op=9), None),
    "FIELD_WIDTH": (lambda: dict(_base("fwd"), lgst=8), "pack"),
    "TARGET": (lambda: dict(op=0, target=6, count=2), None),
    "STREAM_RANGE": (lambda: dict(op=0, target=0, addr=CFG.act_depth - 1, count=3 * CFG.P), None),  # wraps to word 0
    "SHIFT": (lambda: dict(_base("fwd"), shift=33), None),
    "ZERO_DIM": (lambda: dict(_base("fwd"), n=0), None),
    "TILES": (lambda: dict(_base("bwd_data"), ct=3), None),
    "PAD": (lambda: dict(_base("fwd"), pad=3), None),
    "PT": (lambda: dict(_base("bwd_weight"), pt=3), "check_cmd"),
    "WO": (lambda: dict(_base("fwd"), wo=5), None),
    "HI": (lambda: dict(_base("fwd"), hi=3), None),
    "POOL_K": (lambda: dict(_base("pool_fwd", k=2), pk=9), None),
    "POOL_SHAPE": (lambda: dict(_base("pool_bwd", k=2), ho=3), None),
    "BP": (lambda: dict(_base("bwd_data"), bp=1), "check_cmd"),
    "DSEL": (lambda: dict(_base("fwd"), dsel=3), "check_cmd"),
    "AMSEL": (lambda: dict(_base("fwd"), amsel=1), "check_cmd"),
    "RAW": (lambda: dict(_base("fwd"), raw=1), "check_cmd"),
    "POOL_SAME_BUF": (lambda: dict(_base("pool_fwd", k=2), dsel=1), "check_cmd"),
    "PRODUCT": (lambda: dict(_base("update"), crs=1), "products"),
    "RAW_LAYOUT": (lambda: dict(_base("bwd_weight", dict(n=1, c=1, k=1, h=4, w=4, r=1, s=1, pad=0), raw=1), d1=0),
                   "check_cmd"),
    "RANGE": (lambda: dict(_base("fwd"), a0=CFG.act_depth - 1), None),
    "SELF_OVERLAP": (lambda: dict(_base("fwd"), dsel=1), "check_cmd"),
}


@pytest.mark.parametrize("rule", list(BAD))
def test_each_rule_refuses_its_bad_field_with_its_code(libs, rule):
    lib, _ = libs
    make, also = BAD[rule]
    f = make()
    code = cmdcheck.CODE[rule]
    assert lib.check(f) == code == cmdcheck.check(f, CFG), (lib.check(f), cmdcheck.check(f, CFG))
    assert lib.error_str(code).startswith(rule + ":")
    full = {n: int(f.get(n, 0)) for n in NAMES}
    if also == "check_cmd":
        assert _raises(msgs.check_cmd, full, CFG)
    elif also == "products":
        assert _raises(encoding.products, full)
    elif also == "pack":
        assert _raises(lambda g: encoding.pack(**g), full)


def test_the_case_check_refuses_the_same_defects():
    """The rules that mirror pymtl_fp.engine.cases.validate_case: the case with the same defect is refused."""
    rng = np.random.default_rng(4)
    conv = random_case(CFG, "fwd", rng, n=1, c=3, k=3, h=4, w=4, r=3, s=3, pad=1)
    for bad in (dict(pad=3), dict(shift=33), dict(stride=3)):
        with pytest.raises(CaseError):
            validate_case(CFG, "fwd", dict(conv, **bad))
    with pytest.raises(CaseError, match="without stochastic"):
        validate_case(NOSTOCH, "fwd", dict(conv, mode="stochastic"))
    pool = random_case(CFG, "pool_fwd", rng, n=1, c=3, h=4, w=4)
    with pytest.raises(CaseError):
        validate_case(CFG, "pool_fwd", dict(pool, k=9))
    big = random_case(CFG, "fwd", rng, n=3, c=3, k=3, h=8, w=8, r=1, s=1, pad=0)  # 3*2*8*8 = 384 words of X
    with pytest.raises(CaseError, match="words of buffer X"):
        validate_case(CFG, "fwd", big)


def test_the_stochastic_rule_on_an_engine_without_it(libs):
    lib, nolib = libs
    f = _base("fwd")
    f["stoch"] = 1
    assert lib.check(f) == 0 == cmdcheck.check(f, CFG)
    assert nolib.check(f) == cmdcheck.CODE["STOCH"] == cmdcheck.check(f, NOSTOCH)


def test_c_and_python_agree_on_random_valid_and_mutated_commands(libs):
    lib, _ = libs
    rng = np.random.default_rng(7)
    seen = {0}
    for op, _case, f, _ in _valid_commands(rng, 40):
        assert lib.check(f) == 0 == cmdcheck.check(f, CFG)
        assert not _raises(msgs.check_cmd, f, CFG)
        for _ in range(12):
            g = dict(f)
            for name in rng.choice(NAMES, size=int(rng.integers(1, 3)), replace=False):
                bits = encoding.FIELD[name].bits
                g[name] = int(rng.integers(0, 1 << min(bits, 20))) if rng.random() < 0.5 else \
                    max(0, g[name] + int(rng.integers(-2, 3)))
            code = cmdcheck.check(g, CFG)
            assert lib.check(g) == code, (op, g, code)
            seen.add(code)
            if code == 0:  # accepted: the Python command checks accept it too
                assert not _raises(msgs.check_cmd, g, CFG) and not _raises(encoding.products, g), g
    assert len(seen) >= 10  # the mutations reached many rules
