"""Distribution names compared as the standards compare them.

PEP 503 ("Normalized Names", https://peps.python.org/pep-0503/#normalized-names) defines a
project's normalized name as the name with every run of ``-``, ``_`` and ``.`` replaced by one
``-``, lower-cased: ``re.sub(r"[-_.]+", "-", name).lower()``. :func:`normalize_name` is that
definition, written once. It stands in for ``packaging.utils.canonicalize_name``, whose module
imports ``packaging.tags`` (and with it ``logging``, ``platform``, ``subprocess`` and
``sysconfig``) that no command needs for a name; tests/model/test_names.py checks the two
agree. Nothing else of packaging is done here.

>>> normalize_name("Foo.Bar_baz"), normalize_name("oslo..concurrency"), normalize_name("requests")
('foo-bar-baz', 'oslo-concurrency', 'requests')
"""

from __future__ import annotations

import re

__all__ = ["normalize_name"]

_SEPARATORS = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """``name`` normalized by PEP 503: ``re.sub(r"[-_.]+", "-", name).lower()``."""
    return _SEPARATORS.sub("-", name).lower()
