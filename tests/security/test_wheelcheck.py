"""compatkit wheel builds only from a source wheel proven to be the release (issue 25, item 5).

Each attack is a wheel whose files match its *own* RECORD (or break it in one way), put where
``compatkit wheel`` looks first (``--wheel-dir``), with uv's and pip's caches empty so that no
other copy can stand in: it must be refused in one line, with nothing written.
"""

from __future__ import annotations

import hashlib
import json
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from compatkit.delivery import wheelcheck
from compatkit.model.records import hash_bytes
from helpers import DEMO_FILES, Demo, Venv
from helpers.wheelkit import local_index

BOMB_BYTES = 300 << 20


@pytest.fixture(autouse=True)
def _no_other_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    monkeypatch.setenv("COMPATKIT_NO_INDEX", "1")
    monkeypatch.setenv("PIP_CACHE_DIR", str(tmp_path / "empty-pip"))
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


def forge(
    demo: Demo,
    folder: Path,
    edits: dict[str, bytes | None],
    rows: Callable[[dict[str, bytes]], dict[str, str]] | None = None,
) -> Path:
    """The demo wheel with ``edits`` (None removes an entry) and a RECORD that matches every
    entry, unless ``rows`` rewrites it (path -> hash)."""
    with zipfile.ZipFile(demo.wheel) as zf:
        files = {n: zf.read(n) for n in zf.namelist() if not n.endswith("/RECORD")}
    files.update({k: v for k, v in edits.items() if v is not None})
    files = {k: v for k, v in files.items() if edits.get(k, b"") is not None}
    record = {p: hash_bytes(d) for p, d in files.items()}
    record = rows(files) if rows else record
    text = "".join(f"{p},{h},\n" for p, h in record.items()) + "demo-1.0.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / demo.wheel.name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name), data)
        zf.writestr("demo-1.0.dist-info/RECORD", text)
    return path


def refused(demo: Demo, tmp_path: Path, wheel: Path, *extra: str) -> str:
    out = tmp_path / "out"
    with pytest.MonkeyPatch.context() as mp:  # uv's cache holds the installed demo's wheel
        mp.setenv("UV_CACHE_DIR", str(tmp_path / "empty-uv"))
        code, stdout, err = demo.run(
            "wheel", "demo-fix", "-o", str(out), "--wheel-dir", str(wheel.parent), *extra
        )
    assert code == 1, stdout + err
    assert err.startswith("compatkit: error: cannot get the pristine wheel of demo 1.0")
    assert "Traceback" not in err and not out.exists()
    return err


def test_a_trojaned_file_with_a_record_to_match_is_refused(demo: Demo, tmp_path: Path) -> None:
    trojan = DEMO_FILES["demo/util.py"] + b"import os\nos.system('id')\n"
    wheel = forge(demo, tmp_path / "w", {"demo/util.py": trojan})
    err = refused(demo, tmp_path, wheel)
    assert "demo/util.py differs from the installed release's RECORD" in err
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    code, out, _ = demo.run(
        "--json", "wheel", "demo-fix", "-o", str(tmp_path / "o2"), "--sha256", sha,
        "--wheel-dir", str(wheel.parent),
    )  # fmt: skip
    assert code == 0 and json.loads(out)["proof"] == "--sha256", "the user vouched for it"


def test_an_empty_hash_is_refused(demo: Demo, tmp_path: Path) -> None:
    def rows(files: dict[str, bytes]) -> dict[str, str]:
        return {p: "" if p == "demo/util.py" else hash_bytes(d) for p, d in files.items()}

    err = refused(demo, tmp_path, forge(demo, tmp_path / "w", {}, rows))
    assert "demo/util.py has no hash in the wheel's RECORD" in err


def test_a_file_left_out_of_record_is_refused(demo: Demo, tmp_path: Path) -> None:
    def rows(files: dict[str, bytes]) -> dict[str, str]:
        return {p: hash_bytes(d) for p, d in files.items() if p != "demo/extra.py"}

    wheel = forge(demo, tmp_path / "w", {"demo/extra.py": b"evil = 1\n"}, rows)
    err = refused(demo, tmp_path, wheel)
    assert "demo/extra.py is not listed in the wheel's RECORD" in err


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("../x.py", "../x.py: refused (contains '..')"),
        ("/x.py", "/x.py: refused (absolute)"),
        ("demo/../../x.py", "refused (contains '..')"),
        ("evil.pth", "evil.pth: a top-level .pth the installed release does not have"),
        ("demo-1.0.data/scripts/evil", "a script the installed release does not have"),
        ("demo-1.0.data/purelib/evil.py", "a file the installed release does not have"),
    ],
)
def test_entries_outside_the_release_are_refused(
    demo: Demo, tmp_path: Path, name: str, why: str
) -> None:
    wheel = forge(demo, tmp_path / "w", {name: b"import os; os.system('id')\n"})
    assert why in refused(demo, tmp_path, wheel)


def test_a_zip_bomb_is_refused_fast(demo: Demo, tmp_path: Path) -> None:
    folder = tmp_path / "w"
    wheel = forge(demo, folder, {})
    with zipfile.ZipFile(wheel, "a", zipfile.ZIP_DEFLATED) as zf:
        info = zipfile.ZipInfo("demo/bomb.bin")
        info.compress_type = zipfile.ZIP_DEFLATED
        with zf.open(info, "w", force_zip64=True) as entry:
            block = bytes(1 << 20)
            for _ in range(BOMB_BYTES >> 20):
                entry.write(block)
    assert wheel.stat().st_size < BOMB_BYTES // 100
    start = time.perf_counter()
    err = refused(demo, tmp_path, wheel)
    elapsed = time.perf_counter() - start
    assert "demo/bomb.bin: compressed" in err and "(a zip bomb?)" in err
    assert elapsed < 5, f"took {elapsed:.1f} s"


