"""compatkit's sessions; run one with ``nox -s NAME`` (plain ``nox`` runs tests and lint).

- tests: pytest, every test but the reliability suite; ``nox -s tests -- -m "not slow and not
  real"`` is the fast subset of every test
- tests_versions: the fast subset on each other supported Python (3.10, 3.12, 3.13), side by side
- lint: ruff, ruff format --check, mypy --strict, lint-imports (the layers),
  ``compatkit lint`` on every patchset
- docs: the site (docs/) built with warnings as errors into build/docs/html, then opened in
  Chromium (tests/project/test_site.py)
- reliability: the crash, journal, fuzz, concurrency and security tests with a fixed budget
  (``COMPATKIT_FULL=1``: the full run)
- proof: ``compatkit prove`` for each bundled patchset on its real stack
- wheel_proof: the patched speculators wheel installed with vLLM 0.16.0, checked and smoke-tested
- runtime: runtime mode on the real stack (tests/runtime/test_runtime_real.py)
- pristine_real: pristine --all on today's vLLM 0.33 stack, unpinned and pinned
- demo: the README demo on the real stack, then a byte-identical check
- matrix(cell=ID): one cell of matrix.toml; compat_docs: docs/compatibility.md from the results
- bench: the benchmarks into docs/benchmarks.md; bench_quick: each once, small (CI)

.ci/run lists the ones CI runs. The real stack (speculators + vLLM, about 10 GB on an empty uv
cache) is installed once per stack under .nox/_envs, shared by the sessions that use it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.sessions = ["tests", "lint"]
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("stacks", ROOT / "bench" / "stacks.py")
assert _spec is not None and _spec.loader is not None
_stacks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_stacks)
MATRIX = ROOT / "matrix.toml"


def _cells() -> list[dict[str, object]]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10 (tests_versions imports this file): compatkit's tomli
        import tomli as tomllib

    return list(tomllib.loads(MATRIX.read_text())["cell"])


PYTHON = "3.11"
REAL_STACK = ["speculators==0.3.0", "vllm==0.16.0", "pytest"]
# today's stack with vllm033-hidden-states' constraints (compatkit constraints PATCHSET)
TODAY_STACK = [
    "speculators==0.9.0",
    "vllm==0.33.0",
    "cuda-python==13.4.4",
    "cuda-bindings==13.4.4",
    "pytest",
]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Every test but the reliability suite (``reliability``); ``nox -s tests -- -m "not slow
    and not real"`` is the fast subset of all of them.

    Real wheels in real temp venvs, a local Ray cluster (``slow``), packages from PyPI
    (``real``); arguments go to pytest. tests/runtime/test_runtime_real.py runs in ``runtime``."""
    session.install("-e", ".[test,ray]", "coverage>=7.10")
    # with no arguments: every test but the reliability suite, which `reliability` runs (CI
    # runs both, so nothing runs twice); with arguments, exactly what they select
    skip = [f"--deselect={t}" if "::" in t else f"--ignore={t}" for t in RELIABILITY]
    _covered(session, "tests", "pytest", *(session.posargs or skip))


# Every Python compatkit supports besides PYTHON, which runs everything in `tests`: the fast
# subset runs on each (pyproject.toml's classifiers name the same versions).
OTHER_PYTHONS = ("3.10", "3.12", "3.13")


def _release(python: str) -> list[int]:
    """``.../versions/3.12.1/bin/python3.12`` → [3, 12, 1] (pyenv's folder names)."""
    return [int(x) for x in python.split("/")[-3].split(".") if x.isdigit()]


