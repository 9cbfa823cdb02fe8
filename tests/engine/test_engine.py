"""The pure engine: exact context, offsets, line endings, missing final newlines, reverse."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compatkit.engine import lines as lines_of
from compatkit.engine.hunks import HunkMismatch, SeriesConflict, apply_file, apply_series
from compatkit.model.diff import parse_diff


def fd(text: str):  # type: ignore[no-untyped-def]
    (one,) = parse_diff(text, "t.patch")
    return one


CHANGE_B = "--- a/m.py\n+++ b/m.py\n@@ -2,3 +2,3 @@\n a\n-b\n+B\n c\n"


def test_exact_position() -> None:
    result = apply_file(b"0\na\nb\nc\nd\n", fd(CHANGE_B))
    assert result.data == b"0\na\nB\nc\nd\n" and result.offsets == (0,)


def test_offset_is_found_and_reported() -> None:
    result = apply_file(b"x\nx\nx\n0\na\nb\nc\n", fd(CHANGE_B))
    assert result.data == b"x\nx\nx\n0\na\nB\nc\n" and result.offsets == (3,)


def test_no_fuzz_context_must_match_exactly() -> None:
    with pytest.raises(HunkMismatch, match="hunk #1"):
        apply_file(b"0\na\nb\nC\n", fd(CHANGE_B))


def test_crlf_file_keeps_crlf() -> None:
    result = apply_file(b"0\r\na\r\nb\r\nc\r\n", fd(CHANGE_B))
    assert result.data == b"0\r\na\r\nB\r\nc\r\n"


def test_mixed_endings_keep_every_untouched_line() -> None:
    result = apply_file(b"0\r\na\nb\r\nc\r\n", fd(CHANGE_B))
    assert result.data == b"0\r\na\nB\r\nc\r\n"


def test_no_newline_at_end_of_file_both_ways() -> None:
    add_eol = "--- a/m\n+++ b/m\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n"
    assert apply_file(b"x", fd(add_eol)).data == b"x\n"
    with pytest.raises(HunkMismatch):
        apply_file(b"x\n", fd(add_eol))
    drop_eol = "--- a/m\n+++ b/m\n@@ -1 +1 @@\n-x\n+x\n\\ No newline at end of file\n"
    assert apply_file(b"x\n", fd(drop_eol)).data == b"x"


def test_non_utf8_bytes_survive() -> None:
    data = b"0\na\nb\nc\n\xff\xfe raw\n"
    assert apply_file(data, fd(CHANGE_B)).data == b"0\na\nB\nc\n\xff\xfe raw\n"


def test_reverse_series_restores_original() -> None:
    second = "--- a/m.py\n+++ b/m.py\n@@ -2,3 +2,3 @@\n a\n-B\n+BB\n c\n"
    original = {"m.py": b"0\na\nb\nc\n"}
    forward = apply_series(original, [("p1", [fd(CHANGE_B)]), ("p2", [fd(second)])])
    assert forward.contents["m.py"] == b"0\na\nBB\nc\n"
    back = apply_series(
        forward.contents, [("p1", [fd(CHANGE_B)]), ("p2", [fd(second)])], reverse=True
    )
    assert back.contents == original


def test_series_conflict_names_the_patch() -> None:
    with pytest.raises(SeriesConflict) as info:
        apply_series({"m.py": b"nothing\n"}, [("patch-4", [fd(CHANGE_B)])])
    assert info.value.patch_id == "patch-4"
    assert "patch-4 does not apply: m.py: hunk #1" in info.value.message


def test_create_refuses_existing_and_delete_checks_content() -> None:
    create = fd("--- /dev/null\n+++ b/n.py\n@@ -0,0 +1 @@\n+x\n")
    with pytest.raises(HunkMismatch, match="already exists"):
        apply_file(b"x\n", create)
    delete = fd("--- a/n.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n")
    with pytest.raises(HunkMismatch):
        apply_file(b"x\ny\n", delete)


def test_two_hunks_with_growing_offset() -> None:
    text = "--- a/m\n+++ b/m\n@@ -1,2 +1,3 @@\n a\n+new\n b\n@@ -5,2 +6,2 @@\n e\n-f\n+F\n"
    assert apply_file(b"a\nb\nc\nd\ne\nf\n", fd(text)).data == b"a\nnew\nb\nc\nd\ne\nF\n"


def test_the_hunk_search_is_linear_in_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """30,000 identical lines and a hunk that matches nowhere: the old position-by-position
    scan compared the hunk at all 60,000 offsets (25-50 s); now only hash candidates are
    compared. Counted, not timed. And a hunk that matches everywhere: its own line wins."""
    from compatkit.engine import hunks as engine

    calls: list[int] = []
    real = engine._matches

    def counted(*args: object) -> bool:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "_matches", counted)
    body = b"x = 1\n" * 30_000
    nowhere = fd("--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n x = 1\n-y = 2\n+y = 3\n x = 1\n")
    with pytest.raises(HunkMismatch):
        apply_file(body, nowhere)
    assert len(calls) < 5, len(calls)
    everywhere = fd(
        "--- a/m.py\n+++ b/m.py\n@@ -20000,3 +20000,3 @@\n x = 1\n-x = 1\n+x = 2\n x = 1\n"
    )
    result = apply_file(b"y = 0\n" + body, everywhere)
    lines = result.data.split(b"\n") if result.data else []
    assert lines.index(b"x = 2") == 20_000 and result.offsets == (0,)


def _split_reference(data: bytes) -> list[tuple[str, str]]:
    """The per-line definition split_lines' LF-only fast path must agree with."""
    parts = data.decode("utf-8", "surrogateescape").split("\n")
    lines = []
    for i, part in enumerate(parts):
        if i == len(parts) - 1:
            if part:
                lines.append((part, ""))
        elif part.endswith("\r"):
            lines.append((part[:-1], "\r\n"))
        else:
            lines.append((part, "\n"))
    return lines


@given(st.lists(st.sampled_from(["a", "é", "\n", "\r", "\r\n", " ", "\xff"]), max_size=40))
def test_split_lines_fast_path_is_the_definition(parts: list[str]) -> None:
    data = "".join(parts).encode("utf-8", "surrogateescape")
    for blob in (data, data.replace(b"\r", b""), b"\xff\xfe\n" + data):
        lines = lines_of.split_lines(blob)
        assert lines == _split_reference(blob)
        assert "".join(c + e for c, e in lines).encode("utf-8", "surrogateescape") == blob
        # the engine's own form (bytes and line starts) holds the same lines, a small file's
        # starts in a list, a large one's in a buffer filled a piece at a time (forced here)
        want = [(c.encode("utf-8", "surrogateescape"), e.encode()) for c, e in lines]
        for small in (lines_of.SMALL, 1, 5):
            saved, lines_of.SMALL = lines_of.SMALL, small
            try:
                text = lines_of.Text(blob)
            finally:
                lines_of.SMALL = saved
            assert [(text.text(i), text.eol(i)) for i in range(len(text))] == want
        crlf = sum(1 for _, e in lines if e == "\r\n")
        expected = b"\r\n" if crlf > sum(1 for _, e in lines if e == "\n") else b"\n"
        assert text.dominant_eol() == expected
