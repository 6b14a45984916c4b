import type { SiteConfig } from "./config.ts";

/** The site-relative path of a page: "" is the home page, "blog/hello" a nested page. */
export function pagePath(config: SiteConfig, slug: string): string {
  if (slug === "") {
    return "/";
  }
  return `/${slug}${config.trailingSlash ? "/" : ""}`;
}

export function absoluteUrl(config: SiteConfig, slug: string): string {
  return config.baseUrl + pagePath(config, slug);
}
