"""`overbrainer compare`: the exported child against the parent, judged by an LLM."""
