// Checks that every JSON example of the newest upstream pages (../shared/reference/oxp-docs) stands in spec/examples.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadExamples, specDir } from "../index.js";

const docsDir = path.resolve(specDir, "../../shared/reference/oxp-docs");

/** The JSON bodies of a page's ```json blocks and of the bodies of its ```http blocks. */
function jsonBlocks(markdown: string): unknown[] {
  const bodies: unknown[] = [];
  for (const [, lang, text = ""] of markdown.matchAll(/```(json|http)\n([\s\S]*?)```/g)) {
    const body =
      lang === "http"
        ? text
            .split(/\n\s*\n/)
            .slice(1)
            .join("\n\n")
        : text;
    if (body.trim().startsWith("{")) bodies.push(JSON.parse(body));
  }
  return bodies;
}

describe("upstream examples", () => {
  const pages = readdirSync(docsDir)
    .filter((file) => file.endsWith(".md"))
    .sort();
  const ours = loadExamples();

  it("were found in the reference pages", () => {
    const total = pages.reduce(
      (sum, page) => sum + jsonBlocks(readFileSync(path.join(docsDir, page), "utf8")).length,
      0,
    );
    expect(total).toBeGreaterThan(30);
  });

  it.each(pages)("every JSON example of %s is in spec/examples", (page) => {
    const missing = jsonBlocks(readFileSync(path.join(docsDir, page), "utf8")).filter(
      (block) => !ours.some((example) => JSON.stringify(sortKeys(example.body)) === JSON.stringify(sortKeys(block))),
    );
    expect(missing).toEqual([]);
  });
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, item]) => [key, sortKeys(item)]),
  );
}
