// The requirements manifest against docs/protocol.md and the tests: current, every rule cited, every citation known.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { citations, manifestJson, parseRequirements, scenarioCitations, testCitations } from "./requirements.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const rules = parseRequirements(await readFile(path.join(root, "docs/protocol.md"), "utf8"));
const { cited, problems } = await citations(root);

describe("the requirements manifest", () => {
  it("has every rule of docs/protocol.md once, in every section", () => {
    expect(rules.length).toBeGreaterThan(50);
    expect(new Set(rules.map((rule) => rule.id)).size).toBe(rules.length);
    const sections = new Set(rules.map((rule) => rule.section.split(".")[0]));
    expect([...sections].sort()).toEqual(["1", "2", "3", "4", "5", "6", "7", "8", "9"]);
  });

  it("is committed as docs/requirements.json, current (else run `npm run generate`)", async () => {
    expect(await readFile(path.join(root, "docs/requirements.json"), "utf8")).toBe(manifestJson(rules));
  });

  it("has every rule cited by at least one test or conformance scenario", () => {
    expect(rules.filter((rule) => !cited.has(rule.id)).map((rule) => `${rule.section} ${rule.id}`)).toEqual([]);
  });

  it("is the only source of rule ids: every citation names a rule", () => {
    const known = new Set(rules.map((rule) => rule.id));
    const unknown = [...cited].filter(([id]) => !known.has(id)).map(([id, places]) => `${id} (${places.join(", ")})`);
    expect(unknown).toEqual([]);
  });

  it("reads every citation: tests name their rules with verifies(...), no `// rule:` comment is left", () => {
    expect(problems).toEqual([]);
  });
});

describe("testCitations", () => {
  it.each([
    ['verifies("a.b", "does x", () => {});', [{ ids: ["a.b"], line: 1 }]],
    ['verifies(["a.b", "c-d.e"], "does x", () => {}, 1000);', [{ ids: ["a.b", "c-d.e"], line: 1 }]],
    ['verifies("a.b", "does x", { timeout: 1000 }, async () => {});', [{ ids: ["a.b"], line: 1 }]],
    ['verifies.each([[1], [2]])("a.b", "does %i", (n) => {});', [{ ids: ["a.b"], line: 1 }]],
    [
      'verifies.each<[string, () => unknown]>([\n  ["x", () => f(1)],\n])(\n  ["a.b", "c.d"],\n  "does %s",\n  (x) => {},\n);',
      [{ ids: ["a.b", "c.d"], line: 1 }],
    ],
    [
      'describe("x", () => {\n  verifies("a.b", "one", () => {});\n  verifies("c.d", "two", () => {});\n});',
      [
        { ids: ["a.b"], line: 2 },
        { ids: ["c.d"], line: 3 },
      ],
    ],
    ['it("does x", () => {});\nconst text = "verifies(\\"a.b\\")";', []],
  ])("%s -> %j", (source, want) => {
    expect(testCitations(source)).toEqual({ citations: want, problems: [] });
  });

  it("takes no `// rule:` comment any more, naming its line", () => {
    const { citations, problems } = testCitations('it("x", () => {});\n// rules: a.b, c.d\nit("y", () => {});\n');
    expect(citations).toEqual([]);
    expect(problems).toEqual([
      { line: 2, message: expect.stringContaining("`// rule:` comment no longer cites a rule") },
    ]);
  });

  it.each([
    ["an id in a variable", 'const ids = ["a.b"];\nverifies(ids, "does x", () => {});'],
    ["no id", 'verifies([], "does x", () => {});'],
    ["an id built at run time", 'verifies("a" + ".b", "does x", () => {});'],
    ["a row's ids", 'verifies.each([["a.b"]])(id, "does x", () => {});'],
  ])("refuses %s: the check cannot read it", (_case, source) => {
    const { citations, problems } = testCitations(source);
    expect(citations).toEqual([]);
    expect(problems).toEqual([
      {
        line: source.split("\n").length,
        message: expect.stringContaining("not a string or an array of strings written out"),
      },
    ]);
  });
});

describe("scenarioCitations", () => {
  it("reads each scenario's rules field, with its line", () => {
    const source = '[\n  { id: "x", rules: ["a.b", "c.d"], level: "MUST" },\n  { id: "y", rules: ["e.f"] },\n]';
    expect(scenarioCitations(source)).toEqual([
      { ids: ["a.b", "c.d"], line: 2 },
      { ids: ["e.f"], line: 3 },
    ]);
  });
});

describe("parseRequirements", () => {
  it("reads the first sentence of a rule without Markdown", () => {
    const [rule] = parseRequirements("## 7. Limits\n\n- **[limits.x]** A `tool_id` is short. Longer is a 400.\n");
    expect(rule).toEqual({ id: "limits.x", section: "7", behaviour: "A tool_id is short." });
  });
});
