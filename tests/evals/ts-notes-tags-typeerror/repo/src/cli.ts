#!/usr/bin/env node
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { buildIndex, renderIndex } from "./index.ts";

function main(dir: string): void {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => ({ path: name, text: readFileSync(join(dir, name), "utf8") }));
  console.log(renderIndex(buildIndex(files)));
}

main(process.argv[2] ?? ".");
