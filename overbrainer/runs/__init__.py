"""Training runs and the jobs run for them."""