def _interpreter(version: str) -> str | None:
    """A Python ``version`` that starts, or None: ``python<version>`` on PATH, else one that
    pyenv installed (its shims run only the versions pyenv has selected)."""
    import glob
    import shutil
    import subprocess

    on_path = shutil.which(f"python{version}")
    candidates = [on_path] if on_path else []
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        found = glob.glob(f"{root}/versions/{version}.*/bin/python{version}")
        candidates += sorted(found, key=_release, reverse=True)  # the newest release first
    code = "import sys; print(sys.executable, '%d.%d' % sys.version_info[:2])"
    for exe in candidates:
        try:
            out = subprocess.run([exe, "-c", code], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        said = out.stdout.split()
        if out.returncode == 0 and said[1:] == [version]:
            return said[0]
    return None


@nox.session(python=False)
def tests_versions(session: nox.Session) -> None:
    """The fast subset (``-m "not slow and not real"``) on every other supported Python
    (OTHER_PYTHONS), side by side: each in its own venv under .nox, its output in
    build/tests-<version>.log, one summary line each. A version this machine lacks is skipped
    with one line saying so. ``nox -s tests_versions -- 3.12`` runs one; further arguments go
    to pytest."""
    import os
    import subprocess
    import tempfile
    import time

    asked = [a for a in session.posargs if a in OTHER_PYTHONS] or list(OTHER_PYTHONS)
    extra = [a for a in session.posargs if a not in OTHER_PYTHONS]
    (ROOT / "build").mkdir(exist_ok=True)
    running: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
    for version in asked:
        python = _interpreter(version)
        if python is None:
            session.log(f"tests_versions: Python {version} skipped: none on this machine runs")
            continue
        venv = ROOT / ".nox" / f"tests_versions-{version}"
        if not (venv / "bin" / "python").exists():
            session.run("uv", "venv", "-q", "-p", python, str(venv), external=True)
        target = str(venv / "bin" / "python")
        session.run(
            "uv", "pip", "install", "-q", "--python", target, "-e", ".[test,ray]", external=True
        )
        log = ROOT / "build" / f"tests-{version}.log"
        fast = ["-m", "not slow and not real", "-q", "-p", "no:cacheprovider", *extra]
        # a temp root per version: pytest's clean-up of old numbered folders in one shared
        # /tmp/pytest-of-USER raced between the side-by-side runs ("Directory not empty")
        temproot = Path(tempfile.gettempdir()) / f"compatkit-tests-{version}"
        temproot.mkdir(mode=0o755, exist_ok=True)
        env = {**os.environ, "PYTEST_DEBUG_TEMPROOT": str(temproot)}
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [target, "-m", "pytest", *fast],
                cwd=ROOT,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=env,
            )
        running[version] = (proc, log)
        session.log(f"tests_versions: Python {version} ({python}) started, output in {log}")
    if not running:
        session.skip("no other supported Python runs here: " + ", ".join(asked))
    failed = []
    started = time.monotonic()
    for version, (proc, log) in running.items():
        code = proc.wait()
        lines = log.read_text("utf-8", "replace").rstrip().splitlines()
        summary = lines[-1] if lines else "(no output)"
        took = time.monotonic() - started
        session.log(f"tests_versions: Python {version}: {summary} (done after {took:.0f} s)")
        if code != 0:
            failed.append(version)
            print("\n".join(lines[-60:]))
    if failed:
        session.error(f"the fast subset failed on Python {', '.join(failed)}")


