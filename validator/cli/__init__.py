"""The `stcheck` command line: `main` plus one module per subcommand, each imported only when chosen."""

__all__: list[str] = []
