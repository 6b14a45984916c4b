import unittest

from invoice import LineItem, compute_totals
from invoice.render import render


class TotalsTest(unittest.TestCase):
    def test_no_tax_no_discount(self):
        t = compute_totals([LineItem("Widget", 250, 4), LineItem("Gadget", 1999)], 0)
        self.assertEqual((t.subtotal, t.discount, t.tax, t.total), (2999, 0, 0, 2999))

    def test_tax_rounds_half_up(self):
        # 10% of $1.25 is 12.5 cents: the customer pays 13.
        t = compute_totals([LineItem("Sticker", 125)], 10)
        self.assertEqual(t.tax, 13)
        self.assertEqual(t.total, 138)

    def test_tax_rounds_down_below_half(self):
        t = compute_totals([LineItem("Pen", 333)], "7.5")  # 24.975 -> 25
        self.assertEqual(t.tax, 25)
        t = compute_totals([LineItem("Pen", 321)], 7)  # 22.47 -> 22
        self.assertEqual(t.tax, 22)

    def test_discount_is_taken_before_tax(self):
        t = compute_totals([LineItem("Chair", 5000, 2)], 8, discount_percent=10)
        self.assertEqual(t.subtotal, 10000)
        self.assertEqual(t.discount, 1000)
        self.assertEqual(t.tax, 720)
        self.assertEqual(t.total, 9720)

    def test_render(self):
        text = render([LineItem("Chair", 5000, 2)], 8, discount_percent=10)
        self.assertIn("Discount", text)
        self.assertTrue(text.endswith("$97.20"), text)


if __name__ == "__main__":
    unittest.main()
