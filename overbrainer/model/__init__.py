"""Plain frozen values that events carry and every layer shares; imports nothing of ours."""
