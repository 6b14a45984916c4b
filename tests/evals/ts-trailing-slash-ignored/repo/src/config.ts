export interface SiteConfig {
  title: string;
  /** Absolute origin, no trailing slash: "https://example.org". */
  baseUrl: string;
  /** Whether page URLs end with "/" ("/about/") or not ("/about"). The home page is always "/". */
  trailingSlash: boolean;
}

export function loadConfig(json: string): SiteConfig {
  const raw = JSON.parse(json) as Partial<SiteConfig>;
  if (!raw.title || !raw.baseUrl) {
    throw new Error("site.json needs title and baseUrl");
  }
  return {
    title: raw.title,
    baseUrl: raw.baseUrl.replace(/\/+$/, ""),
    trailingSlash: raw.trailingSlash ?? true,
  };
}
