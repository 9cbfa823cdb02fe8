"""Issue 46, the newcomer's items 11 to 16: each command run as a user types it, against a real
venv with the demo wheel installed."""

from __future__ import annotations

from pathlib import Path

from helpers import Demo, write_patchset


def _constrained(base: Path) -> None:
    """demo-next: for demo 2.0, pinning demo==2.0 (so demo 1.0 breaks its constraint)."""
    root = write_patchset(base, name="demo-next", specifier="==2.0")
    toml = root / "patchset.toml"
    toml.write_text(toml.read_text() + '\n[[constraints]]\npin = "demo==2.0"\nrationale = "x"\n')


def test_status_gives_a_patchset_that_does_not_apply_one_line(demo: Demo) -> None:
    """Item 11: no second line for its unmet constraint."""
    _constrained(demo.patchsets)
    code, out, err = demo.run("status")
    assert code == 0, err
    lines = [line for line in out.splitlines() if "demo-next" in line]
    assert len(lines) == 1 and "not applicable" in lines[0], out
    code, out, err = demo.run("status", "demo-next")  # named: its table, and the constraint
    assert code == 0 and "constraint demo==2.0 unmet: found demo 1.0" in out, out
