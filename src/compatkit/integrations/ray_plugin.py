"""A Ray runtime_env plugin: every worker's environment has the patchsets, or it does not start.

Register it on every node before ``ray start`` (the runtime env agent reads it)::

    export RAY_RUNTIME_ENV_PLUGINS='[{"class":"compatkit.integrations.ray_plugin.CompatkitPlugin"}]'

then ask for it in a job's or a task's ``runtime_env``::

    runtime_env = {
        "pip": ["speculators==0.3.0", "vllm==0.16.0"],
        "compatkit": {"patchsets": ["speculators-vllm016"], "mode": "apply"},
    }

It runs after the pip/uv/conda step (priority 90; theirs is 10), on the interpreter that step
made (``context.py_executable``). Modes:

- ``verify``: the worker starts only if every patchset is fully applied and intact there;
  otherwise the start fails with ``RuntimeEnvSetupError`` naming the patches that are missing.
- ``apply``: applies them (a no-op when applied), then verifies. It writes only into an
  environment this runtime_env created (below the agent's runtime resources directory, as
  the pip and uv steps make them), never into the node's own environment, unless
  ``"allow_write": true`` says so.
- ``runtime``: writes nothing into any environment: the worker runs with compatkit's runtime
  hook first on ``PYTHONPATH`` (as ``compatkit exec`` does), which serves the patched sources
  at import time, after the same version, requirement and diff checks as ``apply``; for a
  read-only environment (an image, a shared venv). A patch that no longer applies fails the
  worker start, naming it.

Other keys: ``"patchset_dirs": [DIR, ...]`` (directories on the nodes, like
``--patchset-dir``), ``"allow_write": false``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import Any

from ray._private.runtime_env.plugin import RuntimeEnvPlugin

from compatkit.errors import CompatkitError

KEY = "compatkit"
MODES = ("verify", "apply", "runtime")
_KEYS = {"patchsets", "mode", "patchset_dirs", "allow_write"}


class Config:
    __slots__ = ("patchsets", "mode", "patchset_dirs", "allow_write")

    def __init__(
        self, patchsets: list[str], mode: str, patchset_dirs: list[str], allow_write: bool
    ) -> None:
        self.patchsets, self.mode = patchsets, mode
        self.patchset_dirs, self.allow_write = patchset_dirs, allow_write


def parse_config(raw: Any) -> Config:
    """The ``compatkit`` value of a runtime_env, checked; ValueError names what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError(f'runtime_env "{KEY}" must be a table, not {type(raw).__name__}')
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ValueError(f'runtime_env "{KEY}": unknown key(s) {", ".join(unknown)}')
    names, dirs = raw.get("patchsets"), raw.get("patchset_dirs", [])
    for key, value in (("patchsets", names), ("patchset_dirs", dirs)):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ValueError(f'runtime_env "{KEY}": "{key}" must be a list of names')
    if not names:
        raise ValueError(f'runtime_env "{KEY}": "patchsets" must name at least one patchset')
    mode, allow = raw.get("mode", "verify"), raw.get("allow_write", False)
    if mode not in MODES:
        raise ValueError(f'runtime_env "{KEY}": "mode" must be one of {", ".join(MODES)}')
    if not isinstance(allow, bool):
        raise ValueError(f'runtime_env "{KEY}": "allow_write" must be true or false')
    return Config(list(names), mode, list(dirs), allow)


def prepare(config: Config, python: str, owned: Path | None) -> list[str]:
    """Bring ``python``'s environment to ``config``; raise CompatkitError naming the patches
    when it cannot. ``owned``: the directory of environments the runtime_env created (None:
    unknown), the only place "apply" may write without ``allow_write``. Returns log lines."""
    from compatkit.env.target import Environment
    from compatkit.load.registry import Registry

    registry = Registry([Path(d) for d in config.patchset_dirs])
    env = Environment.for_python(python)
    done: list[str] = []
    if config.mode == "runtime":
        from compatkit.ops.runtime import exec_dir

        root = exec_dir(registry, env, list(config.patchsets))
        return [f"compatkit: {', '.join(config.patchsets)} in runtime mode from {root}"]
    for name in config.patchsets:
        if config.mode == "apply":
            done.append(_apply(registry, env, name, owned, config.allow_write))
        _verify(registry, env, name)
        done.append(f"compatkit: {name} verified in {env.executable}")
    return done


