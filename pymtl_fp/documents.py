"""Reading the TOML/JSON documents users hand us (net descriptions, devices files, replay files).

One reader for all of them, so every document gets the same limits before it is parsed: at most
``MAX_DOCUMENT_BYTES``, UTF-8, at most ``MAX_DOCUMENT_DEPTH`` levels of nested tables/arrays (a
deeply nested file would otherwise end in a ``RecursionError``), finite numbers only (no NaN or
infinity, which JSON readers and TOML accept), a table at the top level.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path

#: largest input document read; ours are a few kB
MAX_DOCUMENT_BYTES = 4 << 20
#: deepest nesting of tables/arrays in an input document (ours nest 3 deep)
MAX_DOCUMENT_DEPTH = 32


class DocumentError(ValueError):
    """A document that cannot be read; the message starts with the path."""


def _depth(text: str) -> int:
    """Upper bound of the nesting depth of a TOML/JSON text (brackets outside strings are not
    told apart from those inside: a bound, which is all the check needs)."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


class _NonFinite(Exception):
    pass


def _no_constant(text: str):
    raise _NonFinite(text)


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text)
    return value


def _where_non_finite(text: str, token: str) -> str:
    """``key = token`` (or ``line N: token``) of the first non-finite number in the text."""
    bare = token.lstrip("+-")
    m = re.search(r'"?([A-Za-z_][\w-]*)"?\s*[:=]\s*[-+]?' + re.escape(bare) + r"\b", text)
    if m:
        return f"{m.group(1)} = {token}"
    line = text[: max(0, text.find(bare))].count("\n") + 1
    return f"line {line}: {token}"


def _existing_file(path: Path):
    """``os.stat`` of a regular file; :class:`DocumentError` if there is none (or the operating
    system refuses the name: too long, a path through a file, ...)."""
    try:
        if not path.is_file():
            raise DocumentError(f"{path}: no such file")
        return path.stat()
    except OSError as exc:
        raise DocumentError(f"{str(path)[:200]}: {exc.strerror or exc}") from None


def read_document(path, suffixes=(".toml", ".json")) -> dict:
    """Parse a TOML or JSON input file (by suffix) into a dict; one-line errors for a missing,
    oversized, non-UTF-8, too deeply nested or malformed file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        raise DocumentError(f"{path}: the file name must end in {' or '.join(suffixes)}")
    size = _existing_file(path).st_size
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentError(f"{path}: {size} bytes; at most {MAX_DOCUMENT_BYTES} bytes are read")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise DocumentError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if _depth(text) > MAX_DOCUMENT_DEPTH:
        raise DocumentError(f"{path}: nested too deep (at most {MAX_DOCUMENT_DEPTH} levels of tables/arrays)")
    try:
        if suffix == ".json":
            doc = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
        else:
            doc = tomllib.loads(text, parse_float=_finite)
    except _NonFinite as exc:
        raise DocumentError(f"{path}: {_where_non_finite(text, str(exc))} is not a finite number "
                            "(NaN and infinities are refused)") from None
    except json.JSONDecodeError as exc:
        raise DocumentError(f"{path}: bad JSON: {exc.msg} at line {exc.lineno}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DocumentError(f"{path}: bad TOML: {exc}") from None
    except RecursionError:
        raise DocumentError(f"{path}: nested too deep") from None
    if not isinstance(doc, dict):
        raise DocumentError(f"{path}: expected a table/object at the top level")
    return doc


#: most elements one array of an ``.npz`` input may declare (engine cases are a few thousand)
MAX_NPZ_ELEMENTS = 1 << 24
#: most arrays in one ``.npz`` input
MAX_NPZ_MEMBERS = 64


def read_npz(path, max_elements: int = MAX_NPZ_ELEMENTS) -> dict:
    """The arrays of an ``.npz`` file as ``{name: ndarray}``, checked before any array is read:
    a zip of ``.npy`` members only, at most ``MAX_NPZ_MEMBERS`` of them, numeric or short-string
    dtypes (no pickled objects), each declaring at most ``max_elements`` elements, so a small file
    that would unpack to gigabytes is refused at once."""
    import zipfile

    import numpy as np

    path = Path(path)
    _existing_file(path)
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        with zipfile.ZipFile(path) as z:
            members = z.infolist()
            if len(members) > MAX_NPZ_MEMBERS:
                raise DocumentError(f"{path}: {len(members)} members; at most {MAX_NPZ_MEMBERS}")
            keys = []
            for info in members:
                name = info.filename
                if not name.endswith(".npy"):
                    raise DocumentError(f"{path}: member {name!r} is not an .npy array")
                with z.open(info) as f:
                    version = np.lib.format.read_magic(f)
                    if version not in readers:
                        raise DocumentError(f"{path}: member {name!r} is .npy format {version}; 1.0 or 2.0 are read")
                    shape, _, dtype = readers[version](f)
                    key = name[:-4]
                    if dtype.hasobject or dtype.kind not in "biufUS":
                        raise DocumentError(f"{path}: {key} has dtype {dtype}; only numbers and short "
                                            "strings are read")
                    n = math.prod(shape)
                    if n > max_elements:
                        raise DocumentError(f"{path}: {key} declares shape {shape} = {n} elements; "
                                            f"at most {max_elements}")
                keys.append(key)
            with np.load(path, allow_pickle=False) as npz:
                return {k: npz[k] for k in keys}
    except DocumentError:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DocumentError(f"{path}: not a readable .npz file ({exc})") from None
