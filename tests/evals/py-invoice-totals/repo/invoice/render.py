from .money import format_cents
from .totals import compute_totals


def render(lines, tax_percent, discount_percent=0, width=40) -> str:
    lines = list(lines)
    out = []
    for line in lines:
        label = f"{line.quantity} x {line.description}"
        out.append(f"{label:<{width - 12}}{format_cents(line.amount()):>12}")
    t = compute_totals(lines, tax_percent, discount_percent)
    out.append("-" * width)
    for label, cents in (("Subtotal", t.subtotal), ("Discount", -t.discount), ("Tax", t.tax), ("Total", t.total)):
        if label == "Discount" and not cents:
            continue
        out.append(f"{label:<{width - 12}}{format_cents(cents):>12}")
    return "\n".join(out)
