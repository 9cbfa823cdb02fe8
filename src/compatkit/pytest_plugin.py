"""pytest plugin: refuse to run a test suite on an environment that lost its patches.

Enable with ``pytest --compatkit-verify`` or ``compatkit_verify = true`` in the pytest ini
options. It reads the project's ``[tool.compatkit]`` table and verifies, in the interpreter
running pytest, every configured patchset that fits the environment. A missing or drifted
patchset ends the session before any test runs, naming it.

The ``compatkit_patchset`` fixture lets one test require one patchset::

    def test_generator(compatkit_patchset):
        compatkit_patchset("speculators-vllm016")
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

EXIT_PATCHES_MISSING = 4  # pytest's own "usage error" code: the environment is not usable


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("compatkit")
    group.addoption(
        "--compatkit-verify",
        action="store_true",
        default=False,
        help="verify the project's [tool.compatkit] patchsets before any test runs",
    )
    parser.addini(
        "compatkit_verify",
        type="bool",
        default=False,
        help="verify the project's [tool.compatkit] patchsets before any test runs",
    )


def _problems(start: Path, names: list[str] | None = None) -> tuple[list[str], list[str]]:
    from compatkit.config import find_config
    from compatkit.errors import CompatkitError
    from compatkit.ops import verify
    from compatkit.ops.select import select
    from compatkit.registry import Registry
    from compatkit.target import Environment

    config = find_config(start)
    registry = Registry(list(config.patchset_dirs) if config else [])
    env = Environment.current()
    try:
        if names is None:
            if config is None:
                return [], ["no [tool.compatkit] table found above " + str(start)]
            names = select(config, registry, env).chosen
        problems = [p for name in names for p in verify.problems(registry, env, name)]
    except CompatkitError as exc:
        return names or [], [exc.message, *exc.problems]
    return names, problems


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not (config.getoption("compatkit_verify") or config.getini("compatkit_verify")):
        return
    names, problems = _problems(Path(str(config.rootpath)))
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        pytest.exit(
            f"compatkit: the environment is missing patches ({', '.join(names)}):\n"
            f"{lines}\nrun 'compatkit apply' to restore them",
            EXIT_PATCHES_MISSING,
        )


def pytest_report_header(config: pytest.Config) -> str | None:
    if config.getoption("compatkit_verify") or config.getini("compatkit_verify"):
        return "compatkit: verifying [tool.compatkit] patchsets before the session"
    return None


@pytest.fixture
def compatkit_patchset(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Call with a patchset name: the test fails unless it is fully applied and intact."""

    def require(name: str) -> None:
        _, problems = _problems(Path(str(request.config.rootpath)), [name])
        if problems:
            pytest.fail(f"patchset {name} is not intact: " + "; ".join(problems), pytrace=False)

    return require
