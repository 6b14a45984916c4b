import type { Cart } from "./cart.ts";
import { quote } from "./checkout.ts";
import { formatMoney } from "./money.ts";

/** A plain-text receipt, 32 columns wide. */
export function receipt(cart: Cart, orderId: string): string {
  const out = [`Order ${orderId}`, "-".repeat(32)];
  for (const line of cart.lines) {
    const price = formatMoney(line.unitCents * line.qty, cart.currency);
    out.push(`${line.qty} x ${line.name}`.padEnd(32 - price.length) + price);
  }
  out.push("-".repeat(32), ...quote(cart).lines);
  return out.join("\n");
}