# The reliability suite (docs/reliability.md): crash injection, journals, fuzzing,
# concurrency, and the trust model's attacks, each as another user where it matters.
RELIABILITY = (
    "tests/reliability/test_crash.py",
    # apply → verify → revert and SIGKILL on generated distributions (issue 38)
    "tests/reliability/test_roundtrip_property.py",
    "tests/reliability/test_exact_revert.py",
    "tests/reliability/test_journal.py",
    "tests/reliability/test_fuzz.py",
    "tests/reliability/test_concurrency.py",
    "tests/security/test_security.py",
    "tests/reliability/test_interop.py",
    "tests/cli/test_cli.py::test_eight_concurrent_runs_serialise",
    # the trust model (docs/security.md)
    "tests/security/test_trust.py",
    "tests/security/test_trust_patchset.py",
    "tests/security/test_trust_cache.py",
    "tests/security/test_runtime_trust.py",
    "tests/runtime/test_runtime_closed.py",
    "tests/runtime/test_statfacts.py",
    "tests/security/test_wheelcheck.py",
    "tests/cli/test_bad_input.py",
    # every read of a file compatkit does not own: bounded, never blocking (issue 34)
    "tests/security/test_bounded_reads.py",
    # writes no swapped folder can redirect; another user's environment refused (issue 46)
    "tests/security/test_swapped_folders.py",
    "tests/security/test_foreign_env.py",
    # the reads issue 34 left: entry-point scan, runtime hook, site's .pth files (issue 46)
    "tests/security/test_blocking_reads.py",
    "tests/ops/test_pristine_interrupted.py",
)


@nox.session(python=PYTHON)
def reliability(session: nox.Session) -> None:
    """The reliability suite, every test of it (slow ones included), with a fixed budget: the
    same crash points, fuzz inputs and generated distributions on every run (CI runs this).
    ``COMPATKIT_FULL=1 nox -s reliability`` is the full run behind docs/reliability.md: every
    crash point, 10,000 fuzz inputs per target, 1,000 generated round trips, fresh inputs."""
    import os

    session.install("-e", ".[test]", "coverage>=7.10")
    (ROOT / "build").mkdir(exist_ok=True)
    report = ROOT / "build" / "reliability.jsonl"
    report.unlink(missing_ok=True)
    full = os.environ.get("COMPATKIT_FULL", "") not in ("", "0")
    session.log(f"reliability: {'full' if full else 'fixed'} budget")
    env = {"COMPATKIT_FULL": "1" if full else "0", "COMPATKIT_REPORT": str(report)}
    _covered(session, "reliability", "pytest", "-p", "no:cacheprovider", *RELIABILITY,
             *session.posargs, env=env)  # fmt: skip
    if (COVERAGE / "tests").is_dir() and not session.posargs:
        # after `tests` (as CI runs them): src's branch coverage over both, failing below
        # pyproject.toml's fail_under
        folders = [str(COVERAGE / "tests"), str(COVERAGE / "reliability")]
        data = {"COVERAGE_FILE": str(COVERAGE / ".coverage")}
        session.run("coverage", "combine", "--keep", *folders, env=data)
        session.run("coverage", "report", env=data)


COVERAGE = ROOT / "build" / "coverage"  # each session's data, then both combined


def _covered(
    session: nox.Session, name: str, *args: str, env: dict[str, str] | None = None
) -> None:
    """``args`` (pytest) under coverage (pyproject.toml's [tool.coverage]: branches, the CLI's
    subprocesses too), its data in build/coverage/NAME (emptied first)."""
    import shutil

    folder = COVERAGE / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    env = {**(env or {}), "COVERAGE_FILE": str(folder / ".coverage")}
    session.run("coverage", "run", "-m", *args, env=env)


