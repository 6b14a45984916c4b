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
  let row: Row = [];
  let field = "";
  let quoted = false;
  let i = 0;
  const endRow = () => {
    row.push(field);
    rows.push(row);
    row = [];
    field = "";
  };
  while (i < text.length) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else {
        field += c;
      }
      i += 1;
    } else if (c === '"') {
      quoted = true;
      i += 1;
    } else if (text.startsWith(delimiter, i)) {
      row.push(field);
      field = "";
      i += delimiter.length;
    } else if (c === "\n" || (c === "\r" && text[i + 1] === "\n")) {
      endRow();
      i += c === "\r" ? 2 : 1;
    } else {
      field += c;
      i += 1;
    }
  }
  if (field !== "" || row.length > 0 || quoted) {
    endRow();
  }
  return rows;
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
