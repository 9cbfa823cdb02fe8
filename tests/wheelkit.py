"""Build small, real, installable wheels (used by the tests and the benchmarks)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def build_wheel(
    directory: Path,
    name: str,
    version: str,
    files: dict[str, bytes],
    requires: tuple[str, ...] = (),
) -> Path:
    """A real, installable pure-Python wheel holding ``files`` (``requires``: Requires-Dist)."""
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    depends = "".join(f"Requires-Dist: {r}\n" for r in requires)
    meta = {
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{depends}"
        ).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: compatkit-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    everything = {**files, **meta}
    record = "".join(f"{p},{_hash(d)},{len(d)}\n" for p, d in everything.items())
    record += f"{info}/RECORD,,\n"
    path = directory / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for p, d in everything.items():
            zf.writestr(p, d)
        zf.writestr(f"{info}/RECORD", record)
    return path
