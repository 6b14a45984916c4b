import { slugify } from "./slug.ts";

export interface Source {
  /** "index.md", "about.md", "blog/first-post.md" */
  file: string;
  text: string;
}

export interface Page {
  slug: string;
  title: string;
  date?: string;
  markdown: string;
}

export function toPage(source: Source): Page {
  const [, frontmatter, body] = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(source.text) ?? ["", "", source.text];
  const meta = Object.fromEntries(
    frontmatter
      .split("\n")
      .filter((l) => l.includes(":"))
      .map((l) => [l.slice(0, l.indexOf(":")).trim(), l.slice(l.indexOf(":") + 1).trim()]),
  );
  const parts = source.file.replace(/\.md$/, "").split("/");
  const slug = parts.at(-1) === "index" ? parts.slice(0, -1).map(slugify).join("/") : parts.map(slugify).join("/");
  return { slug, title: meta.title ?? parts.at(-1) ?? "", date: meta.date, markdown: body };
}
