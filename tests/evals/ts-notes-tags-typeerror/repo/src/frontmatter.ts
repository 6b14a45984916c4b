export interface Parsed {
  meta: { [key: string]: string };
  body: string;
}

/**
 * Splits a note into its front matter (`key: value` lines between `---` fences at the very
 * top) and its body. A note without front matter has empty meta.
 */
export function parseFrontmatter(text: string): Parsed {
  const lines = text.split(/\r?\n/);
  if (lines[0] !== "---") {
    return { meta: {}, body: text };
  }
  const end = lines.indexOf("---", 1);
  if (end < 0) {
    return { meta: {}, body: text };
  }
  const meta: { [key: string]: string } = {};
  for (const line of lines.slice(1, end)) {
    const colon = line.indexOf(":");
    if (colon > 0) {
      meta[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
  }
  return { meta, body: lines.slice(end + 1).join("\n") };
}
