"""Where jobs run: the executor of a target, the job wrapper script, and its status and cancel."""
