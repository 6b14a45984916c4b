import type { Cart } from "./cart.ts";
import { receipt } from "./receipt.ts";
import { chunk } from "./util.ts";

export interface Email {
  subject: string;
  body: string;
}

export function confirmationEmail(cart: Cart, orderId: string, customer: string): Email {
  const names = cart.lines.map((l) => l.name);
  const listed = chunk(names, 3)[0].join(", ") + (names.length > 3 ? ` and ${names.length - 3} more` : "");
  return {
    subject: `Your order ${orderId}: ${listed}`,
    body: `Hi ${customer},\n\nThanks for your order.\n\n${receipt(cart, orderId)}\n`,
  };
}
