"""SHA-256 for the start-up path, without importing hashlib.

``hashlib`` loads OpenSSL (a cost of every command that imports it: benchmark P1). The
interpreter's own SHA-256 module loads in a fraction of that but hashes several times slower
than OpenSSL, so :func:`sha256` uses it while the process has hashed
little (:data:`SMALL` bytes in all: what a status or an explain hashes) and hashlib's after
that (an apply hashes every file it touches several times): the same digests either way.

>>> sha256(b"abc").hexdigest()[:16], sha256(b"abc" * 50_000).hexdigest() == sha256(
...     b"abc" * 50_000, small=False).hexdigest()
('ba7816bf8f01cfea', True)
"""

from __future__ import annotations

__all__ = ["SMALL", "Hash", "digest", "forget", "remember", "sha256"]

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

# Up to this many bytes in all, the built-in module's slower hashing costs less than
# importing hashlib (docs/benchmarks.md, P1).
SMALL = 256 * 1024
_budget = [SMALL]


def sha256(data: bytes = b"", small: bool | None = None, size: int | None = None) -> Hash:
    """A SHA-256 hash object of ``data`` (``small``: force the choice; None: the built-in
    module while this process has hashed less than :data:`SMALL` bytes with it). ``size``:
    how many bytes it will hash in all, when they come later through ``update`` (a file
    streamed by :func:`compatkit.bounded.sha256`); ``len(data)`` if not given."""
    if small is None:
        size = len(data) if size is None else size
        small = size <= _budget[0]
        if small:
            _budget[0] -= size
    if small and _builtin is not None:
        return _builtin(data)  # type: ignore[no-any-return]
    import hashlib

    return hashlib.sha256(data)


# While a session holds a distribution's lock (compatkit.env.session), the digest of each bytes
# object hashed: a transaction hashes a file's bytes for its RECORD check, its state, its RECORD
# row and its journal, the same object each time. Keyed by the object's identity and holding
# the object (so its id is not reused while here); bytes only (immutable); off (None) outside
# a session, so nothing stays alive after it.
_memo: list[dict[int, tuple[bytes, bytes]] | None] = [None]
_depth = [0]


def remember() -> None:
    """From here to the matching :func:`forget`, :func:`digest` hashes each object once."""
    _depth[0] += 1
    if _memo[0] is None:
        _memo[0] = {}


def forget() -> None:
    _depth[0] -= 1
    if _depth[0] <= 0:
        _depth[0], _memo[0] = 0, None


def digest(data: bytes) -> bytes:
    """``sha256(data).digest()``; once per bytes object between :func:`remember` and
    :func:`forget`."""
    memo = _memo[0]
    if memo is None or type(data) is not bytes:
        return sha256(data).digest()
    hit = memo.get(id(data))
    if hit is not None and hit[0] is data:
        return hit[1]
    value = sha256(data).digest()
    memo[id(data)] = (data, value)
    return value
