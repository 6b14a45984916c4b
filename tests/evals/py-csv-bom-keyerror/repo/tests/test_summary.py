import unittest

from salesreport.summary import summarize, top_reps

ROWS = [
    {"region": "North", "rep": "Ada", "amount": "1,200.50"},
    {"region": "South ", "rep": "Bo", "amount": "300"},
    {"region": "North", "rep": "Cy", "amount": "99.50"},
]


class SummaryTest(unittest.TestCase):
    def test_summarize(self):
        self.assertEqual(summarize(ROWS), {"North": 130000, "South": 30000})

    def test_top_reps(self):
        self.assertEqual(top_reps(ROWS, 2), [("Ada", 120050), ("Bo", 30000)])


if __name__ == "__main__":
    unittest.main()
