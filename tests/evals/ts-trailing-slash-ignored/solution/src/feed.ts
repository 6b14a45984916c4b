import type { SiteConfig } from "./config.ts";
import { escapeHtml } from "./html.ts";
import type { Page } from "./pages.ts";
import { absoluteUrl } from "./urls.ts";

/** RSS 2.0 for the blog posts (pages under blog/ with a date), newest first. */
export function renderFeed(config: SiteConfig, pages: Page[]): string {
  const posts = pages
    .filter((p) => p.slug.startsWith("blog/") && p.date)
    .sort((a, b) => (b.date ?? "").localeCompare(a.date ?? ""));
  const items = posts.map((p) => {
    const link = absoluteUrl(config, p.slug);
    return [
      "    <item>",
      `      <title>${escapeHtml(p.title)}</title>`,
      `      <link>${link}</link>`,
      `      <guid>${link}</guid>`,
      `      <pubDate>${new Date(`${p.date}T00:00:00Z`).toUTCString()}</pubDate>`,
      "    </item>",
    ].join("\n");
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<rss version="2.0"><channel>',
    `    <title>${escapeHtml(config.title)}</title>`,
    `    <link>${absoluteUrl(config, "")}</link>`,
    ...items,
    "</channel></rss>",
  ].join("\n");
}
