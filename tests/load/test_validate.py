"""compatkit.load.validate: the one validator behind loading a patchset and ``compatkit lint``."""

from __future__ import annotations

from pathlib import Path

import pytest

from compatkit.delivery.wheels import WheelSource
from compatkit.errors import PatchFormatError
from compatkit.load.validate import KEYS, load_patchset, validate
from compatkit.ops.lint import lint_patchset
from helpers import Demo, write_patchset


def _toml(root: Path) -> Path:
    return root / "patchset.toml"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (lambda t: t.replace("requires = []", "require = []"), "unknown key 'require' in [target]"),
        (lambda t: t + "\n[extra]\nx = 1\n", "unknown key 'extra' in patchset.toml"),
        (lambda t: t.replace('name = "demo-fix"', 'name = "other"'), "differs from its directory"),
        (lambda t: t.replace('version = "1.0.0"\n', ""), "[patchset] 'version' must be"),
        (lambda t: t.replace("series = [", 'series = ["../x.patch", '), "leaves the patchset"),
        (lambda t: t.replace("series = [", 'series = ["gone.patch", '), "does not exist"),
        (lambda t: t.replace("[target]", "[targt]"), "missing [target] table"),
    ],
    ids=["misspelt-key", "unknown-table", "name", "version", "dotdot-series", "missing", "table"],
)
def test_loading_and_lint_refuse_the_same_problems(tmp_path: Path, edit, problem) -> None:  # type: ignore[no-untyped-def]
    root = write_patchset(tmp_path / "ps")
    _toml(root).write_text(edit(_toml(root).read_text()))
    with pytest.raises(PatchFormatError) as info:
        load_patchset(root)
    found = [info.value.message, *info.value.problems]
    assert any(problem in p for p in found), found
    linted = lint_patchset(root, WheelSource.configure([], True, None), offline=True).problems
    assert any(problem in p for p in linted), linted
    shallow = validate(root).problems
    assert all(p in linted for p in shallow), (shallow, linted)


def test_a_misspelt_requires_is_refused_by_every_command(demo: Demo) -> None:
    """Before: ``require = ["vllm>=0.16"]`` was ignored, so the requirement was never checked."""
    toml = demo.patchsets / "demo-fix" / "patchset.toml"
    toml.write_text(toml.read_text().replace("requires = []", 'require = ["vllm>=0.16"]'))
    for command in (("status", "demo-fix"), ("apply", "demo-fix"), ("lint", "--offline")):
        code, _, err = demo.run(*command)
        assert code == 1, (command, err)
        assert "unknown key 'require' in [target]" in err, err
    assert b"'hi '" not in (demo.venv.site / "demo" / "greet.py").read_bytes()


def test_every_documented_key_is_known() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "patchset-format.md").read_text()
    for table, keys in KEYS.items():
        for key in keys:
            if table and key != "series":
                assert f"{key} =" in doc or f"`{key}`" in doc, (table, key)
