"""A tiny in-process job scheduler."""
