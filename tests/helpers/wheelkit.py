"""Build small, real, installable wheels (used by the tests and the benchmarks)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import json
import threading
import zipfile
from collections.abc import Iterator, Sequence
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


@contextlib.contextmanager
def local_index(wheels: Sequence[Path]) -> Iterator[str]:
    """A PEP 691 package index on 127.0.0.1 listing ``wheels`` with their sha256 and serving
    them; yields its ``/simple`` URL (for COMPATKIT_INDEX_URL)."""
    by_name = {w.name: w for w in wheels}

    def listing(project: str) -> bytes:
        files = [
            {"filename": n, "url": f"/files/{n}", "hashes": {"sha256": _sha256(w)}}
            for n, w in by_name.items()
            if n.split("-", 1)[0].replace("_", "-").lower() == project
        ]
        return json.dumps({"files": files}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if len(parts) == 2 and parts[0] == "simple":
                body, kind = listing(parts[1]), "application/vnd.pypi.simple.v1+json"
            elif len(parts) == 2 and parts[0] == "files" and parts[1] in by_name:
                body, kind = by_name[parts[1]].read_bytes(), "application/octet-stream"
            else:
                self.send_error(404)
                return
            if kind != "application/octet-stream":  # absolute URLs, as an index gives them
                body = body.replace(b'"/files/', f'"http://{self.headers["Host"]}/files/'.encode())
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
