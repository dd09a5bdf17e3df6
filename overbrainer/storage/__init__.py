"""Crash-safe files: atomic writer, appender with torn-line repair, records, IDs, history."""
