"""overbrainer: distil a large parent LLM into a small child model."""

__version__ = "0.1.0"
