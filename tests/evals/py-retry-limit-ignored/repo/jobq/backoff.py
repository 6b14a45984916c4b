MAX_DELAY = 60.0


def delay_for(base, attempts_so_far):
    """Exponential backoff: base, 2*base, 4*base, ... capped at MAX_DELAY."""
    return min(MAX_DELAY, base * (2 ** max(0, attempts_so_far - 1)))
