"""compatkit.model.reqlite decides simple requirements without packaging: wherever it answers, it
must answer as packaging does (parse, printed form, and containment)."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from compatkit.model import reqlite

_ws = st.sampled_from(["", " ", "  ", "\t"])
_num = st.integers(0, 12).map(str) | st.sampled_from(["00", "010", "2026"])
_release = st.lists(_num, min_size=1, max_size=4).map(".".join)
_installed = _release | st.sampled_from(
    ["1.0rc1", "0.17.0rc1", "1.0.post1", "1.0.dev0", "1.0+local", "1!2.0", "v1.0", "1.0a"]
)
_version = _installed | st.sampled_from(["1.*", "1.0.*", "x"])  # also what a specifier must not be
_op = st.sampled_from(["==", "!=", "<=", ">=", "<", ">", "~=", "===", "=", "=>"])
_clause = st.builds(lambda a, op, b, v, c: f"{a}{op}{b}{v}{c}", _ws, _op, _ws, _version, _ws)
_spec = st.lists(_clause, min_size=1, max_size=3).map(",".join) | st.just("")
_name = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9._-]{0,6}[A-Za-z0-9])?", fullmatch=True)
_tail = st.sampled_from(["", " ", "[extra]", "; python_version > '3'", " @ https://x/y.whl", ","])
_text = st.builds(lambda w, n, s, t: f"{w}{n}{s}{t}", _ws, _name, _spec, _tail)


def _packaging(text: str) -> Requirement | None:
    try:
        return Requirement(text)
    except InvalidRequirement:
        return None


@settings(max_examples=600, deadline=None, database=None, derandomize=True)
@given(text=_text | st.text(max_size=30), installed=_installed)
@example(text="vllm>=0.16,<0.17", installed="0.16.0")
@example(text="vllm >= 0.16 , < 0.17", installed="0.17")
@example(text="transformers>=4.56,<5", installed="4.57.6")
@example(text="x==1.0", installed="1")
@example(text="x>1", installed="1.0.1")
@example(text="x<1", installed="0.17.0rc1")
def test_agrees_with_packaging(text: str, installed: str) -> None:
    ours = reqlite.parse(text)
    theirs = _packaging(text)
    if ours is None:
        return  # not simple: the caller asks packaging
    assert theirs is not None, f"reqlite accepted {text!r}, packaging refuses it"
    assert theirs.extras == set() and theirs.marker is None and theirs.url is None
    assert ours.name == theirs.name
    assert str(ours) == str(theirs)
    assert str(ours.specifier or "") == str(theirs.specifier)
    fits = ours.contains(installed)
    if fits is None:  # not a plain release: packaging decides
        assert reqlite.release(installed) is None
        return
    assert fits == theirs.specifier.contains(Version(installed), prereleases=True), installed


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(text=_spec | st.text(max_size=20), installed=_release)
def test_specifiers_agree_with_packaging(text: str, installed: str) -> None:
    ours = reqlite.specifiers(text)
    if ours is None:
        return
    try:
        theirs = SpecifierSet(text)
    except InvalidSpecifier:
        pytest.fail(f"reqlite accepted {text!r}, packaging refuses it")
    assert str(ours) == str(theirs)
    assert ours.contains(installed) == theirs.contains(installed, prereleases=True)


@pytest.mark.parametrize(
    "text",
    [
        "vllm[audio]>=0.16",
        "colorama; sys_platform == 'win32'",
        "pkg @ https://example.org/pkg.whl",
        "x~=1.4",
        "x==1.*",
        "x===1.0",
        "x>=1.0rc1",
        "x (>=1.0)",
        "x>=1,",
        "x>=1 <2",
        "-x>=1",
        "",
    ],
)
def test_hard_cases_go_to_packaging(text: str) -> None:
    assert reqlite.parse(text) is None


def test_non_release_installed_versions_go_to_packaging() -> None:
    req = reqlite.parse("vllm>=0.16,<0.17")
    assert req is not None
    for version in ("0.16.0rc2", "0.16.0.post1", "0.16.0+cu128", "0.16.0.dev3", "1!0.16"):
        assert req.contains(version) is None
    assert req.contains("0.16") is True and req.contains("0.17.0") is False
