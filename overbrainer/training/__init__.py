"""Training runs: the runs store, the Axolotl config, the follow loop, outcomes and run commands."""
