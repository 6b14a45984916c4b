import unittest

from memo import Cache, cached


class FakeClock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class TtlTest(unittest.TestCase):
    def test_entry_expires_exactly_at_ttl(self):
        clock = FakeClock()
        c = Cache(clock=clock)
        c.set("rate", 1.08, ttl=10)
        clock.now = 1009.999
        self.assertEqual(c.get("rate"), 1.08)
        self.assertIn("rate", c)
        clock.now = 1010.0
        self.assertIsNone(c.get("rate"))
        self.assertEqual(c.get("rate", "gone"), "gone")
        self.assertNotIn("rate", c)

    def test_default_ttl_and_override(self):
        clock = FakeClock()
        c = Cache(default_ttl=5, clock=clock)
        c.set("short", 1)
        c.set("long", 2, ttl=60)
        clock.now += 5
        self.assertNotIn("short", c)
        self.assertEqual(c.get("long"), 2)

    def test_no_ttl_never_expires(self):
        clock = FakeClock()
        c = Cache(clock=clock)
        c.set("k", "v")
        clock.now += 10**9
        self.assertEqual(c.get("k"), "v")

    def test_len_and_purge(self):
        clock = FakeClock()
        c = Cache(clock=clock)
        c.set("a", 1, ttl=1)
        c.set("b", 2, ttl=2)
        c.set("c", 3)
        self.assertEqual(len(c), 3)
        clock.now += 1
        self.assertEqual(len(c), 2)
        clock.now += 1
        self.assertEqual(len(c), 1)
        self.assertEqual(c.purge(), 2)
        self.assertEqual(c.purge(), 0)
        self.assertEqual(len(c), 1)

    def test_set_again_restarts_the_ttl(self):
        clock = FakeClock()
        c = Cache(clock=clock)
        c.set("a", 1, ttl=10)
        clock.now += 8
        c.set("a", 2, ttl=10)
        clock.now += 8
        self.assertEqual(c.get("a"), 2)

    def test_invalid_ttl(self):
        with self.assertRaises(ValueError):
            Cache(default_ttl=0)
        c = Cache()
        for bad in (0, -1, -0.5):
            with self.assertRaises(ValueError):
                c.set("a", 1, ttl=bad)

    def test_cached_recomputes_after_expiry(self):
        clock = FakeClock()
        c = Cache(default_ttl=30, clock=clock)
        calls = []

        @cached(c)
        def rate(cur):
            calls.append(cur)
            return len(calls)

        self.assertEqual([rate("EUR"), rate("EUR")], [1, 1])
        clock.now += 30
        self.assertEqual(rate("EUR"), 2)
        self.assertEqual(calls, ["EUR", "EUR"])


if __name__ == "__main__":
    unittest.main()
