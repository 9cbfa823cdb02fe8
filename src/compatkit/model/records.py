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

import base64
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from hashlib import sha256

from compatkit.value import Value

TYPE_CHECKING = False  # not typing's: the read-only commands do not import typing

if TYPE_CHECKING:
    from typing import TypeVar

    _S = TypeVar("_S")


def hash_bytes(data: bytes) -> str:
    """RECORD's ``sha256=`` form of ``data``'s hash."""
    return record_hash(sha256(data).digest())


def record_hash(digest: bytes) -> str:
    """RECORD's ``sha256=`` form of a SHA-256 ``digest`` (a file's, hashed as it is streamed:
    :func:`compatkit.bounded.sha256`)."""
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class Row(Value):
    __slots__ = ("path", "hash", "size", "raw")

    def __init__(self, path: str, hash: str, size: int | None, raw: str) -> None:
        self.path = path
        self.hash = hash  # "sha256=…" or ""
        self.size = size
        self.raw = raw  # the row's text without its line terminator

    @classmethod
    def from_raw(cls, raw: str) -> Row:
        import csv  # here, as in each reader of rows: status and explain read no RECORD (P1)

        try:
            fields = next(csv.reader([raw]))
        except (csv.Error, StopIteration):  # an unclosed quote; an empty line
            fields = [raw]
        return cls.from_fields(fields, raw)

    @classmethod
    def from_fields(cls, fields: list[str], raw: str) -> Row:
        """The row whose text is ``raw``, given the fields csv read from it."""
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
    import csv
    import io

    buf = io.StringIO()
    fields = [path, "", ""] if digest is None else [path, *digest]
    csv.writer(buf, lineterminator="").writerow(fields)
    return Row.from_raw(buf.getvalue())


# searches of a record's whole text before it indexes its lines (Record._first_fields): an
# index costs a pass over every line, a search one scan of the text at C speed
_SEARCHES = 64


