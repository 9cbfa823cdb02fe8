"""A tiny, byte-preserving model of a wheel's ``RECORD`` file (pure).

Rows keep their raw text, so rewriting one row leaves every other byte of the file as it was,
and putting the original row back gives the original file byte for byte.

>>> rec = Record.parse(b"pkg/m.py,sha256=abc,3\\npkg-1.dist-info/RECORD,,\\n")
>>> rec.get("pkg/m.py").size
3
>>> rec.replace("pkg/m.py", row_for("pkg/m.py", b"xyz")).render()
b'pkg/m.py,sha256=Ngi8oeROpsTSaOttsCJgJpiSwLQrhrvx53pvoWw8koI,3\\npkg-1.dist-info/RECORD,,\\n'
"""

from __future__ import annotations

import binascii
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet

from compatkit.digest import digest, sha256
from compatkit.value import Value

TYPE_CHECKING = False  # not typing's: the read-only commands do not import typing

if TYPE_CHECKING:
    from typing import TypeVar

    _S = TypeVar("_S")

# base64.urlsafe_b64encode is b2a_base64 with "+/" -> "-_"; binascii is built in, base64 and
# csv are imported on demand (their imports are a fixed cost of every apply, benchmark P5)
_URLSAFE = bytes.maketrans(b"+/", b"-_")


def hash_bytes(data: bytes, threads: bool = False) -> str:
    """RECORD's ``sha256=`` form of ``data``'s hash.

    Small inputs are hashed by the interpreter's built-in SHA-256 (compatkit.digest): status
    and verify hash a few patched files, and importing hashlib (OpenSSL) would cost more than
    the hashing (P1). ``threads``: the caller hashes many files (pristine's
    workers), so always OpenSSL's, faster per byte, which releases the GIL.
    """
    return record_hash(sha256(data, small=False).digest() if threads else digest(data))


def record_hash(digest: bytes) -> str:
    """RECORD's ``sha256=`` form of a SHA-256 ``digest`` (a file's, hashed as it is streamed:
    :func:`compatkit.bounded.sha256`)."""
    encoded = binascii.b2a_base64(digest, newline=False).translate(_URLSAFE).rstrip(b"=")
    return "sha256=" + encoded.decode("ascii")


class Row(Value):
    __slots__ = ("path", "hash", "size", "raw")

    def __init__(self, path: str, hash: str, size: int | None, raw: str) -> None:
        self.path = path
        self.hash = hash  # "sha256=…" or ""
        self.size = size
        self.raw = raw  # the row's text without its line terminator

    @classmethod
    def from_raw(cls, raw: str) -> Row:
        if '"' not in raw:
            fields = raw.split(",")  # what csv makes of a row without quotes
        else:
            import csv

            try:
                fields = next(csv.reader([raw]))
            except (csv.Error, StopIteration):
                fields = [raw]
        path = fields[0] if fields else ""
        digest = fields[1] if len(fields) > 1 else ""
        size_text = fields[2] if len(fields) > 2 else ""
        size = int(size_text) if size_text.isdigit() else None
        return cls(path, digest, size, raw)


def row_for(path: str, data: bytes | None) -> Row:
    """A RECORD row for ``path`` holding ``data`` (None: no hash, as for RECORD itself)."""
    return row_with(path, None if data is None else (hash_bytes(data), len(data)))


def row_with(path: str, digest: tuple[str, int] | None) -> Row:
    """A RECORD row for ``path`` with ``digest`` (its RECORD hash and size, as a file hashed
    while streamed has them; None: no hash, as for RECORD itself)."""
    if not any(c in path for c in ',"\r\n'):  # nothing to quote: what csv would write
        row = f"{path},," if digest is None else f"{path},{digest[0]},{digest[1]}"
        return Row.from_raw(row)
    import csv
    import io

    buf = io.StringIO()
    fields = [path, "", ""] if digest is None else [path, *digest]
    csv.writer(buf, lineterminator="").writerow(fields)
    return Row.from_raw(buf.getvalue())


def _encoded(text: str) -> bytes | None:
    """``text`` as a RECORD's bytes hold it (None: no decoded RECORD holds it, such as a
    surrogate escape that stands for a valid character's bytes)."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    return data if data.decode("utf-8", "surrogateescape") == text else None


# the bytes and record of the last Record.parse (see Record.paths_in)
_LAST: list[tuple[bytes, Record]] = []


def _lines(data: bytes) -> tuple[list[str], str, bool]:
    """A RECORD's rows (raw text), its line terminator and whether it ends with one."""
    text = data.decode("utf-8", "surrogateescape")
    terminator = "\r\n" if "\r" in text and "\r\n" in text else "\n"  # "\r": one fast scan
    final_newline = text.endswith("\n")
    body = text[: -len(terminator)] if text.endswith(terminator) else text
    return (body.split(terminator) if body else []), terminator, final_newline


