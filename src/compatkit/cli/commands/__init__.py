"""One module per command (compatkit.cli.main.COMMANDS names it): ``add_arguments(parser)``,
its arguments, and ``run(args, ctx)``, which returns the exit code."""
