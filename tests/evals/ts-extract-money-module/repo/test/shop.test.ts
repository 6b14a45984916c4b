import { test } from "node:test";
import assert from "node:assert/strict";
import { Cart } from "../src/cart.ts";
import { quote } from "../src/checkout.ts";
import { confirmationEmail } from "../src/email.ts";
import { receipt } from "../src/receipt.ts";

function cart(): Cart {
  const c = new Cart("GBP");
  c.add({ sku: "TEA", name: "Earl Grey", unitCents: 650, qty: 2 });
  c.add({ sku: "MUG", name: "Mug", unitCents: 1200, qty: 1 });
  return c;
}

test("cart summary", () => {
  assert.equal(cart().summary(), "3 items, £25.00");
});

test("quote adds shipping under the threshold", () => {
  assert.deepEqual(quote(cart()).lines, ["Subtotal: £25.00", "Shipping: £4.95", "Total: £29.95"]);
});

test("receipt", () => {
  const text = receipt(cart(), "A-17");
  assert.match(text, /^2 x Earl Grey +£13\.00$/m);
  assert.ok(text.endsWith("Total: £29.95"));
});

test("confirmation email", () => {
  const email = confirmationEmail(cart(), "A-17", "Sam");
  assert.equal(email.subject, "Your order A-17: Earl Grey, Mug");
  assert.match(email.body, /1 x Mug +£12\.00/);
});
