import io
import json
import os
import tempfile
import unittest

from tracker import cli, export
from tracker.config import load_config
from tracker.utils import slugify


class TrackerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.config = os.path.join(self.tmp.name, "tracker.json")
        with open(self.config, "w") as f:
            json.dump({"data_dir": os.path.join(self.tmp.name, "data"), "default_priority": "low"}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def test_slugify(self):
        self.assertEqual(slugify("Crash on  startup!"), "crash-on-startup")
        self.assertEqual(slugify("???"), "untitled")

    def test_load_config_defaults(self):
        cfg = load_config(os.path.join(self.tmp.name, "missing.json"))
        self.assertEqual(cfg["port"], 8765)

    def test_load_config_rejects_unknown_keys(self):
        with open(self.config, "w") as f:
            json.dump({"colour": "blue"}, f)
        with self.assertRaises(ValueError):
            load_config(self.config)

    def test_cli_add_and_list(self):
        cli.main(["--config", self.config, "add", "Crash on startup"], out=io.StringIO())
        out = io.StringIO()
        cli.main(["--config", self.config, "list"], out=out)
        self.assertIn("crash-on-startup", out.getvalue())
        self.assertIn("low", out.getvalue())

    def test_export(self):
        cli.main(["--config", self.config, "add", "Slow search"], out=io.StringIO())
        self.assertIn("slow-search,Slow search,open,low", export.export_csv(self.config))


if __name__ == "__main__":
    unittest.main()
