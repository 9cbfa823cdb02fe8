from compatkit.cli.entry import run

raise SystemExit(run())
