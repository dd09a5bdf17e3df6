"""Names a job and its target agree on: files in R and test hooks that training and the pod
guards under `targets/` both use."""

SNAPSHOT_REQUEST = "snapshot.request"
"""The file in R whose appearance asks the job to save a checkpoint now."""
POLL_ENV = "OVERBRAINER_TEST_POLL_S"
"""Test hook: seconds between two polls instead of 2 (also shortens the request watch)."""
