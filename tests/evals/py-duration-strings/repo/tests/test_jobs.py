import unittest

from cronlite.durations import format_duration
from cronlite.jobs import JobError, load_job
from cronlite.schedule import Schedule


class JobsTest(unittest.TestCase):
    def test_numbers(self):
        job = load_job({"name": "backup", "command": "backup.sh", "interval": 3600, "timeout": 90})
        self.assertEqual((job.interval, job.timeout), (3600.0, 90.0))

    def test_default_timeout(self):
        self.assertEqual(load_job({"name": "a", "command": "x", "interval": 5}).timeout, 60.0)

    def test_errors(self):
        with self.assertRaises(JobError):
            load_job({"name": "a", "command": "x"})
        with self.assertRaises(JobError):
            load_job({"name": "a", "command": "x", "interval": -1})

    def test_format(self):
        self.assertEqual(format_duration(5400), "1h30m")
        self.assertEqual(format_duration(0.25), "250ms")

    def test_schedule(self):
        a = load_job({"name": "a", "command": "x", "interval": 10})
        b = load_job({"name": "b", "command": "y", "interval": 15})
        runs = [(t, j.name) for t, j in Schedule([a, b]).next_due(30)]
        self.assertEqual(runs, [(10, "a"), (15, "b"), (20, "a"), (30, "a"), (30, "b")])


if __name__ == "__main__":
    unittest.main()
