"""What a call launches, told from its metadata alone: strategy, tasks, passes; no numba import."""
