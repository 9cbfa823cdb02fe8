"""pytest plugin: refuse to run a test suite on an environment that lost its patches.

Enable with ``pytest --compatkit-verify`` or ``compatkit_verify = true`` in the pytest ini
options. Before collection it gives ``compatkit verify``'s verdict, by the same operations
(:func:`compatkit.ops.verify.unnamed`, ``problems``), in the interpreter running pytest, for
the ``[tool.compatkit]`` table found above pytest's rootdir (without one: the patchsets
applied here): the configured patchsets that fit must be fully applied and intact, a
configured one whose target is not installed fails under ``on-mismatch = "strict"``, and
nothing verified fails the session too, unless ``--compatkit-allow-empty`` (ini
``compatkit_allow_empty = true``) says that is expected, as ``verify --allow-empty`` does. A
failure ends the session before any test is collected, exit code 4, with one message:
compatkit's error, its problems, the patches that are missing, and the next step.

The ``compatkit_patchset`` fixture lets one test require one patchset::

    def test_generator(compatkit_patchset):
        compatkit_patchset("speculators-vllm016")
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TYPE_CHECKING = False

if TYPE_CHECKING:
    from compatkit.load.config import ProjectConfig

EXIT_PATCHES_MISSING = 4  # pytest's own "usage error" code: the environment is not usable
_HEADER = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compatkit")
    what = "verify the project's [tool.compatkit] patchsets before any test runs"
    group.addoption("--compatkit-verify", action="store_true", default=False, help=what)
    parser.addini("compatkit_verify", type="bool", default=False, help=what)
    empty = "with --compatkit-verify: nothing to verify is not a failure (verify --allow-empty)"
    group.addoption("--compatkit-allow-empty", action="store_true", default=False, help=empty)
    parser.addini("compatkit_allow_empty", type="bool", default=False, help=empty)


def _on(config: pytest.Config, name: str) -> bool:
    return bool(config.getoption(name) or config.getini(name))


def verdict(start: Path, allow_empty: bool) -> tuple[list[str], str | None]:
    """``compatkit verify``'s verdict, by its operations, for the project above ``start``:
    the lines to report, and the failure's whole message (None: passed)."""
    from compatkit.env.target import Environment
    from compatkit.errors import CompatkitError
    from compatkit.load.registry import Registry
    from compatkit.ops import verify

    registry, names = Registry([]), list[str]()
    try:
        config = _configured(start)
        registry = Registry(list(config.patchset_dirs) if config else [])
        env = Environment.current()
        names, selection, why = verify.unnamed(config, registry, env)
        notes = [text for text, _ in selection.notices()] if selection else []
        if not names and not allow_empty:
            raise verify.nothing_verified(why, "--compatkit-allow-empty")
        problems = [p for name in names for p in verify.problems(registry, env, name)]
        if problems:
            raise CompatkitError(f"verify failed: {len(problems)} problem(s)", problems)
    except CompatkitError as exc:
        return [], _failure(exc, registry, names)
    if not names:
        return [*notes, f"compatkit: {why}; nothing to verify (--compatkit-allow-empty)"], None
    done = f"compatkit: verified {', '.join(names)}: fully applied, every patched file intact"
    return [*notes, done], None


def _configured(start: Path) -> ProjectConfig | None:
    """The project's ``[tool.compatkit]`` table above ``start`` (None: none), its
    ``safe-environments`` now counted as the command line counts them
    (:func:`compatkit.env.owners.configure`), beside ``$COMPATKIT_SAFE_ENVIRONMENTS``."""
    from compatkit.env import owners
    from compatkit.load.config import find_config

    config = find_config(start)
    owners.configure(lambda: config.safe_environments if config else ())
    return config


def _failure(exc: Any, registry: Any, names: list[str]) -> str:
    lines = [f"compatkit: error: {exc.message}", *(f"  - {p}" for p in exc.problems)]
    missing = _missing(registry, names)
    lines += [f"  missing in {name}: {', '.join(ids)}" for name, ids in missing.items()]
    if missing and all(_only_unapplied(ids) for ids in missing.values()):
        lines.append("run 'compatkit apply' to apply them, then pytest again")
    elif missing:
        lines.append("run 'compatkit status' for each patch's state and what to do")
    return "\n".join(lines)


def _missing(registry: Any, names: list[str]) -> dict[str, list[str]]:
    """Per patchset verified, its patches that are not in place, each with its state."""
    from compatkit.env.target import Environment
    from compatkit.errors import CompatkitError
    from compatkit.model.results import PatchState
    from compatkit.ops.status import inspect_patchset

    fine = {PatchState.APPLIED, PatchState.BUILT_IN, PatchState.EXCLUDED, PatchState.RUNTIME}
    found: dict[str, list[str]] = {}
    for name in names:
        try:
            statuses = inspect_patchset(registry.get(name), Environment.current()).statuses
        except CompatkitError:
            continue
        ids = [f"{s.id} ({s.status})" for s in statuses if s.status not in fine]
        if ids:
            found[name] = ids
    return found


def _only_unapplied(ids: list[str]) -> bool:
    return all(i.endswith("(not applied)") for i in ids)


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not _on(config, "compatkit_verify"):
        return
    start = Path(str(config.rootpath))
    lines, failure = verdict(start, _on(config, "compatkit_allow_empty"))
    if failure is not None:
        # a UsageError: pytest prints it once, on stderr, and exits 4 before collecting
        raise pytest.UsageError(failure)
    config.stash[_HEADER] = lines


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    return config.stash.get(_HEADER, None)


@pytest.fixture
def compatkit_patchset(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Call with a patchset name: the test fails unless it is fully applied and intact."""

    def require(name: str) -> None:
        from compatkit.env.target import Environment
        from compatkit.errors import CompatkitError
        from compatkit.load.registry import Registry
        from compatkit.ops import verify

        config = _configured(Path(str(request.config.rootpath)))
        registry = Registry(list(config.patchset_dirs) if config else [])
        try:
            problems = verify.problems(registry, Environment.current(), name)
        except CompatkitError as exc:
            problems = [exc.message, *exc.problems]
        if problems:
            pytest.fail(f"patchset {name} is not intact: " + "; ".join(problems), pytrace=False)

    return require