LINTED = ("src", "tests", "noxfile.py", "bench", "docs/ext", "docs/conf.py")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff, mypy --strict, lint-imports, compatkit lint of every patchset.

    lint-imports checks pyproject.toml's layer contract (docs/architecture.md); ``compatkit
    lint`` checks each bundled patchset against its pristine target wheel."""
    session.install("-e", ".[test,ray]", "ruff", "mypy", "nox")
    session.run("ruff", "check", *LINTED)
    session.run("ruff", "format", "--check", *LINTED)
    session.run("mypy")
    session.run("lint-imports", "--no-cache")  # [tool.importlinter]: imports go down the layers
    session.run("compatkit", "lint")  # every patchset, against its pristine target wheel


DOCS_HTML = ROOT / "build" / "docs" / "html"


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """The site: Sphinx (furo, myst-parser) over docs/, warnings as errors (``-W``, ``-n``: a
    link to a missing page or heading fails), into build/docs/html; the command reference and the
    patchset pages are generated at build time (docs/ext). Then tests/project/test_site.py opens
    it in Chromium (Debian's chromium and chromium-driver, installed with apt-get when missing
    and this is root). ``nox -s docs -- --no-browser`` only builds."""
    session.install("-e", ".[docs]")
    session.run(
        "sphinx-build", "-W", "-n", "--keep-going", "-q", "-b", "html", "docs", str(DOCS_HTML)
    )
    session.log(f"the site: {DOCS_HTML / 'index.html'}")
    if "--no-browser" in session.posargs:
        return
    _chromium(session)
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/project/test_site.py",
        *[a for a in session.posargs if a != "--no-browser"],
        env={"COMPATKIT_DOCS_HTML": str(DOCS_HTML)},
    )


def _chromium(session: nox.Session) -> None:
    """Debian's chromium and chromedriver, installed when missing (as root, with apt-get)."""
    import os
    import shutil

    if shutil.which("chromium") and shutil.which("chromedriver"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        session.error(
            "the browser test needs chromium and chromedriver: install Debian's chromium and "
            "chromium-driver (or run nox -s docs -- --no-browser)"
        )
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=env)
    session.run(
        "apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium",
        "chromium-driver", external=True, env=env,
    )  # fmt: skip


def _stack_name(stack: list[str], python: str = PYTHON) -> str:
    """The venv name of ``stack`` under .nox/_envs (bench/stacks.py, which bench/ shares)."""
    return str(_stacks.stack_name(stack, python))


def _real_env(
    session: nox.Session,
    name: str,
    stack: list[str] = REAL_STACK,
    python: str = PYTHON,
    quiet: bool = False,
) -> str:
    """A venv under .nox/_envs with ``stack`` installed (warm uv cache: seconds). ``quiet``
    (the demo): uv's output (a line per package, about 200) only if the install fails."""
    venv = ROOT / ".nox" / "_envs" / name
    if not (venv / "bin" / "python").exists():
        session.run("uv", "venv", "-q", "-p", python, str(venv), external=True, log=not quiet)
    # Not quiet by default: on an empty uv cache this is about 10 GB (vLLM pins a CUDA torch)
    # and takes minutes; uv's own lines (resolved, prepared, installed) show it is working.
    session.log(f"installing {' '.join(stack)} into {venv} (minutes on an empty uv cache)")
    # --link-mode hardlink on purpose: compatkit must never write through uv's hardlinks.
    session.run(
        "uv",
        "pip",
        "install",
        "--python",
        str(venv / "bin" / "python"),
        "--link-mode",
        "hardlink",
        *stack,
        external=True,
        silent=quiet,
        log=not quiet,
    )
    return str(venv / "bin" / "python")


@nox.session(python=PYTHON)
def proof(session: nox.Session) -> None:
    """compatkit prove for each bundled patchset on its own real stack (build/proof).

    Every smoke test must fail unpatched, fail without its patch, and pass patched. Each
    stack's venv is the one its matrix cells use (_stack_name)."""
    session.install("-e", ".")
    for patchset, stack in (
        ("speculators-vllm016", REAL_STACK),
        ("speculators040-vllm016", ["speculators==0.4.0", "vllm==0.16.0", "pytest"]),
        ("speculators-vllm017", ["speculators==0.3.0", "vllm==0.17.1", "pytest"]),
        ("vllm033-hidden-states", TODAY_STACK),
        # the second domain: no torch, no GPU; each venv shared with its matrix cell but 5.19.0's
        # (today's stack has it, with torch, which every smoke run would import: 4x the time;
        # the stack's own cell and pristine_real apply the patchset there)
        ("transformers519-tokenizers", ["transformers==5.19.0", "pytest"]),
        ("transformers519-tokenizers", ["transformers==5.21.1", "pytest"]),
        ("transformers-tokenizers", ["transformers==5.25.0", "pytest"]),
        ("transformers-config-fallback", ["transformers==5.25.0", "pytest"]),
        ("transformers457-config-fallback", ["transformers==4.57.6", "pytest"]),
        ("gguf-q2-0", ["gguf==0.19.0", "pytest"]),
    ):
        target = _real_env(session, _stack_name(stack), stack)
        session.run(
            "compatkit",
            "prove",
            patchset,
            "--python",
            target,
            "-o",
            str(ROOT / "build" / "proof"),
            *session.posargs,
        )


