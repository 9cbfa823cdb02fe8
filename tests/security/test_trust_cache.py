"""Nothing cached decides what is written (issue 25, items 1 and 2; docs/security.md).

Each attack from the issue, as another user would mount it (the suite runs as root: the
attacker is a spare uid, 12345, whose files are made with os.chown), is shown refused or
harmless: apply writes what the .patch says, the probe, pyproject.toml and patchset.toml give
their real answers, a foreign or writable cache is ignored with one warning line, a special,
huge or damaged entry neither hangs nor crashes, and verify re-derives every patched file from
its original bytes and the patch files, so a wrong write is caught whatever made it.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compatkit.env import target
from compatkit.env.target import Environment
from compatkit.load import cache
from compatkit.load.config import find_config
from compatkit.load.validate import validate
from compatkit.model.records import row_for
from helpers import DEMO_FILES, Demo, Venv, built, needs_uv, run_cli

ATTACKER = 12345
EVIL = "import os; os.system('id > /tmp/pwned')  # not in the .patch"
POLITE = DEMO_FILES["demo/greet.py"].replace(b"'hello '", b"'hi '")
FORGED = POLITE + f"{EVIL}\n".encode()  # past the patch's context: un-applying still works


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """compatkit's cache folder for this test; each test may warn once again."""
    folder = tmp_path / "c"
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(folder))
    cache._warned.clear()
    yield folder
    cache._warned.clear()


def _read(entry: Path) -> dict[str, object]:
    raw = cache.read(str(entry.parent.parent), entry.parent.name, entry.name)
    assert raw is not None, entry
    doc = marshal.loads(raw)
    assert isinstance(doc, dict)
    return doc


def _sign(entry: Path, doc: dict[str, object]) -> None:
    """Write ``doc`` as compatkit would, signed with the folder's own key."""
    cache.write(str(entry.parent.parent), entry.parent.name, entry.name, marshal.dumps(doc))


def _sign_with(entry: Path, doc: dict[str, object], key: bytes) -> None:
    """Write ``doc`` with a MAC under ``key`` (an attacker's own, or a stolen one)."""
    blob = marshal.dumps(doc)
    entry.write_bytes(cache.MAGIC + cache._mac(key, entry.parent.name, entry.name, blob) + blob)


def _spec_entry(demo: Demo) -> Path:
    """The TOML entry holding demo-fix's parsed patchset.toml."""
    entry = cache.entry("toml", (demo.patchsets / "demo-fix" / "patchset.toml").read_bytes())
    assert entry is not None and entry.is_file()
    return entry


def _forge_series(doc: dict[str, object]) -> dict[str, object]:
    """The same table with patch-1 (demo/greet.py) left out of the series: served, it would
    change what apply writes."""
    meta = doc["patchset"]
    assert isinstance(meta, dict) and meta["series"] == ["patches/0001.patch", "patches/0002.patch"]
    return {**doc, "patchset": {**meta, "series": ["patches/0002.patch"]}}


def _greet(demo: Demo) -> bytes:
    return (demo.venv.site / "demo" / "greet.py").read_bytes()


def _warm(demo: Demo) -> None:
    """One apply and revert: every entry (probe, TOML) is in the cache."""
    assert demo.run("apply", "demo-fix")[0] == 0
    assert demo.run("revert", "demo-fix")[0] == 0


def _apply_and_check(demo: Demo) -> str:
    code, out, err = demo.run("apply", "demo-fix")
    assert code == 0, out + err
    assert _greet(demo) == POLITE  # what the patchset says, not the forged entry
    assert demo.run("verify", "demo-fix")[0] == 0
    assert demo.run("revert", "demo-fix")[0] == 0
    return err


