"""The project on disk: its directory and lock, init, templates and migrate."""
