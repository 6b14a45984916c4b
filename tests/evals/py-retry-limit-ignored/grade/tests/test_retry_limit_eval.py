import logging
import os
import tempfile
import unittest

from jobq import Job, Registry, Settings, load_settings
from jobq.batch import run_batch
from jobq.queue import MemoryQueue
from jobq.runner import Runner
from jobq.worker import Worker

logging.disable(logging.CRITICAL)


def flaky_registry(failures):
    """A registry whose "pay" handler fails `failures` times, then succeeds."""
    reg = Registry()
    calls = {"n": 0}

    @reg.handler("pay")
    def pay():
        calls["n"] += 1
        if calls["n"] <= failures:
            raise ConnectionError("provider timeout")

    return reg


def no_sleep(seconds):
    pass


class RetryLimitTest(unittest.TestCase):
    def test_runner_honours_a_higher_limit(self):
        job = Runner(Settings(retry_limit=6), flaky_registry(6), sleep=no_sleep).run(Job("pay"))
        self.assertEqual((job.status, job.attempts), ("done", 7))

    def test_runner_honours_a_lower_limit(self):
        job = Runner(Settings(retry_limit=1), flaky_registry(5), sleep=no_sleep).run(Job("pay"))
        self.assertEqual((job.status, job.attempts), ("failed", 2))
        job = Runner(Settings(retry_limit=0), flaky_registry(5), sleep=no_sleep).run(Job("pay"))
        self.assertEqual((job.status, job.attempts), ("failed", 1))

    def test_default_is_still_three_retries(self):
        job = Runner(Settings(), flaky_registry(10), sleep=no_sleep).run(Job("pay"))
        self.assertEqual((job.status, job.attempts), ("failed", 4))

    def test_worker_from_ini(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "jobq.ini")
            with open(path, "w") as f:
                f.write("[jobq]\nretry_limit = 6\nbackoff_seconds = 0.1\n")
            settings = load_settings(path)
        q = MemoryQueue()
        q.put(Job("pay"))
        [job] = Worker(settings, flaky_registry(5), q, sleep=no_sleep).drain()
        self.assertEqual((job.status, job.attempts), ("done", 6))

    def test_batch_honours_the_limit(self):
        jobs = [Job("pay")]
        [job] = run_batch(jobs, Settings(retry_limit=5), flaky_registry(5), sleep=no_sleep)
        self.assertEqual((job.status, job.attempts), ("done", 6))
        [job] = run_batch([Job("pay")], Settings(retry_limit=1), flaky_registry(5), sleep=no_sleep)
        self.assertEqual((job.status, job.attempts), ("failed", 2))


if __name__ == "__main__":
    unittest.main()
