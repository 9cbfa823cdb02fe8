"""P5: apply + revert of a real upgrade diff vs git apply + git apply -R of the same diff.

For each pair of releases (requests 2.31.0 → 2.32.3, click 8.1.3 → 8.1.7, jinja2 3.1.2 →
3.1.4), both wheels are installed from the package index (uv, no dependencies) and the patch is
``git diff --no-index`` of the two installed packages: the real upgrade, as a patchset of one
patch targeting the old release. The target venv has the old release with its bytecode
compiled (as pip leaves it); the reference applies the same diff with git to a plain copy of
the old package. Journal, RECORD and bytecode handling are all on. Runs are interleaved and
start from files on disk (``sync``, untimed), as in P2. These patchsets are small, so what is
measured is mostly compatkit's fixed cost per run: two interpreter start-ups, the imports, the
lock, the journal and two ``syncfs``. Three figures split the pair, each timed in the same
rounds: P5-floor (two ``python -c pass``), P5-imports (two interpreters importing only what an
apply and a revert cannot do without) and P5-modules (two interpreters importing every module
the two commands import, listed from a real run); the pair less P5-modules is the work.

compatkit is the one installed in the venv of bench/run.py's ``--python``, as users get it (not
editable, bytecode compiled); the interpreter start-ups and imports are that interpreter's.
Peers (issue 35), each installed in that venv too (``nox -s bench`` installs them) and skipped
with one line when absent, apply and revert the same diff to the same release on their own copy
of the target venv, timed in the same rounds:

- socket-patch: a ``.socket/manifest.json`` entry for the release, ``beforeHash`` and
  ``afterHash`` of every changed file (git's SHA-256 of a blob) and both sides' bytes in
  ``.socket/blobs/``, found through the project's ``.venv``; ``apply`` then ``rollback``,
  ``--offline``;
- patch-ng: ``python -m patch_ng -d SITE-PACKAGES DIFF``, then the same with ``--revert``;
- patch-package-py: ``p12y apply`` with the diff as ``patches/NAME+VERSION.patch``; it has no
  revert, and puts a package back by reinstalling the release (``restore_clean_package``: ``uv
  pip install --force-reinstall --no-deps NAME==VERSION``), which is what is timed;
- venv-patcher: installed in its venv (it patches the environment it runs in, which must import
  the package: its dependencies are installed there too), ``venv-patcher apply -f FILE`` with
  ``apply-command = "git apply -p2"`` (a git repository of the package folder, made on its
  first run), then ``venv-patcher reset -p NAME``.

After the warm-up round, each peer's package folder is checked against the new release after
its apply and the old one after its revert (bytecode and the tools' own files aside).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import Figure, Report, rounds, timed, timed_pair

PAIRS = [
    ("requests", "2.31.0", "2.32.3"),
    ("click", "8.1.3", "8.1.7"),
    ("jinja2", "3.1.2", "3.1.4"),
]
HEADER = (
    "Patch-Id: patch-1\nTitle: upgrade\nSymptom: s\nCause: c\nFix: f\n"
    "Smoke-Test: smoke/test_x.py\n---\n"
)


def _venv(path: Path, requirement: str, compile_bytecode: bool, *also: str) -> Path:
    """A venv holding ``requirement`` (no dependencies unless ``also`` names any)."""
    subprocess.run(["uv", "venv", "-q", "-p", PYTHON[0], str(path)], check=True)
    cmd = ["uv", "pip", "install", "-q", "--python", str(path / "bin/python")]
    cmd += ["--link-mode", "copy", *(["--compile-bytecode"] if compile_bytecode else [])]
    subprocess.run([*cmd, "--no-deps", requirement], check=True)
    if also:
        subprocess.run([*cmd, *also], check=True)
    return next(path.glob("lib/python3*/site-packages"))


def _upgrade_diff(work: Path, package: str, old: Path, new: Path) -> str:
    """``git diff --no-index`` of the two installed packages, as paths below site-packages."""
    (work / "old").mkdir()
    (work / "new").mkdir()
    shutil.copytree(old / package, work / "old" / package)
    shutil.copytree(new / package, work / "new" / package)
    proc = subprocess.run(
        ["git", "diff", "--no-index", "--no-color", "--src-prefix=a/", "--dst-prefix=b/",
         f"old/{package}", f"new/{package}"],
        cwd=work, capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"git diff --no-index failed: {proc.stderr.strip()}")
    out = []
    for line in proc.stdout.splitlines(keepends=True):
        if line.startswith("diff --git "):
            line = line.replace(" a/old/", " a/", 1).replace(" b/new/", " b/", 1)
        elif line.startswith("--- a/old/"):
            line = "--- a/" + line[len("--- a/old/") :]
        elif line.startswith("+++ b/new/"):
            line = "+++ b/" + line[len("+++ b/new/") :]
        out.append(line)
    return "".join(out)


class Peer:
    """Another tool's apply and revert of the diff, on its own copy of the target venv."""

    def __init__(self, name: str, how: str, site: Path, package: str) -> None:
        self.name, self.how, self.site, self.package = name, how, site, package
        self.apply: list[str] = []
        self.revert: list[str] = []
        self.cwd: Path | None = None
        self.env = dict(os.environ)

    def pair(self) -> tuple[float, float]:
        return timed_pair(self.apply, self.revert, self.env, self.cwd)

    def check(self, old: Path, new: Path) -> None:
        """Apply and revert once more, comparing the package folder with each release."""
        for cmd, want in ((self.apply, new), (self.revert, old)):
            timed(cmd, env=self.env, cwd=self.cwd)
            got, expected = _tree(self.site / self.package), _tree(want / self.package)
            if got != expected:
                wrong = sorted(
                    k for k in got.keys() | expected.keys() if got.get(k) != expected.get(k)
                )
                raise RuntimeError(f"P5 peer {self.name}: {' '.join(cmd[:2])} left {wrong[:5]}")


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file of a package folder but bytecode and the peers' own (.git, .gitignore)."""
    skip = {"__pycache__", ".git"}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and not skip & set(p.relative_to(folder).parts) and p.name != ".gitignore"
    }


