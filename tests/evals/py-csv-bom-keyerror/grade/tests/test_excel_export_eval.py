import io
import os
import tempfile
import unittest

from salesreport.cli import main
from salesreport.reader import read_rows
from salesreport.summary import summarize, top_reps

BODY = 'North,Ada,"1,200.50"\r\nSouth,Bo,300\r\nNorth,Cy,99.50\r\nWest,Di,5\r\n'


class ExcelExportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, data):
        path = os.path.join(self.tmp.name, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def test_utf8_bom_header(self):
        path = self.write("q3.csv", b"\xef\xbb\xbf" + ("region,rep,amount\r\n" + BODY).encode())
        rows = read_rows(path)
        self.assertEqual(summarize(rows), {"North": 130000, "South": 30000, "West": 500})
        self.assertEqual(top_reps(rows, 1), [("Ada", 120050)])

    def test_plain_file_still_works(self):
        path = self.write("q2.csv", ("region,rep,amount\n" + BODY.replace("\r\n", "\n")).encode())
        self.assertEqual(summarize(read_rows(path)), {"North": 130000, "South": 30000, "West": 500})

    def test_cli_on_bom_file(self):
        path = self.write("q3.csv", b"\xef\xbb\xbf" + ("region,rep,amount\r\n" + BODY + "South,Ed,12\r\n").encode())
        out = io.StringIO()
        self.assertEqual(main([path], out=out), 0)
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[1].split(), ["North", "1,300.00"])
        self.assertEqual(lines[2].split(), ["South", "312.00"])
        self.assertNotIn("unknown", out.getvalue().lower())


if __name__ == "__main__":
    unittest.main()
