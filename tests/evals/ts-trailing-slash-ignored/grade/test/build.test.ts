import { test } from "node:test";
import assert from "node:assert/strict";
import { build } from "../src/build.ts";
import { loadConfig } from "../src/config.ts";

const SOURCES = [
  { file: "index.md", text: "---\ntitle: Home\n---\n# Welcome\n\nSee [about](/about/)." },
  { file: "about.md", text: "---\ntitle: About us\n---\nWe make things." },
  { file: "blog/index.md", text: "---\ntitle: Blog\n---\nPosts." },
  { file: "blog/first-post.md", text: "---\ntitle: First post\ndate: 2024-03-01\n---\nHello." },
  { file: "blog/second-post.md", text: "---\ntitle: Second <post>\ndate: 2024-04-15\n---\nAgain." },
];

test("builds every page and the extras", () => {
  const site = build(loadConfig('{"title": "Ex", "baseUrl": "https://example.org"}'), SOURCES);
  assert.deepEqual([...site.keys()].sort(), [
    "about/index.html",
    "blog/first-post/index.html",
    "blog/index.html",
    "blog/second-post/index.html",
    "feed.xml",
    "index.html",
    "robots.txt",
    "sitemap.xml",
  ]);
  const home = site.get("index.html") ?? "";
  assert.match(home, /<nav><a href="\/">Home<\/a> <a href="\/about\/">About us<\/a> <a href="\/blog\/">Blog<\/a><\/nav>/);
  assert.match(site.get("sitemap.xml") ?? "", /<loc>https:\/\/example.org\/blog\/first-post\/<\/loc>/);
  assert.match(site.get("feed.xml") ?? "", /<title>Second &lt;post&gt;<\/title>/);
  assert.equal(site.get("robots.txt"), "User-agent: *\nSitemap: https://example.org/sitemap.xml\n");
});
