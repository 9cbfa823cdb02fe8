"""Runtime mode: compatkit exec and runtime install on the demo patchset, in real venvs whose
site-packages is read-only (a read-only bind mount in a mount namespace, or chmod as non-root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import Demo, build_wheel, read_only, write_patchset
from helpers.reliability import run_inprocess

SCRIPT = """\
import inspect, linecache, traceback
import demo.greet, demo.util
print("hello:", demo.greet.hello("x"), "line20:", demo.util.line20)
print("source:", inspect.getsource(demo.greet.hello).splitlines()[1].strip())
linecache.clearcache()
try:
    demo.greet.hello(None)
except TypeError:
    lines = traceback.format_exc().splitlines()  # 3.11+ adds a line of carets below
    print("trace:", lines[max(i for i, t in enumerate(lines) if "greet.py" in t) + 1].strip())
print("linecache:", linecache.getline(demo.greet.__file__, 2).strip())
"""
PATCHED = [
    "hello: hi x line20: 200",
    "source: return 'hi ' + name",
    "trace: return 'hi ' + name",
    "linecache: return 'hi ' + name",
]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return {**env, "COMPATKIT_CACHE_DIR": str(tmp_path / "cache"), **extra}


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def reinstall_as_1_1(demo: Demo, tmp_path: Path) -> None:
    """demo's installed files again, as version 1.1 (a new copy: no uv hardlink written)."""
    files = {
        p.relative_to(demo.venv.site).as_posix(): p.read_bytes()
        for p in demo.venv.site.glob("demo/*.py")
    }
    (tmp_path / "w11").mkdir()
    demo.venv.install(
        build_wheel(tmp_path / "w11", "demo", "1.1", files), "uv", "--link-mode", "copy"
    )


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPATKIT_CACHE_DIR", str(tmp_path / "cache"))


