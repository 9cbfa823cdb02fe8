"""SHA-256 for the start-up path, without importing hashlib.

``hashlib`` loads OpenSSL (≈ 2.5 ms of every command that imports it: benchmark P1). The
interpreter's own SHA-256 module is loaded in ≈ 0.1 ms but hashes ≈ 7× slower (5.5 ms per MiB
here, against OpenSSL's 0.75 ms), so :func:`sha256` uses it for small inputs only and
hashlib's for the rest: the same digests either way.

>>> sha256(b"abc").hexdigest()[:16], sha256(b"abc" * 50_000).hexdigest() == sha256(
...     b"abc" * 50_000, small=False).hexdigest()
('ba7816bf8f01cfea', True)
"""

from __future__ import annotations

__all__ = ["SMALL", "Hash", "sha256"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import _Hash as Hash

try:  # CPython 3.12+: _sha2; 3.10, 3.11: _sha256; another interpreter may have neither
    from _sha2 import sha256 as _builtin  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256 as _builtin  # type: ignore[import-not-found, no-redef, unused-ignore]
    except ImportError:  # pragma: no cover
        _builtin = None

# Below this size the built-in module's slower hashing costs less than importing hashlib.
SMALL = 256 * 1024


def sha256(data: bytes = b"", small: bool | None = None) -> Hash:
    """A SHA-256 hash object of ``data`` (``small``: force the choice; None: by size)."""
    if small is None:
        small = len(data) <= SMALL
    if small and _builtin is not None:
        return _builtin(data)  # type: ignore[no-any-return]
    import hashlib

    return hashlib.sha256(data)
