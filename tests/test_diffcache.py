"""compatkit.load.diffcache: parsed diffs come back from the cache exactly as the parser made
them; a corrupt or malformed entry is parsed again, never trusted; errors are never cached; an
edited parser never serves an old parse."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from compatkit.errors import PatchFormatError
from compatkit.load import cachedir, diffcache
from compatkit.model.diffparse import FileDiff, parse_diff
from conftest import PATCH_GREET, PATCH_UTIL

TEXT = (
    PATCH_GREET.split("---\n", 1)[1]
    + PATCH_UTIL.split("---\n", 1)[1]
    + "--- /dev/null\n+++ b/demo/new.py\n@@ -0,0 +1,2 @@\n+x = 'é'\r\n+y = 1\n"
    + "\\ No newline at end of file\n"
)


@pytest.fixture
def parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "c"))
    seen: list[str] = []

    def counting(text: str, label: str, first_line: int = 1) -> tuple[FileDiff, ...]:
        seen.append(text)
        return parse_diff(text, label, first_line)

    monkeypatch.setattr(diffcache, "parse_diff", counting)
    return seen


def _doc(entry: Path) -> dict[str, object]:
    doc = marshal.loads(entry.read_bytes()[len(cachedir.MAGIC) + cachedir.MAC_SIZE :])
    assert isinstance(doc, dict)
    return doc


def test_hits_misses_and_refusals(tmp_path: Path, parses: list[str]) -> None:
    first = diffcache.parse(TEXT, "t.patch")
    assert first == parse_diff(TEXT, "t.patch") and len(parses) == 1
    assert any(h.eols != ("\n",) * len(h.lines) for f in first for h in f.hunks)  # kept exactly
    assert diffcache.parse(TEXT, "t.patch") == first and len(parses) == 1  # from the cache
    (entry,) = (tmp_path / "c" / "diff").glob("*.bin")
    good = _doc(entry)
    files = good["files"]
    assert isinstance(files, list)
    hunk = files[0][2][0]
    bad_docs = [
        {**good, "format": 99},
        {**good, "files": []},
        {**good, "files": [["demo/x.py", "rename", []]]},
        {**good, "files": [files[0], files[0]]},  # one path twice
        {**good, "files": [["demo/x.py", "modify", [[*hunk[:4], [["?", "x"]], *hunk[5:]]]]]},
        {**good, "files": [["demo/x.py", "modify", [[-1, *hunk[1:]]]]]},
        {**good, "files": [["demo/x.py", "modify", [[1, True, *hunk[2:]]]]]},
        {**good, "files": [["demo/x.py", "modify", [[*hunk[:7], ["\r"] * len(hunk[4]), False]]]]},
        {**good, "files": [["demo/x.py", "modify", [[*hunk[:7], [], False]]]]},
        {**good, "files": [["demo/x.py", "modify", [[*hunk[:8], 0]]]]},
        {**good, "files": [[b"demo/x.py", "modify", []]]},
    ]
    for n, junk in enumerate(bad_docs, start=2):  # signed as compatkit would: checked anyway
        cachedir.write(str(entry.parent.parent), "diff", entry.name, marshal.dumps(junk))
        assert diffcache.parse(TEXT, "t.patch") == first
        assert len(parses) == n, junk
    entry.write_bytes(entry.read_bytes()[:-5])  # cut short
    assert diffcache.parse(TEXT, "t.patch") == first and len(parses) == len(bad_docs) + 2
    for _ in range(2):  # parsed (and refused) every time: errors are not cached
        with pytest.raises(PatchFormatError, match="contains no diff"):
            diffcache.parse("not a diff\n", "bad.patch")
    assert len(list((tmp_path / "c" / "diff").glob("*.bin"))) == 1


def test_the_key_covers_the_real_parser_files() -> None:
    """The installed parser's files are found (a "?" would make an edited parser invisible)."""
    head = diffcache._key("").decode().split()
    assert head[:3] == ["compatkit", "diff", str(diffcache.FORMAT)]
    assert len(head) == 5 and "?" not in head, head


def test_an_edited_parser_never_serves_an_old_parse(
    tmp_path: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key covers the parser's own files: a changed diffread.py is a new entry."""
    parser = tmp_path / "pkg"
    parser.mkdir()
    for name in ("diffparse.py", "diffread.py"):
        (parser / name).write_text("# v1\n")
    monkeypatch.setattr(diffcache, "_HERE", str(parser))
    diffcache.parse(TEXT, "t.patch")
    diffcache.parse(TEXT, "t.patch")
    assert len(parses) == 1
    (parser / "diffread.py").write_text("# v2, longer\n")
    diffcache.parse(TEXT, "t.patch")
    assert len(parses) == 2
    os.utime(parser / "diffparse.py", ns=(0, 0))
    diffcache.parse(TEXT, "t.patch")
    assert len(parses) == 3


def test_a_warm_apply_reads_the_diff_from_the_cache(
    tmp_path: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Patch.files goes through the cache when the loader asks for it: a second process
    would get the parse for free."""
    from compatkit.load import diffcache
    from compatkit.model.patchset import parse_patch

    path = tmp_path / "p.patch"
    path.write_text(PATCH_GREET)
    for _ in range(3):
        patch = parse_patch(path, path.read_bytes(), eager=False, parse=diffcache.parse)
        assert [f.path for f in patch.files] == ["demo/greet.py"]
    assert len(parses) == 1