def test_exec_serves_patched_source_with_site_packages_read_only(
    demo: Demo, tmp_path: Path
) -> None:
    before = demo.venv.snapshot()
    env = _env(tmp_path)
    child = [demo.venv.python, "-c", SCRIPT]
    with read_only(demo.venv.site) as prefix:
        plain = run([*prefix, *child], env)
        assert plain.returncode == 0, plain.stderr
        assert "hello: hello x line20: 20" in plain.stdout  # unpatched without exec
        proc = run([*prefix, *demo.command("exec", "demo-fix", "--", *child)], env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.splitlines() == PATCHED
        # a child process of the command inherits the hook (PYTHONPATH)
        nested = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {SCRIPT!r}])"
        proc = run(
            [*prefix, *demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", nested)], env
        )
        assert proc.stdout.splitlines() == PATCHED, proc.stderr
        # linecache imported after the patched module: the patched lines are put there then
        late = "import demo.greet, linecache; print(linecache.getline(demo.greet.__file__, 2))"
        proc = run(
            [*prefix, *demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", late)], env
        )
        assert proc.stdout.strip() == "return 'hi ' + name", proc.stderr
    assert demo.venv.snapshot() == before
    assert not list(demo.venv.site.rglob("__pycache__"))


def test_bytecode_has_its_own_cache_tag_and_never_touches_installed_pycs(
    demo: Demo, tmp_path: Path
) -> None:
    site = demo.venv.site
    subprocess.run([demo.venv.python, "-m", "py_compile", str(site / "demo/greet.py")], check=True)
    (installed,) = (site / "demo/__pycache__").glob("greet.*.pyc")
    old = installed.read_bytes()
    env = _env(tmp_path)  # site-packages writable, bytecode writing on
    cmd = demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", SCRIPT)
    proc = run(cmd, env)
    assert proc.stdout.splitlines() == PATCHED, proc.stderr
    names = sorted(p.name for p in (site / "demo/__pycache__").iterdir())
    assert names == [
        f"__init__.{sys.implementation.cache_tag}.pyc",
        installed.name,
    ]  # Python writes here ...
    assert installed.read_bytes() == old  # ... but never the patched modules' pycs
    (pyc,) = (tmp_path / "cache/runtime").rglob("greet.*.pyc")
    assert pyc.name.startswith(f"greet.{sys.implementation.cache_tag}-ck")
    # the next start loads that pyc: a valid header with other code in it shows through
    header = pyc.read_bytes()[:16]
    code = compile("def hello(name):\n    return 'cached ' + name\n", "greet.py", "exec")
    import marshal

    pyc.write_bytes(header + marshal.dumps(code))
    probe = "import demo.greet; print(demo.greet.hello('x'))"
    proc = run(demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", probe), env)
    assert proc.stdout.strip() == "cached x", proc.stderr
    pyc.write_bytes(b"junk" + pyc.read_bytes()[4:])  # a bad header: compiled again, not trusted
    proc = run(demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", probe), env)
    assert proc.stdout.strip() == "hi x", proc.stderr


def test_the_hook_is_light_at_start_up(demo: Demo, tmp_path: Path) -> None:
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(tmp_path / "rt"))[0] == 0
    probe = (
        "import sys; heavy = {'json', 'hashlib', 'linecache', 'importlib', 'importlib.util', 're', "
        "'tokenize', 'compatkit'}"
        "; print(sorted(heavy & set(sys.modules)))"
    )
    env = _env(tmp_path, PYTHONPATH=str(tmp_path / "rt"))
    # A script, not -c: since 3.13 `python -c CODE` imports linecache itself, after the hook
    # has started, to show CODE's lines in tracebacks (pythonrun.c calls
    # linecache._register_code); a script is run without it on every version.
    script = tmp_path / "probe.py"
    for code in (probe, "import demo.greet; " + probe):  # patched imports too
        script.write_text(code + "\n")
        proc = run([demo.venv.python, str(script)], env)
        assert proc.stdout.strip() == "[]", proc.stderr + proc.stdout


def test_an_interpreter_the_hook_does_not_know_refuses_to_start(demo: Demo, tmp_path: Path) -> None:
    """The hook, started by a Python outside hook.KNOWN, stops it with one line, before any
    module is imported (unpatched or not); the versions here start it (every test above)."""
    from compatkit.runtime import hook

    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    (name,) = [p.stem for p in root.glob("_compatkit_hook_*.py")]
    start = (
        "import sys; sys.version_info = {v}; sys.path.insert(0, {r!r}); "
        "__import__({n!r}).start({r!r}, ('demo.greet',)); import demo.greet; print('ran')"
    )
    (lo, hi) = hook.KNOWN
    for version, known in (
        ((3, 9, 18), False),
        (lo, True),
        (hi, True),
        ((hi[0], hi[1] + 1, 0), False),
    ):
        code = start.format(v=(*version, 0, "final", 0)[:5], r=str(root), n=name)
        proc = run([demo.venv.python, "-c", code], _env(tmp_path))  # not on PYTHONPATH: no start
        if known:
            assert proc.returncode == 0 and proc.stdout == "ran\n", proc.stderr
            continue
        shown = ".".join(map(str, version[:3]))
        assert proc.returncode == 1 and proc.stdout == "", proc.stderr
        assert proc.stderr.splitlines() == [
            f"compatkit runtime: refusing to start: compatkit's runtime hook knows CPython "
            f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}, not {shown}; use 'compatkit apply', or a "
            "compatkit that knows this Python (or remove it: "
            f"'compatkit runtime uninstall --dir {root}')"
        ]
    assert hook.unknown_interpreter("pypy", (3, 11, 0)) == (
        "compatkit's runtime hook is for CPython, not pypy"
    )


def test_install_refuses_an_interpreter_the_hook_does_not_know(demo: Demo, tmp_path: Path) -> None:
    """Before anything is written: there the start-up file might never run (from 3.18 site
    ignores a .pth file's import lines, PEP 829), and nothing would say so."""
    from compatkit.env.target import Environment
    from compatkit.errors import CompatkitError
    from compatkit.load.registry import Registry
    from compatkit.runtime.prepare import prepare

    env = Environment.for_python(demo.venv.python)
    registry = Registry([demo.patchsets])
    assert prepare(registry, env, ["demo-fix"]).files  # the real one is known
    for impl, full in (("cpython", "3.16.0"), ("cpython", "3.9.18"), ("pypy", "3.11.9")):
        markers = {**env.markers, "implementation_name": impl, "python_full_version": full}
        other = Environment(env.executable, env.paths, env.cache_tag, markers)
        with pytest.raises(CompatkitError) as caught:
            prepare(registry, other, ["demo-fix"])
        assert str(caught.value).startswith(f"{env.executable}: compatkit's runtime hook ")
        assert "runtime mode cannot be used there" in str(caught.value)
        assert "\n" not in str(caught.value)


def test_a_changed_file_is_refused_loudly(demo: Demo, tmp_path: Path) -> None:
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    code, out, _ = demo.run("runtime", "verify", "--dir", str(root))
    assert code == 0 and "verified: demo-fix applied at import time" in out
    code, out, _ = demo.run("runtime", "status", "--dir", str(root), "--json")
    (doc,) = json.loads(out)["patchsets"]
    assert [(p["id"], p["status"]) for p in doc["patches"]] == [
        ("patch-1", "applied (runtime)"),
        ("patch-2", "applied (runtime)"),
    ]
    greet = demo.venv.site / "demo/greet.py"
    greet.write_bytes(greet.read_bytes() + b"# edited\n")
    swallow = "try:\n    import demo.greet\nexcept ImportError as e:\n    print(type(e).__name__)\n"
    proc = run([demo.venv.python, "-c", swallow], _env(tmp_path, PYTHONPATH=str(root)))
    assert proc.returncode == 1 and proc.stdout == ""  # except ImportError does not hide it
    assert ".RuntimeRefusal: compatkit runtime: refusing to import demo.greet" in proc.stderr
    swallow = swallow.replace("ImportError", "Exception")
    proc = run([demo.venv.python, "-c", swallow], _env(tmp_path, PYTHONPATH=str(root)))
    assert proc.stdout.strip() == "RuntimeRefusal"
    assert "compatkit runtime: refusing to import demo.greet" in proc.stderr  # even when caught
    assert "changed since demo-fix:patch-1 was prepared" in proc.stderr
    code, out, err = demo.run("runtime", "verify", "--dir", str(root))
    assert code == 1 and "demo-fix patch-1" in err and "the hook refuses to import it" in err
    code, out, _ = demo.run("runtime", "status", "--dir", str(root))
    assert code == 0 and "drifted" in out and "applied (runtime)" not in out.split("\n", 1)[1]
    # a file edited after install: refused as apply refuses it; --force patches it as it is
    greet.write_text("def hello(name):\n    return 'hey ' + name\n")
    cmd = ["exec", "demo-fix", "--", demo.venv.python, "-c", "print('ran')"]
    proc = run(demo.command(*cmd), _env(tmp_path))
    assert proc.returncode == 1 and "ran" not in proc.stdout
    assert proc.stderr.strip().splitlines() == [
        "compatkit: error: demo: demo/greet.py does not match its RECORD hash (edited after "
        "install?); reinstall it, or pass --force to patch it as it is"
    ]
    # a diff that no longer applies: exec --force refuses before the command runs, in one line
    proc = run(demo.command(*cmd[:2], "--force", *cmd[2:]), _env(tmp_path))
    assert proc.returncode == 1 and "ran" not in proc.stdout
    assert proc.stderr.strip().splitlines() == [
        "compatkit: error: demo-fix patch-1 does not apply: demo/greet.py: hunk #1 (line 1) "
        "does not match; runtime mode refuses it, as apply would"
    ]


def test_only_the_target_version_is_patched(demo: Demo, tmp_path: Path) -> None:
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    # the same files, as version 1.1: the patchset was prepared for demo 1.0
    reinstall_as_1_1(demo, tmp_path)
    proc = run([demo.venv.python, "-c", "import demo"], _env(tmp_path, PYTHONPATH=str(root)))
    assert proc.returncode == 1
    assert "demo-fix was prepared for demo 1.0, which is no longer installed" in proc.stderr
    code, _, err = demo.run("exec", "demo-fix", "--", "true")
    assert (
        code == 1
        and "demo-fix does not fit this environment: needs demo==1.0, found demo 1.1" in err
    )


CREATE_DELETE = """\
Patch-Id: patch-3
Title: New module, old one gone
Symptom: s
Cause: c
Fix: f
Smoke-Test: smoke/test_patch_1.py
---
--- /dev/null
+++ b/demo/extra.py
@@ -0,0 +1,2 @@
+def boom():
+    raise ValueError("from the created module")
--- a/demo/util.py
+++ /dev/null
@@ -1,40 +0,0 @@
""" + "".join(f"-line{i} = {i}\n" for i in range(40))


def test_created_modules_are_served_and_deleted_ones_hidden(demo: Demo, tmp_path: Path) -> None:
    write_patchset(demo.patchsets, "demo-new", {"0003.patch": CREATE_DELETE})
    script = (
        "import inspect, traceback, demo.extra\n"
        "print(inspect.getsource(demo.extra.boom).splitlines()[1].strip())\n"
        "try:\n    demo.extra.boom()\nexcept ValueError:\n"
        "    print(traceback.format_exc().splitlines()[-2].strip())\n"
        "try:\n    import demo.util\n"
        "except ModuleNotFoundError as e:\n    print('hidden', e.name)\n"
    )
    with read_only(demo.venv.site) as prefix:
        cmd = [*prefix, *demo.command("exec", "demo-new", "--", demo.venv.python, "-c", script)]
        proc = run(cmd, _env(tmp_path))
    raise_line = 'raise ValueError("from the created module")'
    assert proc.stdout.splitlines() == [raise_line, raise_line, "hidden demo.util"], proc.stderr
    assert "demo.util" not in proc.stderr  # hidden as the patch says: nothing to shout about


def test_sitecustomize_chains_and_pth_form(demo: Demo, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.CHAINED = True\n")
    probe = "import builtins, demo.greet as g; print(getattr(builtins, 'CHAINED', 0), g.hello('x'))"
    env = _env(tmp_path, PYTHONPATH=str(other))
    proc = run(demo.command("exec", "demo-fix", "--", demo.venv.python, "-c", probe), env)
    assert proc.stdout.strip() == "True hi x", proc.stderr
    # the .pth form: every start of this venv's python, no PYTHONPATH
    root = tmp_path / "rt"
    code, out, _ = demo.run("runtime", "install", "demo-fix", "--dir", str(root), "--pth")
    assert code == 0 and "00-compatkit-runtime.pth" in out
    assert (
        (demo.venv.site / "00-compatkit-runtime.start")
        .read_text()
        .splitlines()[1]
        .endswith(":start")
    )
    assert not (root / "sitecustomize.py").exists()
    # what a PEP 829 site.py (3.15+) does with the .start file: resolve the entry point, call it
    (entry,) = (demo.venv.site / "00-compatkit-runtime.start").read_text().splitlines()[1:]
    pep829 = (
        f"import sys, pkgutil; sys.path[:0] = [{str(root)!r}, {str(demo.venv.site)!r}]\n"
        f"pkgutil.resolve_name({entry!r})()\n"
        "import demo.greet; print(demo.greet.hello('x'))\n"
    )
    proc = run([demo.venv.python, "-S", "-c", pep829], _env(tmp_path))  # -S: no .pth at all
    assert proc.stdout.strip() == "hi x", proc.stderr
    plain = [demo.venv.python, "-c", "import demo.greet; print(demo.greet.hello('x'))"]
    assert run(plain, _env(tmp_path)).stdout.strip() == "hi x"
    isolated = [plain[0], "-I", *plain[1:]]  # -I ignores PYTHONPATH, not site-packages' .pth
    assert run(isolated, _env(tmp_path)).stdout.strip() == "hi x"
    assert demo.run("runtime", "verify", "--dir", str(root))[0] == 0
    code, out, _ = demo.run("runtime", "uninstall", "--dir", str(root))
    assert code == 0 and not list(demo.venv.site.glob("00-compatkit-runtime.*"))
    assert run(plain, _env(tmp_path)).stdout.strip() == "hello x"
    assert not (root / "_compatkit_runtime").exists()


def test_bad_input_is_one_line_with_a_documented_exit_code(demo: Demo, tmp_path: Path) -> None:
    cases = [
        (["exec", "demo-fix"], 2, "exec needs a command after '--'"),
        (["exec", "nope", "--", "true"], 2, "unknown patchset 'nope'"),
        (["exec", "demo-fix", "--", str(tmp_path / "no-such-command")], 127, "cannot run"),
        (["exec", "demo-fix", "demo-fix", "--", "true"], 2, "a patchset is named twice"),
        (["runtime", "uninstall", "--dir", str(tmp_path)], 2, "holds no compatkit runtime"),
        (["runtime", "install", "--dir", str(tmp_path / "x")], 2, "required: patchset"),
        (["runtime", "verify", "demo-fix", "--dir", str(tmp_path)], 2, "unrecognized arg"),
        (["runtime", "status", "demo-fix", "--dir", str(tmp_path)], 2, "unrecognized arg"),
        (["runtime", "status", "--pth", "--dir", str(tmp_path)], 2, "unrecognized arg"),
        (["runtime", "verify", "--dir", str(tmp_path)], 2, "holds no compatkit runtime"),
    ]
    for args, expected, text in cases:
        try:
            code, _, err = demo.run(*args)
        except SystemExit as exc:  # argparse's usage errors (issue 47: one parser per sub-verb)
            code, err = int(str(exc.code)), demo.capsys.readouterr().err
        assert (code, len(err.strip().splitlines())) == (expected, 1), (args, err)
        assert text in err, (args, err)
    assert demo.run("exec", "demo-fix", "--", sys.executable, "-c", "raise SystemExit(7)")[0] == 7


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "--runtime", "DIR"],
        ["status", "--runtime", "DIR"],
        ["--json", "status", "--runtime=DIR"],
        ["runtime", "verify"],  # --dir is required
    ],
)
def test_the_old_runtime_flags_are_usage_errors(
    demo: Demo, tmp_path: Path, args: list[str]
) -> None:
    """``status``/``verify --runtime DIR`` became ``runtime status|verify --dir DIR`` (issue 35,
    item 6: a flag never turns a command into another); the old forms are gone, no alias."""
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    args = [a.replace("DIR", str(root)) for a in args]
    ran = run_inprocess("--python", demo.venv.python, "--patchset-dir", str(demo.patchsets), *args)
    assert ran.code == 2 and len(ran.err.splitlines()) == 1, ran
    assert ran.err.startswith("compatkit: error: "), ran
    assert "--json" in args or ran.out == ""


