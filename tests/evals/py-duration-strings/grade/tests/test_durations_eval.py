import unittest

from cronlite.durations import parse_duration
from cronlite.jobs import JobError, load_job


class ParseDurationTest(unittest.TestCase):
    def test_valid(self):
        cases = {
            "90s": 90, "1h30m": 5400, "2d": 172800, "1.5h": 5400, "250ms": 0.25,
            "1m30s": 90, "45": 45, "2.5": 2.5, "  10m ": 600, "1h0m5s": 3605, "1s500ms": 1.5,
        }
        for text, want in cases.items():
            with self.subTest(text=text):
                got = parse_duration(text)
                self.assertIsInstance(got, float)
                self.assertAlmostEqual(got, want)

    def test_invalid(self):
        for text in ["", "   ", "h", "10x", "1h 30m", "-5s", "5 m", "abc", "1h30", "ms", "1hh"]:
            with self.subTest(text=text):
                with self.assertRaises(ValueError):
                    parse_duration(text)


class LoadJobDurationsTest(unittest.TestCase):
    def test_strings(self):
        job = load_job({"name": "sync", "command": "sync.sh", "interval": "1h30m", "timeout": "90s"})
        self.assertEqual((job.interval, job.timeout), (5400.0, 90.0))

    def test_numbers_still_work(self):
        job = load_job({"name": "sync", "command": "sync.sh", "interval": 30})
        self.assertEqual((job.interval, job.timeout), (30.0, 60.0))

    def test_bad_string_is_a_job_error_naming_the_field(self):
        with self.assertRaises(JobError) as cm:
            load_job({"name": "sync", "command": "sync.sh", "interval": "soon"})
        self.assertIn("interval", str(cm.exception))
        with self.assertRaises(JobError):
            load_job({"name": "sync", "command": "sync.sh", "interval": 10, "timeout": "0s"})


if __name__ == "__main__":
    unittest.main()