def test_a_forged_entry_never_decides_what_apply_writes(demo: Demo, store: Path) -> None:
    _warm(demo)
    entry = _spec_entry(demo)
    real = _read(entry)
    forged = _forge_series(real)
    key = (store / "key").read_bytes()
    # 1. forged without the user's key (the attacker cannot read it): its MAC fails
    _sign_with(entry, forged, os.urandom(32))
    assert _apply_and_check(demo) == ""
    # 2. signed with the real key, but the file is the attacker's: ignored with a warning
    _sign_with(entry, forged, key)
    os.chown(entry, ATTACKER, ATTACKER)
    err = _apply_and_check(demo)
    assert err.count("\n") == 1 and "compatkit: warning: ignoring the cache" in err, err
    assert f"owned by uid {ATTACKER}" in err
    # 3. the user's own file, but writable by everyone: ignored with a warning
    _sign_with(entry, forged, key)
    os.chmod(entry, 0o666)
    cache._warned.clear()
    assert "writable by others" in _apply_and_check(demo)
    # each time the entry was recomputed and rewritten as the user's own
    st = entry.stat()
    assert st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o600
    assert _read(entry) == real


def test_a_cache_folder_of_another_user_is_ignored(demo: Demo, store: Path) -> None:
    """The attacker owns the folder, so its key too: a self-consistent forgery. Ignored, with
    one warning line, and nothing is written there."""
    _warm(demo)
    entry = _spec_entry(demo)
    _sign(entry, _forge_series(_read(entry)))
    for path in (store, *store.rglob("*")):
        os.chown(path, ATTACKER, ATTACKER, follow_symlinks=False)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    err = _apply_and_check(demo)
    assert err.count("\n") == 1 and f"the cache folder {store} is owned by uid {ATTACKER}" in err
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_a_writable_cache_folder_or_kind_folder_is_ignored(demo: Demo, store: Path) -> None:
    _warm(demo)
    entry = _spec_entry(demo)
    _sign(entry, _forge_series(_read(entry)))
    for folder in (store, store / "toml"):
        for mode in (0o770, 0o703):  # writable by the group; by everyone else
            folder.chmod(mode)
            cache._warned.clear()
            assert "writable by others" in _apply_and_check(demo)
        folder.chmod(0o700)
    # a symbolic link of the attacker's as the cache folder itself
    link = store.parent / "link"
    link.symlink_to(store)
    os.chown(link, ATTACKER, ATTACKER, follow_symlinks=False)
    os.environ["COMPATKIT_CACHE_DIR"] = str(link)  # undone by the fixture's monkeypatch
    cache._warned.clear()
    assert "is a symbolic link owned by uid" in _apply_and_check(demo)


def test_a_forged_key_file_is_refused(demo: Demo, store: Path) -> None:
    _warm(demo)
    key = store / "key"
    key.chmod(0o644)  # readable by others: anyone could sign entries
    assert "readable or writable by others" in _apply_and_check(demo)
    key.chmod(0o600)
    os.chown(key, ATTACKER, ATTACKER)
    cache._warned.clear()
    assert f"owned by uid {ATTACKER}" in _apply_and_check(demo)


def test_verify_rederives_the_bytes(demo: Demo, store: Path) -> None:
    """A wrong write is caught however it came: here a tampered file, with a state file and
    RECORD that agree with the forged bytes."""
    assert demo.run("apply", "demo-fix")[0] == 0 and _greet(demo) == POLITE
    assert demo.run("verify", "demo-fix")[0] == 0
    _tamper(demo.venv.site)  # the file, its state and its RECORD row: all forged
    code, out, err = demo.run("status")
    assert code == 0 and "drifted" not in out.lower()  # the hashes agree: only a proof tells
    code, out, err = demo.run("verify", "demo-fix")
    assert code == 1 and "demo/greet.py does not hold what demo-fix's patch files make" in err
    assert err.count("compatkit: error:") == 1


def _tamper(site: Path) -> None:
    """demo/greet.py rewritten to FORGED, with its state entry and RECORD row to match."""
    greet = site / "demo" / "greet.py"
    tmp = greet.with_suffix(".tmp")
    tmp.write_bytes(FORGED)
    tmp.replace(greet)  # a new inode: never through uv's hardlink
    info = next(site.glob("demo-1.0*.dist-info"))
    state_file = info / "compatkit" / "demo-fix.json"
    state = json.loads(state_file.read_text())
    for f in state["files"]:
        if f["path"] == "demo/greet.py":
            f["written_sha"] = row_for("demo/greet.py", FORGED).hash
    state_file.write_text(json.dumps(state))
    record = info / "RECORD"
    rows = [
        row_for("demo/greet.py", FORGED).raw if r.startswith("demo/greet.py,") else r
        for r in record.read_text().splitlines()
    ]
    record.write_text("\n".join(rows) + "\n")


