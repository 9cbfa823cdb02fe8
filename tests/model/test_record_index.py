"""A RECORD asked for many paths indexes its lines once (``Record._first_fields``) instead of
searching its whole text for each path: a patch of thousands of files made apply and revert
quadratic in the number of files (bench/p2_apply.py, P2-n5000). The index must find exactly
the lines the search finds, for every path, in every RECORD: quoted paths, doubled quotes,
quotes never closed, a quoted field followed by more than a comma, empty fields, repeats and
both terminators."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compatkit.model import records
from compatkit.model.records import Record, row_for

# first fields as writers leave them: plain, quoted when they must be, quoted when they need
# not be, doubled quotes, a quote never closed, text after the closing quote, empty
_LINES = [
    "a.py,h,1",
    "a.pyc,h,2",
    "a,h,3",
    "a",
    "",
    ",h,4",
    '"a.py",h,5',
    '"b,c.py",h,6',
    '"b,c.py"',
    '"q""x.py",h,7',
    '"q""x.py"x,h,8',
    '"never closed,h,9',
    '"""',
    '""',
    '"",h,10',
    'x"y.py,h,11',
    "d/e.py,h,12",
    "d/e.py\r,h,13",
    "é/f.py,h,14",
    "\udcc3/x.py,h,15",
]
_PROBES = [
    "a.py",
    "a.pyc",
    "a",
    "",
    "b,c.py",
    'q"x.py',
    'q"x.py"x',
    "never closed",
    '"',
    'x"y.py',
    "d/e.py",
    "d/e.py\r",
    "é/f.py",
    "\udcc3/x.py",
    "\udcc3\udca9/f.py",
    "n.py",
]


def _indexed(data: bytes) -> Record:
    """The record of ``data`` as it answers once it has searched often: from its index."""
    record = Record.parse(data)
    record._searches = records._SEARCHES
    return record


@given(
    lines=st.lists(st.sampled_from(_LINES), min_size=1, max_size=12),
    ending=st.sampled_from(["\n", "\r\n", ""]),
    replaced=st.sets(st.sampled_from(["a.py", "b,c.py", 'q"x.py', "", "n.py"])),
    removed=st.sets(st.sampled_from(["a", "d/e.py", "é/f.py", "b,c.py", '"'])),
)
def test_the_index_finds_the_lines_the_search_finds(
    lines: list[str], ending: str, replaced: set[str], removed: set[str]
) -> None:
    end = ending or "\n"
    data = (end.join(lines) + ending).encode("utf-8", "surrogateescape")
    searched, indexed = Record.parse(data), _indexed(data)
    for p in _PROBES:
        assert indexed._lines_of(p) == searched._lines_of(p), p
        assert indexed.get(p) == searched.get(p), p
        assert indexed.index(p) == searched.index(p), p
    assert indexed._index is not None and searched._index is None
    replace = {p: row_for(p, p.encode("utf-8", "surrogateescape")) for p in replaced}
    got = _indexed(data).edit(replace, removed, [row_for("n.py", b"n")])
    expected = Record.parse(data).edit(replace, removed, [row_for("n.py", b"n")])
    assert got.render() == expected.render()


def test_a_record_indexes_its_lines_after_many_searches_and_not_before() -> None:
    """A few lookups search (a small patch to a big distribution splits nothing: issue 36,
    G-apply); the lookup after ``_SEARCHES`` searches builds the index, and the lookups after
    it are answered from it."""
    data = "".join(f"pkg/m{i}.py,sha256=h{i},{i}\n" for i in range(300)).encode()
    record = Record.parse(data)
    for i in range(records._SEARCHES):
        assert record.index(f"pkg/m{i}.py") == i
    assert record._index is None
    assert record.index("pkg/m299.py") == 299
    assert record._index is not None
    assert record.index("pkg/m300.py") is None and record.index("pkg/m2.py") == 2


@pytest.mark.parametrize("ending", ["\n", "\r\n"])
def test_an_indexed_record_edits_a_thousand_rows_as_a_searching_one(ending: str) -> None:
    """Every row of a 1,000-row RECORD replaced, some removed and new ones appended: the same
    bytes whether the lookups search or come from the index."""
    data = "".join(f"pkg/m{i}.py,sha256=h{i},{i}{ending}" for i in range(1000)).encode()
    replace = {f"pkg/m{i}.py": row_for(f"pkg/m{i}.py", b"new") for i in range(0, 1000, 2)}
    remove = {f"pkg/m{i}.py" for i in range(1, 1000, 7)}
    append = [row_for(f"pkg/__pycache__/m{i}.pyc", b"pyc") for i in range(50)]
    searching = Record.parse(data)
    searching._searches = -(10**6)  # never indexes
    expected = searching.edit(replace, remove, append)
    got = Record.parse(data).edit(replace, remove, append)
    assert got.render() == expected.render()
    assert got.rows == expected.rows


def test_the_index_finds_a_line_csv_cannot_read() -> None:
    """A line csv refuses (a carriage return in an unquoted field of a LF-terminated RECORD)
    still starts with its path followed by a comma: the search finds it, so the index must
    (it reads the first field as written, not as csv reads the line)."""
    data = b"a,h\r,1\nb.py,h,2\n"
    assert Record.parse(data).index("a") == _indexed(data).index("a") == 0
