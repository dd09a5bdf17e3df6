"""Dataset records, their IDs and crash-safe JSONL files."""
