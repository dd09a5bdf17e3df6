"""`overbrainer export`: a run's model to GGUF on its target, delivered with an Ollama Modelfile."""