def test_zip_bounds_are_read_from_the_directory() -> None:
    big = zipfile.ZipInfo("a.bin")
    big.file_size, big.compress_size = wheelcheck.MAX_ENTRY + 1, wheelcheck.MAX_ENTRY
    twice = [zipfile.ZipInfo("x.py"), zipfile.ZipInfo("x.py")]
    assert wheelcheck.zip_problems([big]) == [
        f"a.bin: {wheelcheck.MAX_ENTRY + 1} bytes (more than {wheelcheck.MAX_ENTRY})"
    ]
    assert wheelcheck.zip_problems(twice) == ["an entry name appears twice"]
    assert wheelcheck.zip_problems([zipfile.ZipInfo("pkg/m.py")]) == []
    assert wheelcheck.entry_problem("C:/x.py") == "C:/x.py: refused (absolute)"


def test_a_non_zip_candidate_is_skipped_with_a_note(demo: Demo, tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / demo.wheel.name).write_bytes(b"<html>rate limited</html>\n")
    args = ["wheel", "demo-fix", "-o", str(tmp_path / "o"), "--wheel-dir", str(junk)]
    code, out, err = demo.run(*args, "--wheel-dir", str(demo.wheel.parent))
    assert code == 0, err
    assert f"skipped {junk / demo.wheel.name}: not a zip archive" in out
    assert "from " + str(demo.wheel) + " (proven by the installed RECORD)" in out
    refused(demo, tmp_path, junk / demo.wheel.name)


def test_an_existing_output_is_replaced_only_with_overwrite(demo: Demo, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["wheel", "demo-fix", "-o", str(out), "--wheel-dir", str(demo.wheel.parent)]
    assert demo.run(*args)[0] == 0
    (whl,) = out.glob("*.whl")
    good = whl.read_bytes()
    assert demo.run(*args)[0] == 0 and whl.read_bytes() == good, "the same bytes: unchanged"
    whl.write_bytes(b"someone else's wheel\n")
    code, _, err = demo.run(*args)
    assert code == 1 and f"{whl} exists with other bytes: pass --overwrite" in err
    assert whl.read_bytes() == b"someone else's wheel\n"
    code, stdout, err = demo.run(*args, "--overwrite")
    assert code == 0 and f"built {whl}" in stdout and whl.read_bytes() == good


def test_without_the_release_installed_only_a_given_hash_proves_it(
    demo: Demo, tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    bare = Demo(make_venv(), demo.patchsets, demo.wheel, demo.capsys)
    err = refused(bare, tmp_path, demo.wheel)
    assert "nothing proves it is the release (demo 1.0 is not installed here" in err
    assert "pass --sha256" in err
    err = refused(bare, tmp_path, demo.wheel, "--sha256", "0" * 64)
    assert "is not the --sha256 given" in err
    sha = hashlib.sha256(demo.wheel.read_bytes()).hexdigest()
    out = str(tmp_path / "o")
    code, _, err = bare.run(
        "wheel", "demo-fix", "-o", out, "--wheel-dir", str(demo.wheel.parent), "--sha256", sha
    )
    assert code == 0, err
    code, _, err = bare.run("wheel", "demo-fix", "-o", out, "--sha256", "abc")
    assert code == 2 and "--sha256 'abc': not 64 hex digits" in err


def test_the_index_hash_proves_a_copy_and_refuses_a_trojan(
    demo: Demo, tmp_path: Path, make_venv: Callable[..., Venv], monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = Demo(make_venv(), demo.patchsets, demo.wheel, demo.capsys)
    monkeypatch.delenv("COMPATKIT_NO_INDEX")
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # the download goes to the local index only
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "empty-uv"))
    with local_index([demo.wheel]) as url:
        monkeypatch.setenv("COMPATKIT_INDEX_URL", url)
        args = ["--json", "wheel", "demo-fix", "-o", str(tmp_path / "a")]
        code, out, err = bare.run(*args, "--wheel-dir", str(demo.wheel.parent))
        assert code == 0, err
        doc = json.loads(out)
        assert doc["proof"] == "the index's sha256" and doc["source"] == str(demo.wheel)
        trojan = DEMO_FILES["demo/util.py"] + b"import os\n"
        wheel = forge(demo, tmp_path / "w", {"demo/util.py": trojan})
        code, out, err = bare.run(*args[:-1], str(tmp_path / "b"), "--wheel-dir", str(wheel.parent))
        assert code == 0, err
        doc = json.loads(out)
        assert doc["source"] != str(wheel) and doc["proof"] == "the index's sha256"
        assert doc["notes"] == [f"downloaded {demo.wheel.name}"], "the trojan was passed over"
        assert (tmp_path / "a" / Path(doc["wheel"]).name).read_bytes() == Path(
            doc["wheel"]
        ).read_bytes()


def test_a_copy_lacking_a_file_of_the_release_is_refused(demo: Demo, tmp_path: Path) -> None:
    """Every file it has matches the installed RECORD, but one is missing: a wheel built from
    it would drop that module (one no patch edits: nothing else would notice)."""
    wheel = forge(demo, tmp_path / "w", {"demo/__init__.py": None})
    err = refused(demo, tmp_path, wheel)
    assert "demo/__init__.py: a file of the installed release this copy lacks" in err
