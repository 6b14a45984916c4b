import { parseCsv, type Row } from "./csv.ts";

export type Record = { [column: string]: string };

/** Turns rows into objects keyed by the header row. Missing trailing fields become "". */
export function toRecords(rows: Row[]): Record[] {
  const [header, ...body] = rows;
  if (!header) {
    return [];
  }
  return body.map((row) => Object.fromEntries(header.map((name, i) => [name, row[i] ?? ""])));
}

export function readTable(text: string, delimiter = ","): Record[] {
  return toRecords(parseCsv(text, { delimiter }));
}

/** Sums a numeric column, ignoring blank cells. */
export function sumColumn(records: Record[], column: string): number {
  return records.reduce((total, r) => (r[column]?.trim() ? total + Number(r[column]) : total), 0);
}