@nox.session(python=PYTHON)
def wheel_proof(session: nox.Session) -> None:
    """The patched-wheel mode on the real stack: build the speculators 0.3.0 wheel with
    speculators-vllm016 built in, install it with vLLM 0.16.0 into a fresh venv, then status
    (applied, built in), verify, every smoke test, and a schema-valid SBOM there."""
    import json

    session.install("-e", ".[test]")
    wheels = ROOT / "build" / "wheels"
    built = session.run(
        "compatkit", "--json", "wheel", "speculators-vllm016", "-o", str(wheels), silent=True
    )
    wheel = json.loads(str(built))["wheel"]
    session.log(f"built {wheel}")
    venv = ROOT / ".nox" / "_envs" / "wheel-proof"
    session.run("rm", "-rf", str(venv), external=True)
    session.run("uv", "venv", "-q", "-p", PYTHON, str(venv), external=True)
    python = str(venv / "bin" / "python")
    install = ["uv", "pip", "install", "--python", python, "--link-mode", "hardlink"]
    session.run(*install, wheel, "vllm==0.16.0", "pytest", external=True)
    target = ["--python", python]
    status = session.run(
        "compatkit", "--json", "status", "speculators-vllm016", *target, silent=True
    )
    state = json.loads(str(status))["patchsets"][0]["state"]
    if state != "applied (built in)":
        session.error(f"status of the installed patched wheel: {state!r}, not 'applied (built in)'")
    session.log(f"status: {state}")
    session.run("compatkit", "verify", "speculators-vllm016", *target)
    session.run("compatkit", "smoke", "speculators-vllm016", *target)
    sbom = ROOT / "build" / "wheel-proof-sbom.json"
    session.run("compatkit", "sbom", "-o", str(sbom), *target)
    check = (
        "import sys; from cyclonedx.schema import SchemaVersion; "
        "from cyclonedx.validation.json import JsonStrictValidator as V; "
        "e = V(SchemaVersion.V1_6).validate_str(open(sys.argv[1]).read()); "
        "sys.exit(f'SBOM not valid: {e}' if e else 0)"
    )
    session.run("python", "-c", check, str(sbom))


@nox.session(python=PYTHON)
def runtime(session: nox.Session) -> None:
    """Runtime mode on the real stack: with site-packages read-only, the speculators-vllm016
    smoke tests pass through `compatkit exec` and fail without it
    (tests/runtime/test_runtime_real.py)."""
    session.install("-e", ".[test]")
    target = _real_env(session, "runtime")
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/runtime/test_runtime_real.py",
        *session.posargs,
        env={"COMPATKIT_REAL_PYTHON": target},
    )


@nox.session(python=PYTHON)
def pristine_real(session: nox.Session) -> None:
    """pristine --all on today's stack as uv resolves it (cuda-python 12.6.2.post1's
    files over cuda-bindings 13.5.0's: named, exit 1) and with vllm033-hidden-states' pins (the
    pair gone): tests/ops/test_pristine_all.py; on the pinned one, the transformers tokenizer
    patchsets applied beside the others. The pinned venv is the proof's and the matrix's."""
    session.install("-e", ".[test]")
    unpinned = ["speculators==0.9.0", "vllm==0.33.0", "pytest"]
    env = {
        "COMPATKIT_TODAY_PYTHON": _real_env(session, _stack_name(unpinned), unpinned),
        "COMPATKIT_TODAY_PINNED_PYTHON": _real_env(session, _stack_name(TODAY_STACK), TODAY_STACK),
    }
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "tests/ops/test_pristine_all.py",
        # the tokenizer patchsets beside the others on this stack, pristine after (issue 45)
        "tests/system/test_tokenizers_real.py::test_beside_the_other_patchsets_on_todays_stack",
        *session.posargs,
        env=env,
    )


