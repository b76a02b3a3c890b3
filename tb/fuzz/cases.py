"""Case files: a drawn fuzz case (a dict of ints, strings, lists and NumPy arrays) as JSON.

NumPy arrays are stored as ``{"__ndarray__": nested list, "dtype": "int64"}`` so a case file is
readable, diffable and loads back to exactly the same arrays.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def _encode(obj):
    if isinstance(obj, np.ndarray):
        return {"__ndarray__": obj.tolist(), "dtype": str(obj.dtype), "shape": list(obj.shape)}
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, dict):
        return {str(k): _encode(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_encode(v) for v in obj]
    return obj


def _decode(obj):
    if isinstance(obj, dict):
        if "__ndarray__" in obj:
            try:
                dtype = np.dtype(obj["dtype"])
                if dtype.kind not in "biu":
                    raise ValueError(f"dtype {dtype} (cases hold integers and booleans)")
                return np.array(obj["__ndarray__"], dtype=dtype).reshape(obj["shape"])
            except (KeyError, TypeError, ValueError, OverflowError) as exc:
                raise ValueError(f"an array that does not decode: {exc}") from None
        return {k: _decode(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_decode(v) for v in obj]
    return obj


def dumps(case: dict) -> str:
    return json.dumps(_encode(case), indent=1, sort_keys=True)


def loads(text: str) -> dict:
    return _decode(json.loads(text))


def write_case(case: dict, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(case) + "\n")
    return path


def read_case(path) -> dict:
    """A case file, read with the limits of every input document (:mod:`pymtl_fp.documents`)."""
    from pymtl_fp.documents import DocumentError, read_document

    try:
        data = read_document(path, suffixes=(".json",))
    except DocumentError as exc:
        raise ValueError(f"--replay {exc}") from None
    try:
        return _decode(data)
    except ValueError as exc:
        raise ValueError(f"--replay {path}: {exc}") from None
