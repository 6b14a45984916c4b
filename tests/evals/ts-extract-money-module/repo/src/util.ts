export function clamp(n: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, n));
}

export function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) {
    out.push(items.slice(i, i + size));
  }
  return out;
}

/** Formats integer cents as money: fmtPrice(123456, "EUR") -> "€1,234.56". */
export function fmtPrice(cents: number, currency = "USD"): string {
  const symbols: { [code: string]: string } = { USD: "$", EUR: "€", GBP: "£" };
  const sign = cents < 0 ? "-" : "";
  const abs = Math.abs(Math.round(cents));
  const whole = Math.floor(abs / 100).toLocaleString("en-US");
  const frac = String(abs % 100).padStart(2, "0");
  return `${sign}${symbols[currency] ?? currency + " "}${whole}.${frac}`;
}