def _site_packages(session: nox.Session, python: str) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    found = session.run(python, "-c", code, silent=True, external=True, log=False)
    return Path(str(found).strip())


def _snapshot(site: Path, dist_info: str) -> dict[str, bytes]:
    """Every file a distribution's RECORD lists, plus the whole dist-info folder."""
    record = (site / dist_info / "RECORD").read_text().splitlines()
    paths = {line.rsplit(",", 2)[0] for line in record if line}
    paths |= {str(p.relative_to(site)) for p in (site / dist_info).rglob("*") if p.is_file()}
    return {p: (site / p).read_bytes() for p in sorted(paths) if (site / p).is_file()}


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """The README demo on the real stack, then a byte-identical check after the revert.

    status, apply, verify, smoke, explain patch-6, revert; then every file of speculators'
    RECORD and dist-info must hold its bytes from before. Each step is shown once, as the
    command a user would type (tests/cli/test_newuser.py)."""
    session.install("-e", ".", silent=True)
    venv = ROOT / ".nox" / "_envs" / "demo"
    session.run("rm", "-rf", str(venv), external=True, log=False)
    target = _real_env(session, "demo", quiet=True)
    site = _site_packages(session, target)
    before = _snapshot(site, "speculators-0.3.0.dist-info")
    for step in (
        ["status", "speculators-vllm016"],
        ["apply", "speculators-vllm016"],
        ["verify", "speculators-vllm016"],
        ["smoke", "speculators-vllm016"],
        ["explain", "patch-6"],
        ["revert", "speculators-vllm016"],
    ):
        session.log(f"$ compatkit {' '.join(step)} --python {target}")
        # speculators 0.3.0 warns (a pydantic field shadowing) when the smoke tests import it
        quiet = {"PYTHONWARNINGS": "ignore::UserWarning"} if step[0] == "smoke" else None
        session.run("compatkit", *step, "--python", target, log=False, env=quiet)
    after = _snapshot(site, "speculators-0.3.0.dist-info")
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    if changed:
        session.error(f"not byte-identical after revert: {changed}")
    session.log(f"byte-identical after revert: {len(before)} files, RECORD included")


@nox.session(python=False)
@nox.parametrize("cell", [str(c["id"]) for c in _cells()])
def matrix(session: nox.Session, cell: str) -> None:
    """One matrix.toml cell: compatkit matrix run in the cell's venv (into build/matrix).

    The cell's packages in their own venv with compatkit installed there; ``matrix run`` then,
    per patchset and mode, applies, verifies, smoke-tests and reverts (or classifies each patch
    against upstream), checks the install is pristine after, and compares with the expected."""
    spec = next(c for c in _cells() if c["id"] == cell)
    packages = [str(p) for p in spec["packages"]]  # type: ignore[attr-defined]
    stack = [*packages, "pytest"]
    name = _stack_name(stack, str(spec["python"]))  # shared with the proof and other cells
    venv = ROOT / ".nox" / "_envs" / name
    built = (venv / "bin" / "python").exists()  # it resolved before
    not_run = "" if built else _unresolvable(session, stack, str(spec["python"]))
    if not_run:  # the packages alone: compatkit classifies from their files (--smoke-not-run)
        name += "-nodeps"
        venv = ROOT / ".nox" / "_envs" / name
        stack = ["--no-deps", *packages]
    python = _real_env(session, name, stack, str(spec["python"]))
    session.run("uv", "pip", "install", "-q", "--python", python, "-e", str(ROOT), external=True)
    session.run(
        str(venv / "bin" / "compatkit"),
        "matrix",
        "run",
        cell,
        "--matrix",
        str(MATRIX),
        "--results",
        str(ROOT / "build" / "matrix"),
        *(["--smoke-not-run", not_run] if not_run else []),
        external=True,
    )


