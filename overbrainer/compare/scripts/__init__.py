"""The compare job's scripts, shipped as package data."""
