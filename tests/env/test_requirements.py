"""A patchset's target, requirements and constraints, decided by packaging: the messages users
see when they are met, unmet or not installed (compatkit.env.checks)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from packaging.markers import default_environment
from packaging.utils import canonicalize_name

from compatkit.env import checks
from compatkit.env.target import Dist, Environment
from compatkit.model.patchset import Patchset


class _Installed:
    """The two things the checks ask of an environment: its markers and its distributions."""

    def __init__(self, **versions: str) -> None:
        self.markers = cast(dict[str, str], default_environment())
        self._dists = {canonicalize_name(n): v for n, v in versions.items()}

    def find(self, name: str) -> Dist | None:
        version = self._dists.get(canonicalize_name(name))
        return None if version is None else Dist(name, version, Path("/x"), Path("/"))


def _patchset(
    spec: str = ">=0.16,<0.17", requires: tuple[str, ...] = (), pins: tuple[str, ...] = ()
) -> Patchset:
    constraints = tuple((pin, "why") for pin in pins)
    where = Path("/p")
    return Patchset("p", "1", "", "vllm", spec, requires, (), where, "d", constraints=constraints)


def _problems(ps: Patchset, **versions: str) -> list[str]:
    env = _Installed(**versions)
    target = env.find(ps.distribution)
    return checks.requirement_problems(ps, cast(Environment, env), target)


@pytest.mark.parametrize(
    ("spec", "shown"),
    [(">=0.16,<0.17", "vllm<0.17,>=0.16"), (" == 0.3.0 ", "vllm==0.3.0"), ("~=1.4", "vllm~=1.4")],
)
def test_the_target_is_shown_as_packaging_prints_it(spec: str, shown: str) -> None:
    assert _patchset(spec).target == shown


def test_target_met_unmet_and_not_installed() -> None:
    ps = _patchset()
    assert _problems(ps, vllm="0.16.2") == []
    assert _problems(ps, vllm="0.16.0+cu128") == []  # a local version is that release
    assert _problems(ps, vllm="0.16.1rc1") == []  # prereleases count, as installed
    assert _problems(ps, vllm="0.17.0") == ["needs vllm<0.17,>=0.16, found vllm 0.17.0"]
    assert _problems(ps) == ["needs vllm<0.17,>=0.16, which is not installed"]  # one way


def test_requirements_met_unmet_not_installed_and_marked_out() -> None:
    ps = _patchset(requires=("Transformers>=4.56,<5", "torch; python_version < '3'"))
    assert _problems(ps, vllm="0.16.0", transformers="4.57.1") == []
    assert _problems(ps, vllm="0.16.0", transformers="4.40") == [
        "needs Transformers<5,>=4.56, found Transformers 4.40"
    ]
    assert _problems(ps, vllm="0.16.0") == ["needs Transformers<5,>=4.56, which is not installed"]
    applies = _patchset(requires=("torch>=2; python_version >= '3'",))
    assert _problems(applies, vllm="0.16.0") == [
        'needs torch>=2; python_version >= "3", which is not installed'
    ]


def test_constraints_limit_what_is_installed_only() -> None:
    ps = _patchset(pins=("numpy<2", "absent==1.0", "torch<2; python_version < '3'"))
    env = _Installed(numpy="2.1.0", torch="2.5")
    assert checks.constraint_problems(ps, cast(Environment, env)) == [
        "constraint numpy<2 unmet: found numpy 2.1.0"
    ]
    assert checks.constraint_problems(ps, cast(Environment, _Installed(numpy="1.26"))) == []
