"""The overbrainer command line."""
