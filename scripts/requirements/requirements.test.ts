// The requirements manifest against docs/protocol.md and the tests: current, every rule cited, every citation known.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { citations, citedIds, manifestJson, parseRequirements } from "./requirements.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const rules = parseRequirements(await readFile(path.join(root, "docs/protocol.md"), "utf8"));
const cited = await citations(root);

describe("the requirements manifest", () => {
  it("has every rule of docs/protocol.md once, in every section", () => {
    expect(rules.length).toBeGreaterThan(50);
    expect(new Set(rules.map((rule) => rule.id)).size).toBe(rules.length);
    const sections = new Set(rules.map((rule) => rule.section.split(".")[0]));
    expect([...sections].sort()).toEqual(["1", "2", "3", "4", "5", "6", "7", "8"]);
  });

  it("is committed as docs/requirements.json, current (else run `npm run generate`)", async () => {
    expect(await readFile(path.join(root, "docs/requirements.json"), "utf8")).toBe(manifestJson(rules));
  });

  it("has every rule cited by at least one test or conformance scenario", () => {
    expect(rules.filter((rule) => !cited.has(rule.id)).map((rule) => `${rule.section} ${rule.id}`)).toEqual([]);
  });

  it("is the only source of rule ids: every citation names a rule", () => {
    const known = new Set(rules.map((rule) => rule.id));
    const unknown = [...cited].filter(([id]) => !known.has(id)).map(([id, files]) => `${id} (${files.join(", ")})`);
    expect(unknown).toEqual([]);
  });
});

describe("citedIds", () => {
  it.each([
    ["// rule: a.b", ["a.b"]],
    ["// rules: a.b, c-d.e", ["a.b", "c-d.e"]],
    ['{ id: "x", rules: ["a.b", "c.d"], level: "MUST" }', ["a.b", "c.d"]],
    ["// a rule: not a citation", []],
  ])("%s -> %j", (source, ids) => {
    expect(citedIds(source)).toEqual(ids);
  });

  it("reads the first sentence of a rule without Markdown", () => {
    const [rule] = parseRequirements("## 7. Limits\n\n- **[limits.x]** A `tool_id` is short. Longer is a 400.\n");
    expect(rule).toEqual({ id: "limits.x", section: "7", behaviour: "A tool_id is short." });
  });
});
