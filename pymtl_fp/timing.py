"""The engine's closed-form cycle counts, :mod:`pymtl_fp.cost.engine`, under the name the engine, its
test benches, the compiler and the CLI import (every name of that module, not a copy of any)."""

from pymtl_fp.cost.engine import *  # noqa: F403
