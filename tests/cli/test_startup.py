"""The start-up path (benchmark P1): what the read-only commands import, and the shortcuts that
keep heavy imports off it (the dist-info scan, the TOML cache, RECORD rows split without csv)
agree with the libraries they stand in for."""

from __future__ import annotations

import csv
import io
import marshal
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import packaging
import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name as canonical_name

import compatkit
from compatkit.env import target
from compatkit.env.target import Environment
from compatkit.load import cache
from compatkit.model.records import Record, Row, hash_bytes, row_for
from helpers import TOML, Demo, Venv, backports, build_wheel

SRC = Path(compatkit.__file__).resolve().parent.parent

# Modules that cost milliseconds to import and that status/verify/explain do not need.
HEAVY = (
    "tomllib",
    "tomli",  # tomllib below 3.11
    "importlib_metadata",
    "importlib.metadata",
    "rich",
    "unidiff",
    "ctypes",
    "email",
    "cyclonedx",  # the tests' SBOM validator (compatkit[test]); compatkit never imports it
    "packageurl",
    "ray",
)

RUN = """
import sys
from compatkit.cli.main import main
code = main(sys.argv[1:])
heavy = sorted({m for m in sys.modules for h in HEAVY if m == h or m.startswith(h + ".")})
print("LOADED", " ".join(heavy), file=sys.stderr)
sys.exit(code)
"""


# The writing side: a read-only command with no journal left needs none of it (the lock is
# compatkit.env.session's; txn's rollback is imported only when a journal is there).
WRITING = (
    "compatkit.env.txn",
    "compatkit.model.journal",
    "compatkit.atomic",
)


def pythonpath(tmp_path: Path) -> str:
    """This checkout's compatkit and its start-up dependency (packaging), for a venv that has
    neither installed."""
    deps = tmp_path / "deps"
    deps.mkdir(exist_ok=True)
    if not (deps / "packaging").exists():
        (deps / "packaging").symlink_to(Path(str(packaging.__file__)).parent)
    backports(deps)  # and tomli, below 3.11
    return f"{SRC}{os.pathsep}{deps}"


def _run_in(
    venv: Venv, cwd: Path, *args: str, watched: tuple[str, ...] = HEAVY
) -> tuple[int, str, list[str]]:
    """compatkit from this checkout, run by the venv's own interpreter (no --python probe)."""
    proc = subprocess.run(
        [venv.python, "-c", f"HEAVY = {watched!r}\n{RUN}", *args],
        cwd=cwd,
        env={**_env(), "PYTHONPATH": pythonpath(cwd)},
        capture_output=True,
        text=True,
    )
    loaded = [line for line in proc.stderr.splitlines() if line.startswith("LOADED")]
    assert loaded, proc.stderr
    return proc.returncode, proc.stdout + proc.stderr, loaded[-1].split()[1:]


def _env() -> dict[str, str]:

    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "UV_"))}


def test_read_only_commands_stay_off_heavy_imports(
    demo: Demo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a cache of its own: the user's is shared with every test process running beside this
    # one (xdist workers, nox's other Pythons), which fill or read it while this test runs
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "ck-cache"))
    assert demo.run("apply", "demo-fix")[0] == 0
    ps = str(demo.patchsets)
    toml_dir = Path(cache.cache_dir() or "") / "toml"
    shutil.rmtree(toml_dir, ignore_errors=True)
    # first run: the TOML cache is cold, so tomllib (tomli) is imported, and the cache is filled
    code, out, loaded = _run_in(demo.venv, tmp_path, "status", "--patchset-dir", ps)
    assert code == 0 and TOML in loaded, out
    assert list(toml_dir.glob("*.bin"))  # one entry per patchset.toml seen
    for args, expect, more in (
        (["status"], "applied", ("csv",)),  # no RECORD read: csv stays off
        (["verify"], "intact", ()),
        (["explain", "patch-1"], "Greet politely", ("csv",)),
        (["list"], "demo-fix", ("csv",)),
    ):
        # warm: the command has run once, so the start-up cache holds packaging's answers to
        # its own questions (explain asks one that status and verify do not); then packaging,
        # and with it typing (TYPE_CHECKING = False, CONTRIBUTING.md), stays unimported
        _run_in(demo.venv, tmp_path, *args, "--patchset-dir", ps)
        watched = (*HEAVY, *WRITING, "typing", "packaging.version", *more)
        code, out, loaded = _run_in(
            demo.venv, tmp_path, *args, "--patchset-dir", ps, watched=watched
        )
        assert code == 0, (args, out)
        assert expect in out, (args, out)
        assert loaded == [], f"compatkit {' '.join(args)} imported {loaded}"


