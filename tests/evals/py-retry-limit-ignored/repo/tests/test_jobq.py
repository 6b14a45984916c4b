import logging
import os
import tempfile
import unittest

from jobq import Job, Registry, Settings, load_settings
from jobq.backoff import delay_for
from jobq.queue import MemoryQueue
from jobq.worker import Worker

logging.disable(logging.CRITICAL)


class JobqTest(unittest.TestCase):
    def test_load_settings(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "jobq.ini")
            with open(path, "w") as f:
                f.write("[jobq]\nqueue = mail\nretry_limit = 6 ; flaky\n")
            s = load_settings(path)
        self.assertEqual((s.queue, s.retry_limit, s.backoff_seconds), ("mail", 6, 0.5))

    def test_backoff(self):
        self.assertEqual([delay_for(0.5, n) for n in (1, 2, 3)], [0.5, 1.0, 2.0])
        self.assertEqual(delay_for(10, 10), 60.0)

    def test_worker_runs_jobs(self):
        reg = Registry()
        seen = []

        @reg.handler("greet")
        def greet(who):
            seen.append(who)

        q = MemoryQueue()
        q.put(Job("greet", {"who": "ann"}))
        q.put(Job("greet", {"who": "bob"}))
        done = Worker(Settings(), reg, q, sleep=lambda s: None).drain()
        self.assertEqual([j.status for j in done], ["done", "done"])
        self.assertEqual(seen, ["ann", "bob"])


if __name__ == "__main__":
    unittest.main()
