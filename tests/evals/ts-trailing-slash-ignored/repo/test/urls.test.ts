import { test } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../src/config.ts";
import { absoluteUrl, pagePath } from "../src/urls.ts";

test("config defaults to trailing slashes", () => {
  const config = loadConfig('{"title": "T", "baseUrl": "https://example.org/"}');
  assert.equal(config.baseUrl, "https://example.org");
  assert.equal(config.trailingSlash, true);
});

test("page paths follow trailingSlash", () => {
  const on = loadConfig('{"title": "T", "baseUrl": "https://example.org"}');
  const off = loadConfig('{"title": "T", "baseUrl": "https://example.org", "trailingSlash": false}');
  assert.equal(pagePath(on, "about"), "/about/");
  assert.equal(pagePath(off, "about"), "/about");
  assert.equal(pagePath(off, ""), "/");
  assert.equal(absoluteUrl(off, "blog/hello"), "https://example.org/blog/hello");
});
