import time

from . import log
from .retry import RetryPolicy


class Runner:
    """Runs one job to completion, retrying failures according to the settings."""

    def __init__(self, settings, registry, sleep=time.sleep):
        self.settings = settings
        self.registry = registry
        self.sleep = sleep
        self.policy = RetryPolicy(max_retries=settings.retry_limit, base_delay=settings.backoff_seconds)

    def run(self, job):
        handler = self.registry.get(job.name)
        while True:
            job.attempts += 1
            try:
                handler(**job.payload)
            except Exception as exc:  # handlers may raise anything
                retry = self.policy.should_retry(job.attempts)
                log.attempt_failed(job, exc, retry)
                if not retry:
                    job.status, job.error = "failed", str(exc)
                    return job
                self.sleep(self.policy.delay(job.attempts))
            else:
                job.status = "done"
                return job
