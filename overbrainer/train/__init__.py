"""Training: Axolotl config, metric lines, phases."""