def test_runtime_status_and_verify_on_a_real_folder(demo: Demo, tmp_path: Path) -> None:
    """The subcommands check the folder ``runtime install`` wrote, and say when it drifts."""
    root = tmp_path / "rt"
    assert demo.run("runtime", "install", "demo-fix", "--dir", str(root))[0] == 0
    code, out, err = demo.run("runtime", "status", "--dir", str(root))
    assert (code, err) == (0, ""), err
    title = f"demo-fix 1.0.0 (runtime {root}): applied (runtime)"
    assert " ".join(out.split()).startswith(title), out  # wrapped at spaces in a pipe
    code, out, err = demo.run("runtime", "verify", "--dir", str(root))
    assert (code, err) == (0, "") and out.startswith("verified: demo-fix applied at import time")
    assert "(2 patches)" in out, out
    code, out, _ = demo.run("--json", "runtime", "verify", "--dir", str(root))
    doc = json.loads(out)
    assert doc["dir"] == str(root) and doc["problems"] == []
    assert doc["patchsets"] == [
        {"name": "demo-fix", "version": "1.0.0", "ok": True, "problems": []}
    ]
    util = demo.venv.site / "demo/util.py"
    tmp = util.with_name("util.py.new")  # a new inode: never through uv's hardlink
    tmp.write_bytes(util.read_bytes() + b"# edited\n")
    tmp.replace(util)
    code, out, err = demo.run("--json", "runtime", "verify", "--dir", str(root))
    (entry,) = json.loads(out)["patchsets"]
    assert code == 1 and entry["ok"] is False, out
    assert any("demo-fix patch-2" in p for p in entry["problems"]), entry
    code, out, _ = demo.run("--json", "runtime", "status", "--dir", str(root))
    (entry,) = json.loads(out)["patchsets"]
    assert code == 0 and entry["state"] == "drifted: the hook refuses it"
    assert [p["status"] for p in entry["patches"]] == ["drifted", "drifted"]


def test_a_patchset_applied_on_disk_or_touching_data_is_refused(demo: Demo, tmp_path: Path) -> None:
    assert demo.run("apply", "demo-fix")[0] == 0
    code, _, err = demo.run("exec", "demo-fix", "--", "true")
    assert code == 1 and "is applied to the installed files already" in err
    data = CREATE_DELETE.replace("patch-3", "patch-9").split("--- /dev/null")[0]
    data += "--- /dev/null\n+++ b/demo/data.json\n@@ -0,0 +1 @@\n+{}\n"
    write_patchset(demo.patchsets, "demo-data", {"0009.patch": data})
    code, _, err = demo.run("exec", "demo-data", "--", "true")
    assert code == 1 and "runtime mode patches .py modules only" in err
