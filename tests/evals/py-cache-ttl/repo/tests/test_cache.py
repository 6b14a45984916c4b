import unittest

from memo import Cache, cached


class CacheTest(unittest.TestCase):
    def test_get_set_delete(self):
        c = Cache()
        c.set("a", 1)
        self.assertEqual(c.get("a"), 1)
        self.assertIsNone(c.get("b"))
        self.assertEqual(c.get("b", 0), 0)
        self.assertTrue(c.delete("a"))
        self.assertFalse(c.delete("a"))
        self.assertEqual((c.hits, c.misses), (1, 2))

    def test_contains_and_len(self):
        c = Cache()
        c.set("a", None)
        self.assertIn("a", c)
        self.assertEqual(len(c), 1)

    def test_cached(self):
        c = Cache()
        calls = []

        @cached(c)
        def square(x):
            calls.append(x)
            return x * x

        self.assertEqual([square(3), square(3), square(4)], [9, 9, 16])
        self.assertEqual(calls, [3, 4])


if __name__ == "__main__":
    unittest.main()
