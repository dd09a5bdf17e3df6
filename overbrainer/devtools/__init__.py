"""Developer tools for demos, tests and benchmarks (the stand-in provider, a loop stall
meter); not product logic."""
