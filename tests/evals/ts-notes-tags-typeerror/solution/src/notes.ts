import { parseFrontmatter } from "./frontmatter.ts";
import { normalizeTag } from "./tags.ts";

export interface Note {
  path: string;
  title: string;
  tags: string[];
}

export function readNote(path: string, text: string): Note {
  const { meta, body } = parseFrontmatter(text);
  const heading = body.split("\n").find((l) => l.startsWith("# "));
  const title = meta.title || heading?.slice(2).trim() || path.replace(/\.md$/, "");
  return { path, title, tags: tagsOf(meta) };
}

/** The tags from a `tags: a, b, c` front matter line. */
export function tagsOf(meta: { [key: string]: string }): string[] {
  return (meta.tags ?? "")
    .split(",")
    .map(normalizeTag)
    .filter((tag) => tag !== "");
}
