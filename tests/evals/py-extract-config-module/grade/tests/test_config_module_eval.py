import json
import os
import re
import tempfile
import unittest

import tracker
from tracker import config, export, server, utils


class ConfigModuleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.config = os.path.join(self.tmp.name, "tracker.json")
        with open(self.config, "w") as f:
            json.dump({"data_dir": os.path.join(self.tmp.name, "data"), "port": 0}, f)

    def tearDown(self):
        self.tmp.cleanup()

    def test_load_config_lives_in_config(self):
        cfg = config.load_config(os.path.join(self.tmp.name, "missing.json"))
        self.assertEqual(cfg["statuses"], ["open", "in-progress", "closed"])
        self.assertEqual(cfg["default_priority"], "normal")

    def test_utils_no_longer_loads_config(self):
        self.assertFalse(hasattr(utils, "load_cfg"))
        self.assertFalse(hasattr(utils, "load_config"))

    def test_old_name_is_gone(self):
        pkg = os.path.dirname(tracker.__file__)
        for name in sorted(os.listdir(pkg)):
            if name.endswith(".py"):
                with open(os.path.join(pkg, name), encoding="utf-8") as f:
                    self.assertIsNone(re.search(r"\bload_cfg\b", f.read()), f"load_cfg still in tracker/{name}")

    def test_server_uses_the_config(self):
        address, handler = server.build_app(self.config)
        self.assertEqual(address, ("127.0.0.1", 0))
        self.assertTrue(callable(handler))

    def test_export_uses_the_config(self):
        self.assertEqual(export.export_csv(self.config), "slug,title,status,priority\n")
        with self.assertRaises(ValueError):
            export.export_csv(self.config, status="archived")


if __name__ == "__main__":
    unittest.main()
