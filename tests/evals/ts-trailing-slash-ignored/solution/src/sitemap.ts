import type { SiteConfig } from "./config.ts";
import type { Page } from "./pages.ts";
import { absoluteUrl } from "./urls.ts";

export function renderSitemap(config: SiteConfig, pages: Page[]): string {
  const urls = pages
    .map((p) => absoluteUrl(config, p.slug))
    .sort()
    .map((loc) => `  <url><loc>${loc}</loc></url>`);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    ...urls,
    "</urlset>",
  ].join("\n");
}
