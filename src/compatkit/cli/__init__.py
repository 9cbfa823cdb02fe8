"""The command line: entry point, argument parsing, output, and one module per command
(commands/). Only the CLI prints."""
