"""What every command's ``run(args, ctx)`` gets besides its arguments: the project's
configuration, the patchset registry, the target environment and the output, each made on
first use (a command that never reads the environment never resolves ``--python``)."""

from __future__ import annotations

from pathlib import Path

TYPE_CHECKING = False

if TYPE_CHECKING:
    from argparse import Namespace

    from compatkit.cli.output import Output
    from compatkit.delivery.wheels import WheelSource
    from compatkit.env.target import Environment
    from compatkit.load.config import ProjectConfig
    from compatkit.load.registry import Registry
    from compatkit.model.progress import Reporter

_UNSET = object()


class Context:
    def __init__(self, args: Namespace, out: Output) -> None:
        self.args = args
        self.out = out
        self._config: object = _UNSET
        self._registry: Registry | None = None
        self._env: Environment | None = None
        self._progress: Reporter | None = None

    @property
    def config(self) -> ProjectConfig | None:
        """The nearest pyproject.toml's ``[tool.compatkit]`` (or ``--config``'s), if any."""
        if self._config is _UNSET:
            from compatkit.cli.output import warning
            from compatkit.load.config import find_config

            self._config = find_config(Path.cwd(), self.args.config, warning)
        return self._config  # type: ignore[return-value]

    @property
    def patchset_dirs(self) -> list[Path]:
        """``--patchset-dir``, then the project's ``patchset-dirs``."""
        config = self.config
        return [*self.args.patchset_dir, *(config.patchset_dirs if config else [])]

    @property
    def registry(self) -> Registry:
        if self._registry is None:
            from compatkit.load.registry import Registry

            config, dirs = self.config, self.args.patchset_dir
            project = (config.patchset_dirs, config.patchset_source) if config else ()
            self._registry = Registry(dirs, *project)
        return self._registry

    @property
    def env(self) -> Environment:
        """The target environment: ``--python``'s, else the active venv's or compatkit's own."""
        if self._env is None:
            from compatkit.cli.output import notice
            from compatkit.env import owners
            from compatkit.env.target import Environment

            owners.configure(self._safe_environments)
            self._env = Environment.for_python(self.args.python)
            self._env.tell(notice)
        return self._env

    def _safe_environments(self) -> tuple[str, ...]:
        """The project's ``safe-environments`` (asked only for another user's environment)."""
        config = self.config
        return config.safe_environments if config else ()

    @property
    def progress(self) -> Reporter:
        """What an operation reports long work to: a bar on a terminal's stderr, else
        nothing (:mod:`compatkit.cli.progressbar`)."""
        if self._progress is None:  # one for the whole run: rich draws one display at a time
            from compatkit.cli.progressbar import reporter

            self._progress = reporter(self.out.json_mode)
        return self._progress

    def wheels(self) -> WheelSource:
        """Where pristine wheels come from: ``--wheel-dir``, then the index (not ``--offline``);
        a download shows a bar in a terminal (:attr:`progress`)."""
        from compatkit.delivery.wheels import WheelSource

        offline = getattr(self.args, "offline", False)
        source = WheelSource.configure(self.args.wheel_dir, offline, self.env.executable)
        source.reporter = self.progress
        return source
