"""One module per subcommand; each exports a function returning the exit code."""
