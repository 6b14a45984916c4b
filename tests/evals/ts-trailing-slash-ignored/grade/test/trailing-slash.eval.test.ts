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

const off = loadConfig('{"title": "Ex", "baseUrl": "https://example.org", "trailingSlash": false}');
const on = loadConfig('{"title": "Ex", "baseUrl": "https://example.org"}');

function pageUrls(text: string): string[] {
  return [...text.matchAll(/https:\/\/example\.org\/[^<"\s]+/g)].map((m) => m[0]);
}

test("sitemap without trailing slashes", () => {
  const sitemap = build(off, SOURCES).get("sitemap.xml") ?? "";
  const locs = [...sitemap.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]);
  assert.deepEqual(locs, [
    "https://example.org/",
    "https://example.org/about",
    "https://example.org/blog",
    "https://example.org/blog/first-post",
    "https://example.org/blog/second-post",
  ]);
});

test("feed without trailing slashes", () => {
  const feed = build(off, SOURCES).get("feed.xml") ?? "";
  assert.match(feed, /<link>https:\/\/example\.org\/blog\/second-post<\/link>/);
  assert.match(feed, /<guid>https:\/\/example\.org\/blog\/first-post<\/guid>/);
  assert.match(feed, /<link>https:\/\/example\.org\/<\/link>/);
});

test("canonical links without trailing slashes", () => {
  const site = build(off, SOURCES);
  assert.match(site.get("about/index.html") ?? "", /<link rel="canonical" href="https:\/\/example\.org\/about">/);
  assert.match(site.get("index.html") ?? "", /<link rel="canonical" href="https:\/\/example\.org\/">/);
});

test("no generated page URL ends with a slash except the home page", () => {
  for (const [file, text] of build(off, SOURCES)) {
    for (const url of pageUrls(text)) {
      assert.ok(!url.endsWith("/"), `${file}: ${url}`);
    }
  }
  const nav = build(off, SOURCES).get("index.html") ?? "";
  assert.match(nav, /<a href="\/about">About us<\/a> <a href="\/blog">Blog<\/a>/);
});

test("trailing slashes still there when on", () => {
  const site = build(on, SOURCES);
  assert.match(site.get("feed.xml") ?? "", /<link>https:\/\/example\.org\/blog\/first-post\/<\/link>/);
  assert.match(site.get("about/index.html") ?? "", /href="https:\/\/example\.org\/about\/"/);
  assert.match(site.get("sitemap.xml") ?? "", /<loc>https:\/\/example\.org\/blog\/<\/loc>/);
  assert.equal(site.get("robots.txt"), "User-agent: *\nSitemap: https://example.org/sitemap.xml\n");
});
