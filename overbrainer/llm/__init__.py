"""LLM providers over HTTP: requests, completions, usage."""