# The interpreter of the venv bench measures (bench/run.py's --python): compatkit installed
# there as users get it (not editable, bytecode compiled), the peers beside it (run sets it).
PYTHON = [Path(sys.executable)]


def _beside(script: str) -> Path | None:
    path = PYTHON[0].parent / script
    return path if path.exists() else None


def _installed(name: str) -> str | None:
    """The version of distribution ``name`` in the measured venv, or None."""
    code = "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))"
    proc = subprocess.run([PYTHON[0], "-c", code, name], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _git_sha256(data: bytes) -> str:
    return hashlib.sha256(b"blob %d\0" % len(data) + data).hexdigest()


def _socket_patch(work: Path, package: str, old: str, srcs: tuple[Path, Path]) -> Peer | None:
    exe = _beside("socket-patch")
    if exe is None:
        return None
    site = _venv(work / "sp-target", f"{package}=={old}", compile_bytecode=True)
    project = work / "sp-project"
    blobs = project / ".socket" / "blobs"
    blobs.mkdir(parents=True)
    (project / ".venv").symlink_to(work / "sp-target")
    files: dict[str, dict[str, str]] = {}
    old_tree, new_tree = (_tree(src / package) for src in srcs)
    for rel in sorted(old_tree.keys() | new_tree.keys()):
        before, after = old_tree.get(rel), new_tree.get(rel)
        if before == after:
            continue
        for data in (before, after):
            if data is not None:
                (blobs / _git_sha256(data)).write_bytes(data)
        files[f"{package}/{rel}"] = {
            "beforeHash": "" if before is None else _git_sha256(before),
            "afterHash": "" if after is None else _git_sha256(after),
        }
    record = {
        "uuid": "00000000-0000-4000-8000-000000000035",
        "exportedAt": "2026-01-01T00:00:00Z",
        "files": files,
        "vulnerabilities": {},
        "description": "the upgrade",
        "license": "MIT",
        "tier": "free",
    }
    manifest = {"patches": {f"pkg:pypi/{package}@{old}": record}}
    (project / ".socket" / "manifest.json").write_text(json.dumps(manifest, indent=2))
    peer = Peer(f"socket-patch {_installed('socket-patch')}", "apply, rollback", site, package)
    flags = ["--cwd", str(project), "--offline", "--no-telemetry", "--silent"]
    peer.apply, peer.revert = [str(exe), "apply", *flags], [str(exe), "rollback", *flags]
    # socket-patch looks in the activated venv before the project's .venv: under nox that is
    # bench's own venv, where it finds no such release and fails without a word
    peer.env["VIRTUAL_ENV"] = str(work / "sp-target")
    return peer


def _patch_ng(work: Path, package: str, old: str, diff: Path) -> Peer | None:
    if _installed("patch-ng") is None:
        return None
    site = _venv(work / "png-target", f"{package}=={old}", compile_bytecode=True)
    peer = Peer(f"patch-ng {_installed('patch-ng')}", "python -m patch_ng, --revert", site, package)
    cmd = [str(PYTHON[0]), "-m", "patch_ng", "-q", "-d", str(site), str(diff)]
    peer.apply, peer.revert = cmd, [*cmd[:-1], "--revert", cmd[-1]]
    return peer


def _patch_package_py(work: Path, package: str, old: str, dist: str, diff: Path) -> Peer | None:
    exe = _beside("p12y")
    if exe is None:
        return None
    site = _venv(work / "p12y-target", f"{package}=={old}", compile_bytecode=True)
    peer = Peer(
        f"patch-package-py {_installed('patch-package-py')}",
        "p12y apply, a reinstall",
        site,
        package,
    )
    peer.cwd = work / "p12y-project"
    (peer.cwd / "patches").mkdir(parents=True)
    shutil.copy(diff, peer.cwd / "patches" / f"{dist}+{old}.patch")
    peer.apply = [str(exe), "apply", "-e", str(work / "p12y-target")]
    python = str(work / "p12y-target" / "bin" / "python")
    peer.revert = ["uv", "pip", "install", "-q", "--force-reinstall", "--no-deps"]
    peer.revert += [f"{package}=={old}", "--python", python]
    return peer


def _venv_patcher(work: Path, package: str, old: str, diff: Path) -> Peer | None:
    version = _installed("venv-patcher")
    if _beside("venv-patcher") is None or version is None:
        return None
    root = work / "vp-target"
    site = _venv(root, f"{package}=={old}", True, f"{package}=={old}", f"venv-patcher=={version}")
    peer = Peer(f"venv-patcher {version}", "apply, reset", site, package)
    spec = work / "vp.toml"
    spec.write_text(
        f'version = 1\n\n[[patches]]\npackage = "{package}"\npath = "{diff}"\n'
        'apply-command = "git apply -p2"\n'
    )
    exe = str(root / "bin" / "venv-patcher")
    peer.apply, peer.revert = [exe, "apply", "-f", str(spec)], [exe, "reset", "-p", package]
    return peer


# What an apply and a revert written in Python with compatkit's dependencies import at the
# least, whatever their own code: argparse (the command line), pathlib, json (the state file),
# hashlib (RECORD's hashes), ctypes (syncfs); apply also packaging.specifiers (the PEP 440 fit
# check), asked of packaging itself by a command that writes (nothing cached decides what is
# written). A distribution's name is normalized by PEP 503's rule (compatkit.model.names), not
# by packaging.utils, whose import of packaging.tags this floor no longer counts (issue 48).
REVERT_IMPORTS = "argparse, pathlib, json, hashlib, ctypes"
# as compatkit's console script imports (compatkit.cli.entry): with the cyclic collector off
NO_GC = "import gc; gc.disable(); "
APPLY_IMPORTS = f"{REVERT_IMPORTS}, packaging.specifiers"

PEERS = ("socket-patch", "patch-ng", "patch-package-py", "venv-patcher")
# compatkit's pair against each (issue 48): at most this many times its time; Python peers 1.0×
LIMITS = {"socket-patch": 1.25}


def write_patchset(work: Path, package: str, old: str, new: str, diff: str, site: Path) -> Path:
    """The one-patch patchset ``upgrade`` of the upgrade diff, under ``work/ps`` (returned),
    for the distribution installed in ``site``."""
    ps = work / "ps" / "upgrade"
    (ps / "patches").mkdir(parents=True)
    (ps / "smoke").mkdir()
    (ps / "smoke" / "test_x.py").write_text("def test_x():\n    pass\n")
    (ps / "patches" / "upgrade.patch").write_text(HEADER + diff)
    dist = next(site.glob("*.dist-info")).name.split("-")[0]
    (ps / "patchset.toml").write_text(
        f'[patchset]\nname = "upgrade"\nversion = "1"\nsummary = "{package} {new}"\n'
        f'series = ["patches/upgrade.patch"]\n[target]\ndistribution = "{dist}"\n'
        f'specifier = "=={old}"\n'
    )
    return work / "ps"


def _loaded_by(base: list[str], command: str, env: dict[str, str], work: Path) -> list[str]:
    """Every module that ``compatkit COMMAND upgrade`` imports beyond the interpreter's own
    start-up (compatkit's, the standard library's, packaging's), in import order: the command
    is run once, for real, by its console script's code, and lists ``sys.modules`` at exit."""
    listing = work / f"modules-{command}.txt"
    code = (
        "import sys\n"
        "start = set(sys.modules)\n"
        f"sys.argv = {[*base, command, 'upgrade']!r}\n"
        "from compatkit.cli.entry import run\n"
        "code = run()\n"
        f"with open({str(listing)!r}, 'w') as out:\n"
        "    out.write(' '.join(m for m in sys.modules if m not in start))\n"
        "sys.exit(code)\n"
    )
    subprocess.run([str(PYTHON[0]), "-c", code], env=env, stdout=subprocess.DEVNULL, check=True)
    return listing.read_text().split()


class Against:
    """compatkit's pair against one peer's, timed in the same rounds: medians of wall and CPU
    and of each round's ratio; and the import floor's and every module's wall against the
    peer's."""

    def __init__(self, peer: Peer, done: list[list[tuple[float, float]]], i: int) -> None:
        def median(values: Callable[[list[tuple[float, float]]], float]) -> float:
            return statistics.median(values(r) for r in done)

        self.peer = peer
        self.wall, self.cpu = median(lambda r: r[i][0]), median(lambda r: r[i][1])
        self.ours_cpu = median(lambda r: r[0][1])
        self.paired = median(lambda r: r[0][0] / r[i][0])
        self.paired_cpu = median(lambda r: r[0][1] / r[i][1])
        self.imports = median(lambda r: r[3][0])
        self.imports_paired = median(lambda r: r[3][0] / r[i][0])
        self.modules = median(lambda r: r[4][0])
        self.modules_paired = median(lambda r: r[4][0] / r[i][0])


_skipped: set[str] = set()


def measure(
    package: str, old: str, new: str, runs: int
) -> tuple[float, float, float, int, int, list[Against]]:
    """Medians of ``runs`` interleaved apply+revert pairs, git pairs and two ``python -c pass``
    (the interpreter start-ups alone: a floor no Python command goes below); files and hunks
    in the diff; and compatkit against each peer found (:class:`Against`: wall and CPU, and
    the import floor, APPLY_IMPORTS and REVERT_IMPORTS in two interpreters, and every module
    the two commands import in two interpreters, timed in the same rounds)."""
    with tempfile.TemporaryDirectory(prefix="compatkit-p5-") as tmp:
        work = Path(tmp)
        target = _venv(work / "target", f"{package}=={old}", compile_bytecode=True)
        old_src = _venv(work / "old-src", f"{package}=={old}", compile_bytecode=False)
        new_src = _venv(work / "new-src", f"{package}=={new}", compile_bytecode=False)
        diff = _upgrade_diff(work, package, old_src, new_src)
        files = diff.count("\ndiff --git ") + diff.startswith("diff --git ")
        hunks = sum(1 for line in diff.splitlines() if line.startswith("@@ "))
        write_patchset(work, package, old, new, diff, target)
        dist = next(target.glob("*.dist-info")).name.split("-")[0]
        plain = work / "plain"
        shutil.copytree(old_src / package, plain / package)
        (work / "upgrade.diff").write_text(diff)
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # compatkit with its bytecode, as users run it
        # the console script, as users run it (``python -m`` would add runpy)
        exe = PYTHON[0].parent / "compatkit"
        base = [
            str(exe), "--python", str(work / "target/bin/python"),
            "--patchset-dir", str(work / "ps"),
        ]  # fmt: skip

        def ours() -> tuple[float, float]:
            return timed_pair([*base, "apply", "upgrade"], [*base, "revert", "upgrade"], env)

        def git() -> tuple[float, float]:
            patch = str(work / "upgrade.diff")
            return timed_pair(["git", "apply", patch], ["git", "apply", "-R", patch], None, plain)

        def starts() -> tuple[float, float]:
            return timed_pair([str(PYTHON[0]), "-c", "pass"], [str(PYTHON[0]), "-c", "pass"], env)

        def imports() -> tuple[float, float]:
            return timed_pair(
                *([str(PYTHON[0]), "-c", f"{NO_GC}import {names}"]
                  for names in (APPLY_IMPORTS, REVERT_IMPORTS)),
                env,
            )  # fmt: skip

        loaded = [_loaded_by(base, command, env, work) for command in ("apply", "revert")]

        def modules() -> tuple[float, float]:
            return timed_pair(
                *([str(PYTHON[0]), "-c", f"{NO_GC}import {', '.join(names)}"] for names in loaded),
                env,
            )

        srcs = (old_src, new_src)
        found = {
            "socket-patch": _socket_patch(work, package, old, srcs),
            "patch-ng": _patch_ng(work, package, old, work / "upgrade.diff"),
            "patch-package-py": _patch_package_py(work, package, old, dist, work / "upgrade.diff"),
            "venv-patcher": _venv_patcher(work, package, old, work / "upgrade.diff"),
        }
        peers = [p for p in found.values() if p is not None]
        for name in (n for n, p in found.items() if p is None and n not in _skipped):
            _skipped.add(name)
            print(f"  P5 peer {name}: not installed beside {PYTHON[0]}, skipped", flush=True)
        actions: list[Callable[[], tuple[float, float]]] = [
            ours, git, starts, imports, modules, *(p.pair for p in peers)
        ]  # fmt: skip
        # the warm-up round fills compatkit's caches, as any earlier run does (and makes
        # venv-patcher's git repository)
        rounds(0, *actions, warmup=1)
        for peer in peers:
            peer.check(old_src, new_src)
        done = rounds(runs, *actions, warmup=0)
        value, ref, floor = (statistics.median(r[i][0] for r in done) for i in range(3))
        against = [Against(peer, done, 5 + i) for i, peer in enumerate(peers)]
        return value, ref, floor, files, hunks, against


def run(report: Report, python: Path) -> None:
    PYTHON[0] = python
    runs = 1 if report.quick else 11
    for package, old, new in PAIRS:
        value, ref, floor, files, hunks, against = measure(package, old, new, runs)
        report.add(
            Figure(
                "P5" if package == "requests" else f"P5-{package}",
                f"apply + revert, {package} {old} → {new} ({files} files, {hunks} hunks)",
                value,
                "git apply + git apply -R",
                ref,
                4.0 if package == "requests" and not report.quick else None,
            )
        )
        for a in against:
            peer, short = a.peer, a.peer.name.split()[0]
            report.add(
                Figure(
                    f"P5-vs-{short}",
                    f"compatkit apply + revert against {peer.name} ({peer.how}), {package}",
                    value,
                    f"{peer.name}'s pair",
                    a.wall,
                    None if report.quick else LIMITS.get(short, 1.0),
                    paired=a.paired,
                )
            )
            report.add(
                Figure(
                    f"P5-cpu-vs-{short}",
                    f"the same, CPU time (user + system, children included), {package}",
                    a.ours_cpu,
                    f"{peer.name}'s pair, CPU",
                    a.cpu,
                    paired=a.paired_cpu,
                )
            )
            if package == "requests" and short == "socket-patch":
                report.add(
                    Figure(
                        "P5-imports-vs-socket-patch",
                        "two interpreters importing only the modules compatkit's apply and "
                        f"revert cannot do without (`{APPLY_IMPORTS}`; revert without "
                        "packaging; the cyclic collector off, as compatkit's console script "
                        "imports): no compatkit code, no work",
                        a.imports,
                        f"{peer.name}'s pair",
                        a.wall,
                        paired=a.imports_paired,
                    )
                )
                report.add(
                    Figure(
                        "P5-modules-vs-socket-patch",
                        "two interpreters importing every module compatkit's apply and revert "
                        "import (compatkit's own, the standard library's, packaging's; listed "
                        "from a real run; the collector off): all but the work",
                        a.modules,
                        f"{peer.name}'s pair",
                        a.wall,
                        paired=a.modules_paired,
                    )
                )
        if package == "requests":
            report.add(
                Figure(
                    "P5-floor",
                    "two `python -c pass` of the interpreter that runs compatkit (its two "
                    "start-ups alone, no import, no work)",
                    floor,
                    "git apply + git apply -R",
                    ref,
                )
            )
