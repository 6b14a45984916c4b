import time

from . import log
from .retry import RetryPolicy


def run_batch(jobs, settings, registry, sleep=time.sleep):
    """Runs jobs round by round: every pending job is tried once per round, and those that
    failed wait one backoff before the next round. Used for nightly re-sends, where one slow
    job must not hold up the others."""
    policy = RetryPolicy(base_delay=settings.backoff_seconds)
    pending = list(jobs)
    while pending:
        failed = []
        for job in pending:
            job.attempts += 1
            try:
                registry.get(job.name)(**job.payload)
                job.status = "done"
            except Exception as exc:
                retry = policy.should_retry(job.attempts)
                log.attempt_failed(job, exc, retry)
                if retry:
                    failed.append(job)
                else:
                    job.status, job.error = "failed", str(exc)
        if failed:
            sleep(policy.delay(max(j.attempts for j in failed)))
        pending = failed
    return list(jobs)
