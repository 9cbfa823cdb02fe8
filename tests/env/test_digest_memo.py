"""compatkit.digest's memo (issue 48): while a session holds the lock each bytes object is hashed
once, always to its own digest; outside a session nothing is kept."""

from __future__ import annotations

import hashlib

from compatkit import digest
from compatkit.env.session import Session
from helpers import Demo


def test_each_object_gets_its_own_digest_and_nothing_is_kept_after() -> None:
    digest.remember()
    try:
        # many short-lived objects of the same length: an id freed and reused must never
        # answer for another object (the memo holds each object it answers for)
        for i in range(2_000):
            data = b"%06d" % i
            assert digest.digest(data) == hashlib.sha256(data).digest()
        kept = digest._memo[0]
        assert kept is not None and len(kept) == 2_000
        # a mutable buffer is hashed every time, never remembered
        buffer = bytearray(b"abc")
        first = digest.digest(buffer)  # type: ignore[arg-type]
        buffer[0] = ord("x")
        assert digest.digest(buffer) == hashlib.sha256(b"xbc").digest() != first  # type: ignore[arg-type]
    finally:
        digest.forget()
    assert digest._memo[0] is None


def test_a_session_remembers_while_it_is_open(demo: Demo) -> None:
    from compatkit.env.target import Environment

    dist = Environment.for_python(demo.venv.python).find("demo")
    assert dist is not None
    assert digest._memo[0] is None
    with Session.open(dist):
        assert digest._memo[0] is not None
    assert digest._memo[0] is None
