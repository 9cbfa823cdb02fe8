from compatkit._entry import run

raise SystemExit(run())
