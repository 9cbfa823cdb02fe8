"""A project's ``[tool.compatkit]`` table: the patchsets it needs and how strict to be.

::

    [tool.compatkit]
    patchsets = ["speculators-vllm016"]
    patchset-dirs = ["patches"]        # relative to this pyproject.toml
    on-mismatch = "strict"             # or "warn"

>>> parse_config({"tool": {"compatkit": {"patchsets": ["a"]}}}, Path("/p/pyproject.toml")).policy
'strict'
"""

from __future__ import annotations

from pathlib import Path

from compatkit import cache
from compatkit.errors import PatchFormatError, UsageError
from compatkit.value import Value

POLICIES = ("strict", "warn")


class ProjectConfig(Value):
    __slots__ = ("path", "patchsets", "patchset_dirs", "policy")

    def __init__(
        self,
        path: Path,
        patchsets: tuple[str, ...],
        patchset_dirs: tuple[Path, ...],
        policy: str = "strict",
    ) -> None:
        self.path = path
        self.patchsets = patchsets
        self.patchset_dirs = patchset_dirs
        self.policy = policy


def parse_config(data: dict[str, object], path: Path) -> ProjectConfig | None:
    tool = data.get("tool")
    table = tool.get("compatkit") if isinstance(tool, dict) else None
    if table is None:
        return None
    if not isinstance(table, dict):
        raise PatchFormatError(f"{path}: [tool.compatkit] must be a table")
    names = table.get("patchsets", [])
    dirs = table.get("patchset-dirs", [])
    policy = table.get("on-mismatch", "strict")
    for key, value in (("patchsets", names), ("patchset-dirs", dirs)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise PatchFormatError(f"{path}: [tool.compatkit] {key} must be a list of strings")
    if policy not in POLICIES:
        raise PatchFormatError(f"{path}: [tool.compatkit] on-mismatch must be strict or warn")
    base = path.parent
    return ProjectConfig(path, tuple(names), tuple(base / d for d in dirs), str(policy))


def find_config(start: Path, explicit: Path | None = None) -> ProjectConfig | None:
    """The nearest pyproject.toml with a [tool.compatkit] table, walking up from ``start``."""
    if explicit is not None:
        if not explicit.is_file():
            raise UsageError(f"--config {explicit}: no such file")
        candidates = [explicit]
    else:
        candidates = [d / "pyproject.toml" for d in (start, *start.parents)]
    for candidate in candidates:
        if not candidate.is_file():
            continue
        try:
            raw = candidate.read_bytes()
            if b"compatkit" not in raw and explicit is None:
                continue  # cheap pre-check: most pyproject.toml files have no such table
            data = cache.toml_loads(raw)
        except (OSError, UnicodeDecodeError, ValueError) as exc:  # TOMLDecodeError too
            raise PatchFormatError(f"{candidate}: {exc}") from None
        config = parse_config(data, candidate)
        if config is not None or explicit is not None:
            return config
    return None
