"""Front ends: the CLI front end (progress lines, bar), the TUI front end, logging set-up."""
