"""The route a command's data takes through compatkit's modules, traced.

The first call of each function of ``src/compatkit`` is an event (a loop over files is one
pass of the route, not many); consecutive events in one module are one *entry*. Calls into
``model/`` (the data itself: a RECORD row's or a patch's own methods) and into the top
level's utilities (``errors``, ``value``, ``atomic``, ``bounded``: compatkit's
own standard library) are not steps of the route. A *climb* is an entry into a higher layer
than the entry before it (pyproject.toml's layer contract; siblings are one height): ``ops``
→ ``env`` → ``ops`` climbs once. Inside one layer the entries are counted, not ranked.
"""

from __future__ import annotations

import functools
import itertools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_layout import SRC, import_graph, layer_heights

PACKAGE = SRC / "compatkit"


class Route:
    def __init__(self, entries: list[str], heights: dict[str, int]) -> None:
        self.entries = entries  # the module of each entry, in order
        self.heights = heights

    @property
    def modules(self) -> list[str]:
        return sorted(set(self.entries))

    @property
    def climbs(self) -> list[tuple[str, str]]:
        h = self.heights
        return [(a, b) for a, b in itertools.pairwise(self.entries) if h[b] > h[a]]

    def shown(self) -> str:
        short = [m.removeprefix("compatkit.") for m in self.entries]
        return (
            f"{len(self.modules)} modules, {len(self.entries)} entries, "
            f"{len(self.climbs)} climbs: " + " → ".join(short)
        )


@functools.cache
def heights() -> dict[str, int]:
    """Each module's layer height (siblings share one; the package and __main__: 0)."""
    height = layer_heights()
    return {
        m: height.get(m.split(".")[1], 0) if "." in m else 0 for m in import_graph(SRC, "compatkit")
    }


UTILITIES = {
    "compatkit.errors",
    "compatkit.value",
    "compatkit.atomic",
    "compatkit.bounded",
}


# A module split off another for a concern of its own that serves only it is one step with
# it: the route counts where a command's data goes, not how the code is filed, so splitting a
# module along its concerns never presses against the ceilings (issue 47: txn.py absorbed its
# checks to stay under one). Key: the split-off module; value: the module it serves.
ONE_CONCERN = {
    "compatkit.env.diskcheck": "compatkit.env.txn",
    "compatkit.engine.lines": "compatkit.engine.hunks",  # a file as the hunks see it
}


def _module_of(filename: str) -> str | None:
    path = Path(filename)
    if not path.is_relative_to(PACKAGE):
        return None
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def trace(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Route]:
    """Call ``fn`` and trace the modules its calls enter (generators' resumptions included)."""
    entries: list[str] = []
    names: dict[str, str | None] = {}
    seen: set[object] = set()

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code in seen:
            return
        seen.add(frame.f_code)
        filename = frame.f_code.co_filename
        module = names.get(filename, "?")
        if module == "?":
            module = _module_of(filename)
            module = names[filename] = ONE_CONCERN.get(module or "", module)
        if module in UTILITIES or (module or "").startswith("compatkit.model."):
            return
        if module is not None and (not entries or entries[-1] != module):
            entries.append(module)

    sys.setprofile(profile)
    try:
        result = fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
    return result, Route(entries, heights())
