const SYMBOLS: { [code: string]: string } = { USD: "$", EUR: "€", GBP: "£" };

/** Formats integer cents as money: formatMoney(123456, "EUR") -> "€1,234.56". */
export function formatMoney(cents: number, currency = "USD"): string {
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(Math.round(cents));
  const whole = Math.floor(abs / 100).toLocaleString("en-US");
  const frac = String(abs % 100).padStart(2, "0");
  return `${sign}${SYMBOLS[currency] ?? currency + " "}${whole}.${frac}`;
}
