"""The Runpod target: the REST v2 client, its catalog, and the `gpu_types = "auto"` choice."""
