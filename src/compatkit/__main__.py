from compatkit.cli import main

raise SystemExit(main())
