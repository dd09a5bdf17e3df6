"""The embedded stand-in provider for demos and tests; not product logic."""
