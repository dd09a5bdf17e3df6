"""Each command's order of work, shared by the CLI and the TUI."""
