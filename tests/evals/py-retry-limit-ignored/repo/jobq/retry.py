from .backoff import delay_for

DEFAULT_MAX_RETRIES = 3


class RetryPolicy:
    def __init__(self, max_retries=DEFAULT_MAX_RETRIES, base_delay=0.5):
        self.max_retries = max_retries
        self.base_delay = base_delay

    def should_retry(self, attempts_so_far):
        """After `attempts_so_far` failed attempts, is another one allowed?"""
        return attempts_so_far <= self.max_retries

    def delay(self, attempts_so_far):
        return delay_for(self.base_delay, attempts_so_far)
