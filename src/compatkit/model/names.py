"""Distribution names, normalised as PEP 503 says (without importing packaging: start-up time).

>>> canonical_name("Foo.Bar__baz")
'foo-bar-baz'
"""

from __future__ import annotations

import re

_RUNS = re.compile(r"[-_.]+")


def canonical_name(name: str) -> str:
    return _RUNS.sub("-", name).lower()
