from dataclasses import dataclass


@dataclass(frozen=True)
class LineItem:
    description: str
    unit_cents: int
    quantity: int = 1

    def amount(self) -> int:
        return self.unit_cents * self.quantity
