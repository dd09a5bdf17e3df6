"""`kind = "ray"`: jobs submitted to a Ray cluster's Jobs API, their files on shared storage."""
