"""Runpod pods for training."""