def _encoded(text: str) -> bytes | None:
    """``text`` as a RECORD's bytes hold it (None: no decoded RECORD holds it, such as a
    surrogate escape that stands for a valid character's bytes)."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    return data if data.decode("utf-8", "surrogateescape") == text else None


def _paths_of(raws: list[str]) -> list[str]:
    """Each row's path, in order, as :meth:`Row.from_raw` reads it: csv in one pass over rows
    with no quote character (each row is then one csv record), row by row otherwise."""
    import csv

    if not any('"' in r for r in raws):
        try:
            return [fields[0] if fields else "" for fields in csv.reader(raws)]
        except csv.Error:  # a line break in an unquoted field: not csv, read row by row
            pass
    return [Row.from_raw(r).path for r in raws]


def _csv_forms(path: str) -> list[str]:
    """How a row's text can start with ``path`` as its first field: as csv writes it (quoted
    only when it must be) and, if different, wholly quoted (a writer quoting every field)."""
    import csv
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([path])
    minimal = buf.getvalue() if path else ""
    quoted = '"' + path.replace('"', '""') + '"'
    return [minimal] if minimal == quoted else [minimal, quoted]


class Record(Value):
    """A RECORD: its lines, kept as the bytes they are (UTF-8 with surrogate escapes, each
    line followed by the terminator), whatever the command does with them. A row is a
    function of its line's text (:meth:`Row.from_raw`); rows are made only for the lines
    asked for: a lookup searches the bytes for the line starting with the path as csv writes
    it, followed by a comma or the terminator, and an edit splices the lines it changes, so
    a command that reads or edits a few rows of a 15,000-row RECORD neither decodes nor
    splits the others (issue 36, G-apply). UTF-8 never puts a line break, a comma or a quote
    inside a character, so the bytes split where the text would.

    ``_hits`` and ``_folders`` remember this record's lookups (the bytecode or the backups
    of a few modules, looked up one by one, cost one search in all), ``_numbered`` the line
    numbers :meth:`index` counted (each counted on from the nearest one counted before); the
    record itself never changes. A search reads the whole text, so a record asked for many
    paths (a patch of thousands of files) indexes its lines by their first field once, after
    ``_SEARCHES`` searches (``_index``), instead of searching again for each: a few lookups
    still split nothing."""

    __slots__ = (
        "_text", "terminator", "final_newline", "_hits", "_folders", "_numbered", "_searches",
        "_index",
    )  # fmt: skip

    def __init__(self, rows: Iterable[Row], terminator: str, final_newline: bool) -> None:
        self._text = "".join(r.raw + terminator for r in rows).encode("utf-8", "surrogateescape")
        self.terminator = terminator
        self.final_newline = final_newline
        self._hits: dict[str, list[int]] = {}  # a path -> where its lines start in ``_text``
        self._folders: dict[str, bool] = {}  # a folder -> whether a line's path is below it
        # lines of ``_text`` numbered so far: their starts (sorted) and their numbers
        self._numbered: tuple[list[int], list[int]] = ([], [])
        self._searches = 0  # lookups answered by a search of the whole text
        self._index: dict[bytes, list[int]] | None = None  # a first field -> its lines' starts

    @classmethod
    def _of_text(cls, text: bytes, terminator: str, final_newline: bool) -> Record:
        """``text``: no line, or lines each followed by the terminator."""
        record = cls((), terminator, final_newline)
        record._text = text
        return record

    @classmethod
    def parse(cls, data: bytes) -> Record:
        end = b"\r\n" if b"\r" in data and b"\r\n" in data else b"\n"  # "\r": one fast scan
        if data in (b"", end):  # no line at all
            return cls._of_text(b"", end.decode(), data.endswith(b"\n"))
        text = data if data.endswith(end) else data + end  # the bytes read: no copy
        return cls._of_text(text, end.decode(), data.endswith(b"\n"))

    @property
    def rows(self) -> tuple[Row, ...]:
        import csv

        raws = self._raw_list()
        if not any('"' in r for r in raws):
            try:  # one csv record a row: read in one pass
                return tuple(map(Row.from_fields, csv.reader(raws), raws))
            except csv.Error:  # a line break in an unquoted field: not csv, read row by row
                pass
        return tuple(Row.from_raw(r) for r in raws)

    def _raw_list(self) -> list[str]:
        """Each line's text, in order (the record split: only when every row is asked for)."""
        if not self._text:
            return []
        text = self._text[: -len(self.terminator)].decode("utf-8", "surrogateescape")
        return text.split(self.terminator)

    def _path_list(self) -> list[str]:
        """Each row's path, in order, without building the rows."""
        return _paths_of(self._raw_list())

    def _lines_of(self, path: str) -> list[int]:
        """Where each line whose path is ``path`` starts in ``_text``, in order: the lines
        that are ``path`` (as csv writes it) followed by a comma or by the terminator. A path
        holding the terminator is no line's path, nor is one in a folder no line's path is
        in."""
        hits = self._hits.get(path)
        if hits is not None:
            return hits
        hits = self._hits[path] = []
        if "\r" in path or "\n" in path:
            return hits
        if self._index is None and self._searches >= _SEARCHES:
            self._index = self._first_fields()
        if self._index is None and not self._has_folder(path):
            return hits
        text, end = self._text, self.terminator.encode()
        for form in _csv_forms(path):
            key = _encoded(form)
            if key is None:
                return hits
            if self._index is not None:
                hits += self._index.get(key, ())
                continue
            start = 0 if text.startswith(key) else -1  # the first line; then each after an end
            if start < 0:
                start = text.find(end + key)
                start = start + len(end) if start >= 0 else -1
            while start >= 0:
                after = start + len(key)
                if text.startswith(b",", after) or text.startswith(end, after):
                    hits.append(start)
                start = text.find(end + key, start)
                start = start + len(end) if start >= 0 else -1
        if self._index is None:
            self._searches += 1
        hits.sort()
        return hits

    def _first_fields(self) -> dict[bytes, list[int]]:
        """Each line's first field as written (quotes included), to where the lines holding
        it start: the lines a search for that field, followed by a comma or the terminator,
        finds. A quoted field ends at the first quote that is not doubled; a line whose
        quoted field is not closed, or is followed by anything but a comma, has none. Not
        csv's reading of the line: a search matches the field as written, and csv reads
        some lines a search finds otherwise (``a,h\r,1`` in a LF file is an error to csv,
        ``a``'s line to a search), so an index of csv's paths would miss lines."""
        index: dict[bytes, list[int]] = {}
        text, end = self._text, self.terminator.encode()
        start = 0
        for line in text.split(end)[:-1]:  # the text ends with the terminator
            if line.startswith(b'"'):
                close = line.find(b'"', 1)
                while close >= 0 and line.startswith(b'"', close + 1):
                    close = line.find(b'"', close + 2)
                field = line[: close + 1] if close >= 0 else None
                if field is not None and len(line) > len(field):
                    field = field if line.startswith(b",", len(field)) else None
            else:
                field = line.partition(b",")[0]
            if field is not None:
                index.setdefault(field, []).append(start)
            start += len(line) + len(end)
        return index

    def _has_folder(self, path: str) -> bool:
        """Whether a line's path may be in the folder holding ``path`` (or below it)."""
        folder = path.rpartition("/")[0]
        if not folder or b'"' in self._text:  # the root; quoted lines: no quick answer
            return True
        known = self._folders.get(folder)
        if known is None:
            key = _encoded(folder + "/")
            end = self.terminator.encode()
            known = key is not None and (
                self._has_folder(folder) and (self._text.startswith(key) or end + key in self._text)
            )
            self._folders[folder] = known
        return known

    def _line_at(self, start: int) -> str:
        """The line starting at ``start`` of ``_text``."""
        line = self._text[start : self._text.find(self.terminator.encode(), start)]
        return line.decode("utf-8", "surrogateescape")

    def _fields(self) -> tuple[object, ...]:
        return (self._text, self.terminator, self.final_newline)

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
        """``parse(data).owned()``: a check that needs only who owns what (a transaction's
        check of the RECORD its plan read, re-read under the lock), no line split for it.

        >>> sorted(Record.paths_in(b'a.py,sha256=x,1\\n"b,c.py",,\\n'))
        ['a.py', 'b,c.py']
        """
        return Record.parse(data).owned()

    def render(self) -> bytes:
        if self.final_newline or not self._text:
            return self._text
        return self._text[: -len(self.terminator)]

    def get(self, path: str) -> Row | None:
        hits = self._lines_of(path)
        return Row.from_raw(self._line_at(hits[0])) if hits else None

    def paths(self) -> set[str]:
        return set(self._path_list())

    def replace(self, path: str, row: Row) -> Record:
        return self._with(tuple(row if r.path == path else r for r in self.rows))

    def without(self, paths: set[str]) -> Record:
        return self._with(tuple(r for r in self.rows if r.path not in paths))

    def with_rows(self, rows: list[Row]) -> Record:
        existing = self.paths()
        return self._with(self.rows + tuple(r for r in rows if r.path not in existing))

    def _with(self, rows: tuple[Row, ...]) -> Record:
        """The record of ``rows``, with this one's terminator; a record that had no line
        ends with one."""
        return Record(rows, self.terminator, self.final_newline or not self._text)

    def index(self, path: str) -> int | None:
        hits = self._lines_of(path)
        return self._line_number(hits[0]) if hits else None

    def _line_number(self, start: int) -> int:
        """How many lines begin before ``start`` (where a line of ``_text`` begins): the
        terminators before it, counted on from the nearest line numbered already (a plan
        numbers every file it changes and its bytecode: counting each from the top is
        quadratic)."""
        import bisect  # here: only numbering lines needs it

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
        """Many row edits in one pass (a row-at-a-time loop is quadratic on big RECORDs): the
        lines it replaces or removes are spliced, the rest is copied once; no row is built for
        the lines it keeps."""
        text, end = self._text, self.terminator.encode()
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
        return Record._of_text(b"".join(pieces), self.terminator, self.final_newline or not text)

    def insert_all(self, rows: list[tuple[int, Row]]) -> Record:
        """``insert(index, row)`` for each pair in turn, in one pass (a loop is quadratic).

        One pass when the indexes strictly ascend and the paths are new and distinct (as in a
        revert, which drops the rows first): each row then lands at its index, or at the end
        if the RECORD is shorter. Otherwise row by row.
        """
        paths = {row.path for _, row in rows}
        ascending = all(rows[k][0] < rows[k + 1][0] for k in range(len(rows) - 1))
        if len(paths) < len(rows) or not ascending or any(p in self.owned() for p in paths):
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
        return self._with(tuple(out))

    def insert(self, index: int | None, row: Row) -> Record:
        rows = [r for r in self.rows if r.path != row.path]
        at = len(rows) if index is None else min(index, len(rows))
        rows.insert(at, row)
        return self._with(tuple(rows))


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