def test_fleet_without_ray_is_one_clear_line(demo: Demo, tmp_path: Path) -> None:
    """The demo venv has no Ray: the plain commands never needed it, fleet says what to do."""
    code, out, _ = _run_in(
        demo.venv, tmp_path, "fleet", "status", "demo-fix", "--patchset-dir", str(demo.patchsets)
    )
    assert code == 1, out
    hint = "compatkit fleet needs Ray beside compatkit: pip install 'ray[default]>=2.49'"
    assert f"compatkit: error: {hint}" in out


def test_the_dist_info_scan_agrees_with_importlib_metadata(
    tmp_path: Path, make_venv: Callable[..., Venv]
) -> None:
    venv = make_venv()
    names = ["demo", "Foo.Bar_baz", "UPPER_Case", "x"]
    for i, name in enumerate(names):
        (tmp_path / f"w{i}").mkdir()
        wheel = build_wheel(tmp_path / f"w{i}", name, f"1.{i}", {f"mod{i}/__init__.py": b""})
        venv.install(wheel)
    env = Environment.for_python(venv.python)
    spellings = ["demo", "DEMO", "foo-bar-baz", "foo.bar.baz", "Foo_Bar-Baz", "upper_case", "x"]
    for query in [*spellings, "not-installed", "pip"]:
        wanted = canonical_name(query)
        settled, found = env._scan(wanted)
        assert settled, query  # the scan settles all of these without the library ...
        assert found == env._find_general(wanted) == env.find(query), query  # ... and agrees
    assert all(env.find(q) is not None for q in spellings)
    # a stale second dist-info for one name: the scan defers to importlib-metadata
    info = next(venv.site.glob("demo-1.0.dist-info"))
    shutil.copytree(info, venv.site / "demo-0.9.dist-info")
    assert env._scan("demo") == (False, None)
    assert env.find("demo") == env._find_general("demo") is not None
    # METADATA naming another project: the scan does not trust the folder name
    (venv.site / "demo-0.9.dist-info").rename(venv.site / "ghost-0.9.dist-info")
    assert env._scan("ghost") == (False, None) and env.find("ghost") is None


@pytest.mark.parametrize(
    "raw",
    [
        "pkg/m.py,sha256=abc,3",
        "pkg-1.dist-info/RECORD,,",
        '"pkg/a,b.py",sha256=abc,3',
        '"pkg/""q"".py",sha256=abc,12',
        "pkg/no_size.py,sha256=abc",
        "just-a-path",
    ],
)
def test_record_rows_split_as_csv_does(raw: str) -> None:
    fields = next(csv.reader([raw]))
    row = Row.from_raw(raw)
    assert row.path == fields[0]
    assert row.hash == (fields[1] if len(fields) > 1 else "")
    assert row.size == (int(fields[2]) if len(fields) > 2 and fields[2].isdigit() else None)


def _sign(entry: Path, blob: bytes) -> None:
    """Write ``blob`` as the entry, signed with this user's key (as compatkit would)."""
    cache.write(str(entry.parent.parent), entry.parent.name, entry.name, blob)


def test_toml_cache_hits_misses_and_refusals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "c"))
    raw = b'[patchset]\nname = "x"\nseries = ["a", "b"]\nn = 3\n'
    first = cache.toml_loads(raw)
    assert first == {"patchset": {"name": "x", "series": ["a", "b"], "n": 3}}
    (entry,) = (tmp_path / "c" / "toml").glob("*.bin")
    parses: list[bytes] = []
    real_parse = cache._parse_toml

    def counting(data: bytes) -> dict[str, object]:
        parses.append(data)
        return real_parse(data)

    monkeypatch.setattr(cache, "_parse_toml", counting)
    assert cache.toml_loads(raw) == first and parses == []  # served from the cache
    good = entry.read_bytes()
    assert good.startswith(cache.MAGIC)
    magic = cache.MAGIC
    junk = (b"{truncated", good[:-3], good[: len(magic) + 1], magic + b"\xff\x00", None)
    for n, bad in enumerate(junk, start=1):
        if bad is None:  # well formed and signed, but not a table
            _sign(entry, marshal.dumps([1, 2]))
        else:
            entry.write_bytes(bad)
        assert cache.toml_loads(raw) == first and len(parses) == n  # corrupt: parsed again
        assert entry.read_bytes() == good  # ... and rewritten whole
        assert cache.toml_loads(raw) == first and len(parses) == n
    parses.clear()
    # dates are no marshal type (and NaN is not equal to itself): parsed every time
    dated = b"when = 2026-12-02\n"
    cache.toml_loads(dated)
    cache.toml_loads(dated)
    nan = b"x = nan\n"
    cache.toml_loads(nan)
    cache.toml_loads(nan)
    assert len(parses) == 4 and len(list((tmp_path / "c" / "toml").glob("*.bin"))) == 1
    # bad TOML raises as tomllib does, and nothing is cached
    with pytest.raises(ValueError):
        cache.toml_loads(b"name = \n")
    # off switch, and an unwritable cache directory, both just parse
    monkeypatch.setenv("COMPATKIT_NO_CACHE", "1")
    assert cache.toml_loads(b"a = 1\n") == {"a": 1}
    monkeypatch.delenv("COMPATKIT_NO_CACHE")
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(blocker / "sub"))
    assert cache.toml_loads(b"a = 2\n") == {"a": 2}
    assert len(list((tmp_path / "c" / "toml").glob("*.bin"))) == 1