class Record(Value):
    """A RECORD's rows, in order. One parsed from bytes builds a :class:`Row` per line only
    when something asks for them all: a command that reads or edits a few rows of a
    15,000-row RECORD reads their paths alone (issue 36, G-apply). A row is a function of its
    raw text (every row is made by :meth:`Row.from_raw`), so records compare by raw text.

    A parsed RECORD without quote characters (what installers write: a path needs quotes only
    when it holds a comma, a quote or a line break) is kept as its bytes, neither decoded nor
    split into lines: a row's path is then the text before its first comma, so a lookup is a
    search for the line starting with the path's bytes and a comma (or made of the path
    alone), and an edit splices the few lines it changes (issue 36, G-apply). UTF-8 never
    puts a line break, a comma or a quote inside a character, so the bytes split where the
    text would. Any other record is a list of lines."""

    __slots__ = (
        "_rows",
        "_raws",
        "_text",
        "terminator",
        "final_newline",
        "_index",
        "_paths",
        "_hits",
        "_folders",
        "_numbered",
    )

    def __init__(self, rows: tuple[Row, ...], terminator: str, final_newline: bool) -> None:
        self._rows: tuple[Row, ...] | None = rows
        self._raws: list[str] | None = None  # the rows' raw text while ``_rows`` is None
        self._text: bytes | None = None  # or: each line, then the terminator (encoded)
        self.terminator = terminator
        self.final_newline = final_newline
        self._index: dict[str, int] | None = None
        self._paths: list[str] | None = None
        self._hits: dict[str, list[int]] = {}  # a path -> where its lines start in ``_text``
        self._folders: dict[str, bool] = {}  # a folder -> whether a line's path is below it
        # lines of ``_text`` numbered so far: their starts (sorted) and their numbers
        self._numbered: tuple[list[int], list[int]] = ([], [])

    @classmethod
    def _of_raws(cls, raws: list[str], terminator: str, final_newline: bool) -> Record:
        record = cls((), terminator, final_newline)
        record._rows, record._raws = None, raws
        return record

    @classmethod
    def _of_text(cls, text: bytes, terminator: str, final_newline: bool) -> Record:
        """``text``: one or more lines (none holding a quote character), each followed by the
        terminator; UTF-8 with surrogate escapes, as :meth:`render` writes."""
        record = cls((), terminator, final_newline)
        record._rows, record._text = None, text
        return record

    @classmethod
    def parse(cls, data: bytes) -> Record:
        end = b"\r\n" if b"\r" in data and b"\r\n" in data else b"\n"  # "\r": one fast scan
        if b'"' in data or data in (b"", end):  # quotes; or no line at all (as _lines)
            record = cls._of_raws(*_lines(data))
        else:
            text = data if data.endswith(end) else data + end  # the bytes read: no copy
            record = cls._of_text(text, end.decode(), data.endswith(b"\n"))
        _LAST[:] = [(data, record)]
        return record

    @property
    def rows(self) -> tuple[Row, ...]:
        if self._rows is None:
            self._rows = tuple(Row.from_raw(r) for r in self._raw_list())
            self._raws, self._text = None, None
        return self._rows

    def _raw_list(self) -> list[str]:
        if self._rows is not None:
            return [r.raw for r in self._rows]
        if self._raws is None:
            assert self._text is not None  # one of the three is set
            cut = len(self.terminator)
            text = self._text[:-cut].decode("utf-8", "surrogateescape")
            self._raws = text.split(self.terminator)
        return self._raws

    def _path_list(self) -> list[str]:
        """Each row's path, in order, without building the rows."""
        if self._paths is None:
            if self._rows is None:  # Row.from_raw(r).path; split inline for a row without quotes
                self._paths = [
                    r.partition(",")[0] if '"' not in r else Row.from_raw(r).path
                    for r in self._raw_list()
                ]
            else:
                self._paths = [r.path for r in self._rows]
        return self._paths

    def _searched(self) -> bool:
        """Whether lookups search the text (no index was built)."""
        return self._text is not None and self._index is None

    def _lines_of(self, path: str) -> list[int]:
        """Where each line whose path is ``path`` starts in ``_text``, in order: the lines
        that are ``path`` followed by a comma or by the terminator. A path holding a comma or
        the terminator is no line's path, nor is one in a folder no line's path is in (found
        once for the folder: the bytecode or the backups of a few modules, looked up one by
        one, cost one search in all)."""
        hits = self._hits.get(path)
        if hits is not None:
            return hits
        text, end = self._text, self.terminator.encode()
        assert text is not None
        hits = self._hits[path] = []
        key = _encoded(path)
        if key is None or b"," in key or end in key or not self._has_folder(path):
            return hits
        start = 0 if text.startswith(key) else -1  # the first line; then each after a terminator
        if start < 0:
            start = text.find(end + key)
            start = start + len(end) if start >= 0 else -1
        while start >= 0:
            after = start + len(key)
            if text.startswith(b",", after) or text.startswith(end, after):
                hits.append(start)
            start = text.find(end + key, start)
            start = start + len(end) if start >= 0 else -1
        return hits

    def _has_folder(self, path: str) -> bool:
        """Whether a line's path is in the folder holding ``path`` (or below it)."""
        folder = path.rpartition("/")[0]
        if not folder:  # the root
            return True
        known = self._folders.get(folder)
        if known is None:
            key = _encoded(folder + "/")
            assert self._text is not None and key is not None  # path's own was
            known = self._has_folder(folder) and (
                self._text.startswith(key) or self.terminator.encode() + key in self._text
            )
            self._folders[folder] = known
        return known

    def _line_at(self, start: int) -> str:
        """The line starting at ``start`` of ``_text``."""
        assert self._text is not None
        line = self._text[start : self._text.find(self.terminator.encode(), start)]
        return line.decode("utf-8", "surrogateescape")

    def _fields(self) -> tuple[object, ...]:
        return (tuple(self._raw_list()), self.terminator, self.final_newline)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        if self._text is not None and other._text is not None:  # no need to split the lines
            return (self._text, self.terminator, self.final_newline) == (
                other._text,
                other.terminator,
                other.final_newline,
            )
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"Record(rows={self.rows!r}, terminator={self.terminator!r}, " + (
            f"final_newline={self.final_newline!r})"
        )

    def owned(self) -> AbstractSet[str]:
        """:meth:`paths` as a set view: a membership test is a lookup (see :class:`Record`),
        and only iterating lists every path."""
        return _Paths(self)

    @staticmethod
    def paths_in(data: bytes) -> AbstractSet[str]:
        """``parse(data).paths()`` without the rest: a check that needs only who owns what.

        >>> sorted(Record.paths_in(b'a.py,sha256=x,1\\n"b,c.py",,\\n'))
        ['a.py', 'b,c.py']

        The same bytes as the last :meth:`parse` (a transaction's check of the RECORD its plan
        read, re-read under the lock) take that record's paths: the answer is a function of
        the bytes, compared whole (its :meth:`owned` view: no line is split for it).
        """
        if _LAST and _LAST[0][0] == data:
            return _LAST[0][1].owned()
        return {  # as _path_list: Row.from_raw(r).path, split inline without quotes
            r.partition(",")[0] if '"' not in r else Row.from_raw(r).path for r in _lines(data)[0]
        }

    def render(self) -> bytes:
        if self._rows is None and self._text is not None:  # the bytes it was parsed from
            return self._text if self.final_newline else self._text[: -len(self.terminator)]
        raws = self._raw_list()
        text = self.terminator.join(raws)
        if raws and self.final_newline:
            text += self.terminator
        return text.encode("utf-8", "surrogateescape")

    @property
    def _positions(self) -> dict[str, int]:
        if self._index is None:  # each path's first row: later rows overwrite, so go backwards
            paths = self._path_list()
            self._index = {paths[i]: i for i in range(len(paths) - 1, -1, -1)}
        return self._index

    def get(self, path: str) -> Row | None:
        if self._searched():
            hits = self._lines_of(path)
            return Row.from_raw(self._line_at(hits[0])) if hits else None
        i = self._positions.get(path)
        if i is None:
            return None
        return self._rows[i] if self._rows is not None else Row.from_raw(self._raw_list()[i])

    def paths(self) -> set[str]:
        return set(self._path_list())

    def replace(self, path: str, row: Row) -> Record:
        return Record(
            tuple(row if r.path == path else r for r in self.rows),
            self.terminator,
            self.final_newline,
        )

    def without(self, paths: set[str]) -> Record:
        return Record(
            tuple(r for r in self.rows if r.path not in paths),
            self.terminator,
            self.final_newline,
        )

    def with_rows(self, rows: list[Row]) -> Record:
        existing = self.paths()
        new = tuple(r for r in rows if r.path not in existing)
        return Record(self.rows + new, self.terminator, self.final_newline or not self.rows)

    def index(self, path: str) -> int | None:
        if self._searched():
            assert self._text is not None
            hits = self._lines_of(path)
            return self._line_number(hits[0]) if hits else None
        return self._positions.get(path)

    def _line_number(self, start: int) -> int:
        """How many lines begin before ``start`` (where a line of ``_text`` begins): the
        terminators before it, counted on from the nearest line numbered already (a plan
        numbers every file it changes and its bytecode: counting each from the top is
        quadratic)."""
        import bisect  # here: only numbering lines needs it

        assert self._text is not None
        offsets, numbers = self._numbered
        i = bisect.bisect_right(offsets, start)
        if i and offsets[i - 1] == start:
            return numbers[i - 1]
        base, before = (offsets[i - 1], numbers[i - 1]) if i else (0, 0)
        number = before + self._text.count(self.terminator.encode(), base, start)
        offsets.insert(i, start)
        numbers.insert(i, number)
        return number

    def edit(self, replace: dict[str, Row], remove: set[str], append: list[Row]) -> Record:
        """Many row edits in one pass (a row-at-a-time loop is quadratic on big RECORDs), on
        the raw text: no row is built for the lines it keeps (in a record kept as its text,
        no line is split: see :class:`Record`)."""
        if self._searched():
            new = [_encoded(r.raw) for r in (*replace.values(), *append)]
            end = self.terminator.encode()
            if all(r is not None and b'"' not in r and end not in r for r in new):
                return self._edit_text(replace, remove, append)
        raws, paths = self._raw_list(), self._path_list()
        kept = [
            replace[p].raw if p in replace else raw
            for raw, p in zip(raws, paths, strict=True)
            if p not in remove
        ]
        if all(row.path == p for p, row in replace.items()):  # as row_for makes them
            present = set(paths).difference(remove)
        else:
            present = {replace[p].path if p in replace else p for p in paths if p not in remove}
        kept += [r.raw for r in append if r.path not in present]
        return Record._of_raws(kept, self.terminator, self.final_newline or not raws)

    def _edit_text(self, replace: dict[str, Row], remove: set[str], append: list[Row]) -> Record:
        """:meth:`edit` of a record kept as its bytes, its new lines holding no quote character
        and no terminator: the lines it replaces or removes are spliced, the rest is copied
        once."""
        text, end = self._text, self.terminator.encode()
        assert text is not None
        lines = sorted((i, p) for p in replace.keys() | remove for i in self._lines_of(p))
        whole = memoryview(text)
        pieces: list[bytes | memoryview] = []
        done = 0
        for start, p in lines:  # each line and its terminator: [start, next line)
            pieces.append(whole[done:start])
            if p not in remove:
                pieces.append(replace[p].raw.encode("utf-8", "surrogateescape") + end)
            done = text.find(end, start) + len(end)
        pieces.append(whole[done:])

        # the paths the kept replaced lines take (edit's ``present``), found once: looked up
        # per appended row, a search of ``replace`` each is quadratic (a pyc backup per file)
        renamed = {row.path for p, row in replace.items() if p not in remove and self._lines_of(p)}

        def present(path: str) -> bool:  # a line kept has this path (edit's ``present``)
            if path not in remove and path not in replace and self._lines_of(path):
                return True
            return path in renamed

        pieces += [
            r.raw.encode("utf-8", "surrogateescape") + end for r in append if not present(r.path)
        ]
        kept = b"".join(pieces)
        if not kept:  # every line removed, none added
            return Record._of_raws([], self.terminator, self.final_newline)
        return Record._of_text(kept, self.terminator, self.final_newline)

    def insert_all(self, rows: list[tuple[int, Row]]) -> Record:
        """``insert(index, row)`` for each pair in turn, in one pass (a loop is quadratic).

        One pass when the indexes strictly ascend and the paths are new and distinct (as in a
        revert, which drops the rows first): each row then lands at its index, or at the end
        if the RECORD is shorter. Otherwise row by row.
        """
        paths = {row.path for _, row in rows}
        ascending = all(rows[k][0] < rows[k + 1][0] for k in range(len(rows) - 1))
        if len(paths) < len(rows) or not ascending or not paths.isdisjoint(self._positions):
            record = self
            for index, row in rows:
                record = record.insert(index, row)
            return record
        rest = list(self.rows)
        out: list[Row] = []
        taken = 0
        for index, row in rows:
            fill = max(0, min(index - len(out), len(rest) - taken))
            out += rest[taken : taken + fill]
            taken += fill
            out.append(row)
        out += rest[taken:]
        return Record(tuple(out), self.terminator, self.final_newline or not self.rows)

    def insert(self, index: int | None, row: Row) -> Record:
        rows = [r for r in self.rows if r.path != row.path]
        at = len(rows) if index is None else min(index, len(rows))
        rows.insert(at, row)
        return Record(tuple(rows), self.terminator, self.final_newline or not self.rows)


class _Paths(AbstractSet[str]):
    """:meth:`Record.owned`: the set of a record's paths, looked up one by one."""

    __slots__ = ("_record",)

    def __init__(self, record: Record) -> None:
        self._record = record

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._record.index(path) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(self._record._path_list()))

    def __len__(self) -> int:
        return len(set(self._record._path_list()))

    @classmethod
    def _from_iterable(cls, it: Iterable[_S]) -> AbstractSet[_S]:  # what ``view | x`` builds
        return set(it)
