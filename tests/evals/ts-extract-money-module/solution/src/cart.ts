import { formatMoney } from "./money.ts";
import { clamp } from "./util.ts";

export interface CartLine {
  sku: string;
  name: string;
  unitCents: number;
  qty: number;
}

export class Cart {
  lines: CartLine[] = [];
  currency: string;

  constructor(currency = "USD") {
    this.currency = currency;
  }

  add(line: CartLine): void {
    const existing = this.lines.find((l) => l.sku === line.sku);
    if (existing) {
      existing.qty = clamp(existing.qty + line.qty, 0, 99);
    } else {
      this.lines.push({ ...line, qty: clamp(line.qty, 0, 99) });
    }
  }

  totalCents(): number {
    return this.lines.reduce((sum, l) => sum + l.unitCents * l.qty, 0);
  }

  summary(): string {
    const count = this.lines.reduce((n, l) => n + l.qty, 0);
    return `${count} item${count === 1 ? "" : "s"}, ${formatMoney(this.totalCents(), this.currency)}`;
  }
}