def _apply(registry: Any, env: Any, name: str, owned: Path | None, allow: bool) -> str:
    from compatkit.ops.apply import apply_patchset

    ps = registry.get(name)
    dist = env.find(ps.distribution)
    if dist is not None and not allow and not _inside(Path(dist.root), owned):
        raise CompatkitError(
            f"refusing to apply {name} to {dist.name} {dist.version} in {dist.root}: "
            "this runtime_env did not create that environment (no pip/uv step made it); "
            'add "allow_write": true to patch it anyway, or use "mode": "verify"'
        )
    try:
        result = apply_patchset(registry, env, name, [])
    except CompatkitError as exc:
        raise CompatkitError(f"cannot apply {name}: {exc.message}", exc.problems) from None
    return f"compatkit: {name} {result.action} ({result.dist.name} {result.dist.version})"


def _verify(registry: Any, env: Any, name: str) -> None:
    from compatkit.model.results import PatchState
    from compatkit.ops.status import inspect_patchset
    from compatkit.ops.verify import problems

    found = problems(registry, env, name)
    if not found:
        return
    statuses = inspect_patchset(registry.get(name), env).statuses
    missing = [f"{s.id} ({s.status})" for s in statuses if s.status is not PatchState.APPLIED]
    which = f": {', '.join(missing)}" if missing else ""
    raise CompatkitError(f"{name} is not applied in {env.executable}{which}", found)


def _inside(path: Path, root: Path | None) -> bool:
    if root is None:
        return False
    return path.resolve().is_relative_to(root.resolve())


def _runtime_env_dir() -> Path | None:
    """The agent's ``--runtime-env-dir``: where the pip, uv and conda steps build their envs."""
    args = sys.argv
    for i, arg in enumerate(args):
        if arg.startswith("--runtime-env-dir="):
            return Path(arg.split("=", 1)[1])
        if arg == "--runtime-env-dir" and i + 1 < len(args):
            return Path(args[i + 1])
    return None


def _message(exc: CompatkitError) -> str:
    return "\n".join([exc.message, *(f"  - {p}" for p in exc.problems)])


class _FirstLine(Exception):
    """Ray's agent reports a plugin's failure as ``traceback.format_exception`` of it, which
    prints a never-raised cause first, with no traceback, as ``<module>.<qualname>: <text>``.
    As this class passes for ``builtins.compatkit``, the report's first line (after Ray's own
    "Failed to set up runtime environment." and node prefix) is ``compatkit: <message>``, and
    the agent's traceback comes after it."""


_FirstLine.__module__, _FirstLine.__qualname__ = "builtins", KEY


def first_line(exc: CompatkitError) -> _FirstLine:
    """The cause ``create``'s failure is raised from: compatkit's message, first in Ray's
    report (never raise it: raised, it would carry a traceback printed before it)."""
    return _FirstLine(_message(exc))


class CompatkitPlugin(RuntimeEnvPlugin):
    name = KEY
    priority = 90  # after pip, uv and conda (10): patch the environment they made

    @staticmethod
    def validate(runtime_env_dict: dict[str, Any]) -> None:
        parse_config(runtime_env_dict.get(KEY))

    async def create(
        self, uri: str | None, runtime_env: Any, context: Any, logger: logging.Logger
    ) -> float:
        config = parse_config(runtime_env.get(KEY))
        python, owned = context.py_executable, _runtime_env_dir()
        logger.info(f"compatkit: {config.mode} {', '.join(config.patchsets)} on {python}")
        try:
            done = await asyncio.to_thread(prepare, config, python, owned)
        except CompatkitError as exc:
            raise RuntimeError(f"compatkit: {exc.message}") from first_line(exc)
        for line in done:
            logger.info(line)
        return 0

    def modify_context(
        self, uris: list[str], runtime_env: Any, context: Any, logger: logging.Logger
    ) -> None:
        """Runtime mode: the hook's directory goes first on the worker's PYTHONPATH (the
        directory ``create`` prepared: the same key gives the same cached directory)."""
        config = parse_config(runtime_env.get(KEY))
        if config.mode != "runtime":
            return
        from compatkit.env.target import Environment
        from compatkit.load.registry import Registry
        from compatkit.ops.runtime import exec_dir

        registry = Registry([Path(d) for d in config.patchset_dirs])
        env = Environment.for_python(context.py_executable)
        root = str(exec_dir(registry, env, list(config.patchsets)))
        rest = context.env_vars.get("PYTHONPATH")
        context.env_vars["PYTHONPATH"] = os.pathsep.join([root, *([rest] if rest else [])])
