// Checks that every JSON example of the upstream OXP documentation pages (kept in spec/upstream) stands in spec/examples.
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadExamples, specDir } from "../index.js";

/** The upstream pages' JSON examples by page, extracted once and committed with their source and licence. */
const upstream = JSON.parse(readFileSync(path.join(specDir, "upstream/oxp-docs-examples.json"), "utf8")) as {
  pages: Record<string, unknown[]>;
};

describe("upstream examples", () => {
  const pages = Object.keys(upstream.pages).sort();
  const ours = loadExamples();

  it("were found in the reference pages", () => {
    const total = pages.reduce((sum, page) => sum + (upstream.pages[page]?.length ?? 0), 0);
    expect(total).toBeGreaterThan(30);
  });

  it.each(pages)("every JSON example of %s is in spec/examples", (page) => {
    const missing = (upstream.pages[page] ?? []).filter(
      (block) => !ours.some((example) => JSON.stringify(sortKeys(example.body)) === JSON.stringify(sortKeys(block))),
    );
    expect(missing).toEqual([]);
  });
});

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(sortKeys);
  }
  if (value === null || typeof value !== "object") {
    return value;
  }
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, item]) => [key, sortKeys(item)]),
  );
}
