import type { SiteConfig } from "./config.ts";
import { escapeHtml } from "./html.ts";
import type { Page } from "./pages.ts";
import { pagePath } from "./urls.ts";

/** Top-level pages (not blog posts) in the navigation bar, home first. */
export function renderNav(config: SiteConfig, pages: Page[]): string {
  const top = pages.filter((p) => !p.slug.includes("/")).sort((a, b) => a.slug.localeCompare(b.slug));
  const links = top.map((p) => `<a href="${pagePath(config, p.slug)}">${escapeHtml(p.title)}</a>`);
  return `<nav>${links.join(" ")}</nav>`;
}
