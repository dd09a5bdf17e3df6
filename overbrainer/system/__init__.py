"""Samples of this machine (CPU, memory, disks, GPUs) and the probe script for remote targets."""