@needs_uv
def test_verify_rederives_a_patched_wheels_bytes(
    demo: Demo, store: Path, tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    """A patched wheel keeps no originals: verify recovers them by un-applying the patches, and
    a tampered file with a state and RECORD to match is caught."""
    venv = make_venv()
    venv.install(built(demo, tmp_path / "out"), "uv", "--link-mode", "copy")
    there = Demo(venv, demo.patchsets, demo.wheel, demo.capsys)
    assert there.run("verify", "demo-fix")[0] == 0
    _tamper(venv.site)
    assert "drifted" not in there.run("status")[1].lower()
    code, _out, err = there.run("verify", "demo-fix")
    assert code == 1 and "the original bytes of demo/greet.py are not the ones recorded" in err


def test_verify_refuses_a_tampered_backup(demo: Demo, store: Path) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    archive = next(demo.venv.site.glob("demo-1.0.dist-info/compatkit/demo-fix/originals"))
    archive.write_bytes(archive.read_bytes().replace(b"hello", b"HELLO"))
    code, _out, err = demo.run("verify", "demo-fix")
    assert code == 1 and "the original bytes of demo/greet.py are not the ones recorded" in err


def test_verify_without_the_patch_files_says_what_it_checked(
    demo: Demo, store: Path, tmp_path: Path
) -> None:
    """A patched wheel's image has no patchset folder: verify checks the recorded hashes and
    says that it could not re-derive the bytes."""
    assert demo.run("apply", "demo-fix")[0] == 0
    empty = tmp_path / "no-patchsets"
    empty.mkdir()
    args = ("--python", demo.venv.python, "--patchset-dir", str(empty), "verify", "demo-fix")
    code, out, _err = run_cli(demo.capsys, *args)
    assert code == 0 and "verified: demo-fix" in out
    assert "note: demo-fix checked only against the hashes recorded at apply time" in out
    code, out, _err = demo.run("verify", "demo-fix")
    assert code == 0 and "note:" not in out


def test_forged_probe_toml_and_patchset_entries_are_ignored(
    demo: Demo, store: Path, tmp_path: Path
) -> None:
    """Entries for the environment probe, a pyproject.toml and a patchset.toml, forged by
    another user: none changes the environment, the patchset folders or the requirements."""
    project = tmp_path / "project"
    project.mkdir()
    pyproject = project / "pyproject.toml"
    pyproject.write_text('[tool.compatkit]\npatchsets = ["demo-fix"]\n')
    real_env = Environment.for_python(demo.venv.python)
    real_config = find_config(project)
    real_checked = validate(demo.patchsets / "demo-fix")
    probe = cache.entry("probe", target._probe_key(target._interpreter(demo.venv.python)))
    toml = cache.entry("toml", pyproject.read_bytes())
    spec = cache.entry("toml", (demo.patchsets / "demo-fix" / "patchset.toml").read_bytes())
    assert probe and toml and spec and probe.is_file() and toml.is_file() and spec.is_file()
    evil_site = str(tmp_path / "attacker-site")
    forged: dict[Path, dict[str, object]] = {
        probe: {**_read(probe), "paths": [evil_site], "executable": "/tmp/evil/python"},
        toml: {"tool": {"compatkit": {"patchsets": ["evil"], "patchset-dirs": ["/tmp/evil"]}}},
        spec: {
            **_read(spec),
            "target": {"distribution": "demo", "specifier": ">=0", "requires": ["evil"]},
        },
    }
    key = os.urandom(32)
    for foreign in (False, True):
        for entry, doc in forged.items():
            _sign_with(entry, doc, (store / "key").read_bytes() if foreign else key)
            if foreign:
                os.chown(entry, ATTACKER, ATTACKER)
        assert Environment.for_python(demo.venv.python) == real_env
        assert find_config(project) == real_config
        assert validate(demo.patchsets / "demo-fix").target == real_checked.target
    assert real_env.paths == (str(demo.venv.site),)


SPECIAL = ["fifo", "dev-zero-link", "device", "huge", "garbage", "directory", "empty"]


def _plant(entry: Path, kind: str) -> None:
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dev-zero-link":
        entry.symlink_to("/dev/zero")
    elif kind == "device":
        os.mknod(entry, 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's own numbers
    elif kind == "huge":
        with entry.open("wb") as f:
            f.truncate(cache.MAX_ENTRY + 1)  # sparse: no disk used
    elif kind == "garbage":
        entry.write_bytes(cache.MAGIC + os.urandom(4096))
    elif kind == "directory":
        entry.mkdir()
    else:
        entry.write_bytes(b"")


@pytest.mark.parametrize("kind", SPECIAL)
def test_special_entries_never_hang_crash_or_change_an_outcome(
    demo: Demo, store: Path, kind: str
) -> None:
    """Every entry (probe, TOML) replaced by a FIFO, a link to /dev/zero, a device, a
    huge sparse file, garbage, a folder or nothing: apply, verify, status in child processes
    (a hang would hit the timeout) give the same outcome, with at most one warning line."""
    _warm(demo)
    entries = sorted(store.glob("*/*.bin"))
    assert {e.parent.name for e in entries} == {"probe", "toml"}
    for entry in entries:
        _plant(entry, kind)
    env = {**os.environ, "COMPATKIT_CACHE_DIR": str(store)}
    for args in (["apply", "demo-fix"], ["verify", "demo-fix"], ["status"]):
        proc = subprocess.run(
            demo.command(*args), capture_output=True, text=True, timeout=60, env=env
        )
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
        assert len(proc.stderr.splitlines()) <= 1, proc.stderr
    assert _greet(demo) == POLITE


def test_special_files_as_the_key_or_a_kind_folder(demo: Demo, store: Path) -> None:
    _warm(demo)
    env = {**os.environ, "COMPATKIT_CACHE_DIR": str(store)}
    (store / "key").unlink()
    os.mkfifo(store / "key")
    proc = subprocess.run(
        demo.command("verify", "demo-fix"), capture_output=True, timeout=60, env=env
    )
    assert proc.returncode == 1 and b"not applied" in proc.stderr  # a real answer, no hang
    assert b"is not a regular file" in proc.stderr
    (store / "key").unlink()
    toml = store / "toml"
    toml.rename(store / "elsewhere")
    toml.symlink_to(store / "elsewhere")
    proc = subprocess.run(
        demo.command("apply", "demo-fix"), capture_output=True, timeout=60, env=env
    )
    assert proc.returncode == 0 and _greet(demo) == POLITE, proc.stderr
    assert b"is not a folder" in proc.stderr


def test_the_attacker_cannot_even_read_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """As uid 12345 in a child process: the key file cannot be read, so no entry can be
    signed; what the user stored stays readable to the user only (a world-readable file in
    the same folder is read: the test can fail)."""
    base = Path(tempfile.mkdtemp())
    try:
        base.chmod(0o755)
        store = base / "c"
        monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(store))
        cache.toml_loads(b"a = 1\n")
        store.chmod(0o755)
        (store / "toml").chmod(0o755)
        control = store / "readable"
        control.write_bytes(b"x")
        control.chmod(0o644)
        for path in (control, store / "key", next(store.glob("toml/*.bin"))):
            proc = subprocess.run(
                ["cat", str(path)],
                capture_output=True,
                timeout=60,
                preexec_fn=_become_attacker,
            )
            denied = proc.returncode == 1 and b"Permission denied" in proc.stderr
            assert denied == (path != control), (path, proc.stderr)
    finally:
        shutil.rmtree(base)


def _become_attacker() -> None:
    os.setgroups([])
    os.setgid(ATTACKER)
    os.setuid(ATTACKER)
