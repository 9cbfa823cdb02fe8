"""The version matrix model: ``matrix.toml`` cells and their expected outcomes (pure).

>>> cells = parse_matrix({"cell": [{"id": "a", "python": "3.11", "packages": ["x==1"],
...     "patchsets": ["p"], "expect": {"p": {"default": "applied/pass"}}}]}, "m")
>>> cells[0].expected("p", "patch-1")
(<PatchState.APPLIED: 'applied'>, 'pass')
"""

from __future__ import annotations

import sys
from pathlib import Path

from compatkit.errors import PatchFormatError, UsageError
from compatkit.model.results import MATRIX_STATES, MatrixState, SmokeState, matrix_state
from compatkit.value import Value

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MODES = ("apply", "force", "upstream")
STATES = tuple(str(s) for s in MATRIX_STATES)
SMOKES = (str(SmokeState.PASS), str(SmokeState.FAIL), "any")


class Cell(Value):
    __slots__ = ("id", "python", "packages", "patchsets", "mode", "note", "expect")

    def __init__(
        self,
        id: str,
        python: str,
        packages: tuple[str, ...],
        patchsets: tuple[str, ...],
        mode: str = "apply",
        note: str = "",
        expect: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self.id, self.python, self.packages, self.patchsets = id, python, packages, patchsets
        self.mode, self.note = mode, note
        self.expect = {} if expect is None else expect

    def expected(self, patchset: str, patch_id: str) -> tuple[MatrixState, str] | None:
        """The expected state and smoke verdict ("pass", "fail" or "any") of one patch."""
        table = self.expect.get(patchset, {})
        text = table.get(patch_id, table.get("default"))
        if text is None:
            return None
        state, _, smoke = text.partition("/")
        return matrix_state(state.strip()), (smoke.strip() or "any")


def _check_expectation(text: str, where: str) -> None:
    state, _, smoke = text.partition("/")
    if state.strip() not in STATES or (smoke.strip() or "any") not in SMOKES:
        raise PatchFormatError(
            f"{where}: bad expectation {text!r} (STATE/SMOKE with STATE in {', '.join(STATES)}"
            f" and SMOKE in {', '.join(SMOKES)})"
        )


def parse_matrix(data: dict[str, object], where: str) -> list[Cell]:
    raw_cells = data.get("cell")
    if not isinstance(raw_cells, list) or not raw_cells:
        raise PatchFormatError(f"{where}: needs at least one [[cell]]")
    cells = []
    for raw in raw_cells:
        if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
            raise PatchFormatError(f"{where}: every [[cell]] needs an id")
        here = f"{where} cell {raw['id']}"
        mode = raw.get("mode", "apply")
        if mode not in MODES:
            raise PatchFormatError(f"{here}: mode must be one of {', '.join(MODES)}")
        expect = raw.get("expect", {})
        for table in expect.values():
            for text in table.values():
                _check_expectation(text, here)
        cells.append(
            Cell(
                raw["id"],
                str(raw.get("python", "3.11")),
                tuple(raw.get("packages", [])),
                tuple(raw.get("patchsets", [])),
                mode,
                str(raw.get("note", "")),
                expect,
            )
        )
    ids = [c.id for c in cells]
    if len(set(ids)) != len(ids):
        raise PatchFormatError(f"{where}: duplicate cell ids")
    return cells


def load_matrix(path: Path) -> list[Cell]:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(
            f"{path}: no such matrix file (run from the folder that holds it, or name it: "
            "--matrix FILE)"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise PatchFormatError(f"{path}: {exc}") from None
    return parse_matrix(data, str(path))


def find_cell(cells: list[Cell], cell_id: str) -> Cell:
    for cell in cells:
        if cell.id == cell_id:
            return cell
    raise UsageError(f"unknown cell {cell_id!r} (cells: {', '.join(c.id for c in cells)})")
