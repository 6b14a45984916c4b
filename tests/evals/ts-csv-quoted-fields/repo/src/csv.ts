export type Row = string[];

export interface ParseOptions {
  delimiter?: string;
}

/**
 * Parses CSV text into rows of fields (RFC 4180): fields may be quoted with `"`, a quoted
 * field may contain the delimiter, line breaks and doubled quotes (`""` stands for `"`).
 * Lines end with `\n` or `\r\n`; a final line break does not start an empty row.
 */
export function parseCsv(text: string, options: ParseOptions = {}): Row[] {
  const delimiter = options.delimiter ?? ",";
  const rows: Row[] = [];
  const lines = text.split(/\r?\n/);
  if (lines.length > 0 && lines[lines.length - 1] === "") {
    lines.pop();
  }
  for (const line of lines) {
    rows.push(line.split(delimiter).map(unquote));
  }
  return rows;
}

function unquote(field: string): string {
  if (field.length >= 2 && field.startsWith('"') && field.endsWith('"')) {
    return field.slice(1, -1);
  }
  return field;
}

/** Formats rows as CSV, quoting only the fields that need it. */
export function stringifyCsv(rows: Row[], options: ParseOptions = {}): string {
  const delimiter = options.delimiter ?? ",";
  return rows
    .map((row) =>
      row
        .map((field) =>
          /["\r\n]/.test(field) || field.includes(delimiter) ? `"${field.replaceAll('"', '""')}"` : field,
        )
        .join(delimiter),
    )
    .join("\r\n") + (rows.length ? "\r\n" : "");
}
