import logging

logger = logging.getLogger("jobq")


def attempt_failed(job, exc, will_retry):
    logger.warning("job %s (%s) attempt %d failed: %s%s", job.id, job.name, job.attempts, exc,
                   "" if will_retry else " -- giving up")
