"""`overbrainer push`: a run's model, GGUF and model card to the Hugging Face Hub."""
