"""The Prometheus observer of events, its metric families, and the /metrics endpoint."""