@given(
    n=st.integers(0, 30),
    picks=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 60)), max_size=12),
)
def test_insert_all_is_insert_row_by_row(n: int, picks: list[tuple[int, int]]) -> None:
    """The one-pass merge revert uses must equal the row-at-a-time inserts it replaces, for
    ascending and non-ascending indexes, paths already present, indexes past the end."""
    record = Record(tuple(Row.from_raw(f"f{i}.py,,") for i in range(n)), "\n", True)
    rows = [(index, Row.from_raw(f"f{path}.py,sha256=x,1")) for index, path in picks]
    expected = record
    for index, row in rows:
        expected = expected.insert(index, row)
    assert record.insert_all(rows) == expected
    # the revert case: rows dropped first, then put back at ascending distinct indexes
    ascending = sorted(dict((r.path, (i, r)) for i, r in rows).values(), key=lambda p: p[0])
    ascending = [p for k, p in enumerate(ascending) if k == 0 or p[0] > ascending[k - 1][0]]
    record = record.without({r.path for _, r in ascending})
    expected = record
    for index, row in ascending:
        expected = expected.insert(index, row)
    assert record.insert_all(ascending) == expected


@pytest.mark.parametrize("path", ["a/b.py", "a,b.py", 'a"q.py', "sp ace.py", "tab\tx.py", "é.py"])
@pytest.mark.parametrize("data", [None, b"xyz"])
def test_row_for_writes_what_csv_writes(path: str, data: bytes | None) -> None:
    buf = io.StringIO()
    fields = [path, "", ""] if data is None else [path, hash_bytes(data), len(data)]
    csv.writer(buf, lineterminator="").writerow(fields)
    assert row_for(path, data).raw == buf.getvalue()


def test_python_probe_is_cached_until_the_interpreter_changes(
    tmp_path: Path, make_venv: Callable[..., Venv], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "c"))
    venv = make_venv()
    probes: list[str] = []
    real_probe = target._probe

    def counting(python: str, exe: str) -> dict[str, object]:
        probes.append(exe)
        return real_probe(python, exe)

    monkeypatch.setattr(target, "_probe", counting)
    first = Environment.for_python(venv.python)
    assert Environment.for_python(venv.python) == first and len(probes) == 1  # cache hit
    assert first.paths == (str(venv.site),) and first.markers["sys_platform"] == sys.platform
    # the venv recreated at the same path: new link, new pyvenv.cfg, so a new probe
    shutil.rmtree(venv.root)
    subprocess.run(["uv", "venv", "-q", "-p", sys.executable, str(venv.root)], check=True)
    assert Environment.for_python(venv.python) == first and len(probes) == 2
    # a corrupt or malformed entry is probed again, never trusted
    entry = cache.entry("probe", target._probe_key(target._interpreter(venv.python)))
    assert entry is not None and entry.is_file()
    junk = (b"{not json", marshal.dumps({"executable": 3}), cache.MAGIC + b"{")
    for n, bad in enumerate(junk):
        if n == 1:  # signed, well formed marshal, but not a probe's answer
            _sign(entry, bad)
        else:
            entry.write_bytes(bad)
        assert Environment.for_python(venv.python) == first
    assert len(probes) == 2 + len(junk)
    monkeypatch.setenv("COMPATKIT_NO_CACHE", "1")
    Environment.for_python(venv.python)
    assert len(probes) == 3 + len(junk)
