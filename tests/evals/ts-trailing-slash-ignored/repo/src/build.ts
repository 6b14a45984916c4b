import type { SiteConfig } from "./config.ts";
import { renderFeed } from "./feed.ts";
import { escapeHtml } from "./html.ts";
import { markdownToHtml } from "./markdown.ts";
import { renderNav } from "./nav.ts";
import { toPage, type Source } from "./pages.ts";
import { renderSitemap } from "./sitemap.ts";
import { absoluteUrl } from "./urls.ts";

/** Builds the whole site: output file path -> contents. */
export function build(config: SiteConfig, sources: Source[]): Map<string, string> {
  const pages = sources.map(toPage);
  const nav = renderNav(config, pages);
  const out = new Map<string, string>();
  for (const page of pages) {
    const file = page.slug === "" ? "index.html" : `${page.slug}/index.html`;
    out.set(
      file,
      [
        "<!doctype html>",
        `<title>${escapeHtml(page.title)} - ${escapeHtml(config.title)}</title>`,
        `<link rel="canonical" href="${config.baseUrl}/${page.slug}${page.slug ? "/" : ""}">`,
        nav,
        `<main>${markdownToHtml(page.markdown)}</main>`,
      ].join("\n"),
    );
  }
  out.set("sitemap.xml", renderSitemap(config, pages));
  out.set("feed.xml", renderFeed(config, pages));
  out.set("robots.txt", `User-agent: *\nSitemap: ${absoluteUrl(config, "sitemap.xml").replace(/\/$/, "")}\n`);
  return out;
}
