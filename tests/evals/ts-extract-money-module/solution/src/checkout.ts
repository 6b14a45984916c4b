import type { Cart } from "./cart.ts";
import { formatMoney } from "./money.ts";

export interface Quote {
  subtotalCents: number;
  shippingCents: number;
  totalCents: number;
  lines: string[];
}

const FREE_SHIPPING_FROM = 5000;
const SHIPPING = 495;

export function quote(cart: Cart): Quote {
  const subtotalCents = cart.totalCents();
  const shippingCents = subtotalCents >= FREE_SHIPPING_FROM || subtotalCents === 0 ? 0 : SHIPPING;
  const totalCents = subtotalCents + shippingCents;
  const money = (cents: number) => formatMoney(cents, cart.currency);
  return {
    subtotalCents,
    shippingCents,
    totalCents,
    lines: [
      `Subtotal: ${money(subtotalCents)}`,
      `Shipping: ${shippingCents ? money(shippingCents) : "free"}`,
      `Total: ${money(totalCents)}`,
    ],
  };
}