def _unresolvable(session: nox.Session, stack: list[str], python: str) -> str:
    """uv's output when ``stack`` cannot be resolved for ``python`` (vLLM 0.34.0 pins a
    flashinfer-python the index does not serve), else "" (the resolution is cached by uv)."""
    import subprocess

    cmd = ["uv", "pip", "compile", "-q", "--python-version", python, "-", "-o", "/dev/null"]
    proc = subprocess.run(cmd, input="\n".join(stack), capture_output=True, text=True)
    if proc.returncode != 0:
        session.warn(f"cannot resolve {' '.join(stack)}: installing the packages alone")
    return proc.stderr if proc.returncode != 0 else ""


@nox.session(python=PYTHON)
def compat_docs(session: nox.Session) -> None:
    """Build the report from build/matrix/*.json into docs/compatibility.md."""
    session.install("-e", ".")
    session.run(
        "compatkit",
        "matrix",
        "report",
        "--results",
        str(ROOT / "build" / "matrix"),
        "-o",
        str(ROOT / "docs" / "compatibility.md"),
    )


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """P1-P7, F1 and G (bench/run.py) on the real stack; writes docs/benchmarks.md.

    Each a ratio to a reference measured in the same run, with compatkit installed in the
    real-stack venv as users get it (not editable, bytecode compiled)."""
    _bench(session, quick=False)


@nox.session(python=PYTHON)
def bench_quick(session: nox.Session) -> None:
    """The benchmarks once each at small sizes, into build/benchmarks-quick.md (CI).

    It proves the scripts run; it asserts no timings."""
    _bench(session, quick=True)


def _bench(session: nox.Session, quick: bool) -> None:
    session.install(
        "-e", ".[ray]", "nox", "pytest"
    )  # F1: a local Ray cluster (tests/helpers/raycluster.py)
    if not quick:  # G's plot, docs/growth.svg (bench/growth.py; skipped with a line without it)
        session.install("matplotlib")
    target = _real_env(session, "bench")
    # compatkit as users get it: a real (not editable) install with compiled bytecode
    session.run(
        "uv",
        "pip",
        "install",
        "-q",
        "--python",
        target,
        "--reinstall-package",
        "compatkit",
        str(ROOT),
        external=True,
    )
    # P1's peers (bench/p1_p3.py): other tools' start-up beside compatkit's, bytecode compiled;
    # P5's (bench/p5_real.py): other tools' apply and revert of the same diffs
    session.run(
        "uv", "pip", "install", "-q", "--python", target, "--compile-bytecode",
        "pre-commit", "nox", "pip", "socket-patch==4.0.0", "patch-ng==1.19.1",
        "patch-package-py==0.2.1", "venv-patcher==0.2.0", external=True,
    )  # fmt: skip
    site = _site_packages(session, target)
    packages = [
        "compatkit",
        "rich",
        "packaging",
        "pygments",
        "markdown_it",
        "shtab",
        "merge3",
    ]
    session.run(
        target,
        "-m",
        "compileall",
        "-q",
        *[f"{site}/{p}" for p in packages],
        external=True,
        success_codes=[0, 1],
    )
    out = ROOT / ("build/benchmarks-quick.md" if quick else "docs/benchmarks.md")
    out.parent.mkdir(exist_ok=True)
    session.run(
        "python",
        str(ROOT / "bench" / "run.py"),
        "--python",
        target,
        "--out",
        str(out),
        *(["--quick"] if quick else []),
        *session.posargs,
    )
