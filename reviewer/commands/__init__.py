"""One module per subcommand; each exposes a plain function returning an exit status."""
