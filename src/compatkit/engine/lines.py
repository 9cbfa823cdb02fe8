"""A file as the hunks see it (engine/hunks.py): its bytes and where each line starts,
never a string or a tuple per line; and :func:`split_lines`, the (text, ending) list of
lines that engine/difftext.py writes a diff from.

>>> t = Text(b"a\\r\\nb\\nc")
>>> [(t.text(i), t.eol(i)) for i in range(len(t))], t.dominant_eol()
([(b'a', b'\\r\\n'), (b'b', b'\\n'), (b'c', b'')], b'\\n')
"""

from __future__ import annotations

from itertools import accumulate

TYPE_CHECKING = False

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

Line = tuple[str, str]  # (content, eol) with eol in {"\n", "\r\n", ""}


def split_lines(data: bytes) -> list[Line]:
    text = data.decode("utf-8", "surrogateescape")
    parts = text.split("\n")
    if "\r" not in text:  # LF only, the common case: no per-line test needed
        tail = parts.pop()
        lines: list[Line] = [(part, "\n") for part in parts]
        if tail:
            lines.append((tail, ""))
        return lines
    lines = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if last and part == "":
            break
        if last:
            lines.append((part, ""))
        elif part.endswith("\r"):
            lines.append((part[:-1], "\r\n"))
        else:
            lines.append((part, "\n"))
    return lines


SMALL = 1 << 20  # a file up to this: its line starts in a list; above, 8 bytes a line


def _ends(data: bytes, start: int) -> Iterator[int]:
    """Where each line of ``data`` that ends in a newline ends, counted from ``start``
    (C speed: a split and an accumulate)."""
    parts = data.split(b"\n")
    parts.pop()  # what follows the last newline
    ends = accumulate(map((1).__add__, map(len, parts)), initial=start)
    next(ends)
    return ends


class Text:
    """A file as the hunks see it: its bytes, and where each line starts (``starts[i]``;
    ``starts[-1]`` is its size), 8 bytes a line. A line is ``data[starts[i]:starts[i + 1]]``
    with its ending: ``\r\n``, ``\n`` or none (the last). No string or tuple per line: a
    file of short lines held as a list of (text, ending) tuples took many times its size
    (docs/reliability.md, 3g); :func:`split_lines` is that form, for difftext."""

    __slots__ = ("data", "starts")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts: Sequence[int]
        count = data.count(b"\n") + (not data.endswith(b"\n") and bool(data))  # + a last
        if len(data) <= SMALL:  # the common case: a list, made at C speed
            self.starts = [0, *_ends(data, 0)] + [len(data)] * (count > data.count(b"\n"))
            return
        # 8-byte integers in one buffer (memoryview.cast: no module to import), filled from
        # pieces of about SMALL bytes (a split of the whole would be a bytes object a line)
        starts = memoryview(bytearray(8 * (count + 1))).cast("q")
        at, i, n = 0, 1, len(data)
        while at < n:
            cut = data.find(b"\n", at + SMALL)
            end = n if cut < 0 else cut + 1
            for pos in _ends(data[at:end], at):
                starts[i] = pos
                i += 1
            at = end
        starts[count] = n
        self.starts = starts

    def __len__(self) -> int:
        return len(self.starts) - 1

    def eol(self, i: int) -> bytes:
        start, end = self.starts[i], self.starts[i + 1]
        if self.data[end - 1 : end] != b"\n":
            return b""
        return b"\r\n" if end - 2 >= start and self.data[end - 2] == 13 else b"\n"

    def text(self, i: int) -> bytes:
        """Line ``i`` without its ending."""
        return self.data[self.starts[i] : self.starts[i + 1] - len(self.eol(i))]

    def dominant_eol(self) -> bytes:
        crlf = self.data.count(b"\r\n")
        return b"\r\n" if crlf > self.data.count(b"\n") - crlf else b"\n"


def encoded(text: str) -> bytes:
    """A patch's text as the bytes it stands for (patches are read with surrogateescape)."""
    return text.encode("utf-8", "surrogateescape")


class Cursor:
    """A file while its hunks are applied, in order: the lines before ``floor`` are the new
    ones written so far (``out``), the rest still the original's from line ``done`` on. A
    hunk is only ever matched at or after ``floor``, so a line ``p`` there is the original's
    ``p + shift``; the unchanged runs are kept as views of the original's bytes and joined
    once at the end."""

    __slots__ = ("f", "out", "floor", "done")

    def __init__(self, f: Text) -> None:
        self.f, self.out, self.floor, self.done = f, list[bytes | memoryview](), 0, 0

    @property
    def shift(self) -> int:
        return self.done - self.floor

    def __len__(self) -> int:
        return len(self.f) - self.shift

    def replace(self, pos: int, old: int, region: list[bytes]) -> None:
        """Lines ``pos`` to ``pos + old`` become ``region``."""
        at = pos + self.shift
        starts = self.f.starts
        self.out.append(memoryview(self.f.data)[starts[self.done] : starts[at]])
        self.out += region
        self.done, self.floor = at + old, pos + len(region)

    def result(self) -> bytes:
        self.out.append(memoryview(self.f.data)[self.f.starts[self.done] :])
        return b"".join(self.out)
