// The search evaluation's fixtures hold together (a real catalog, labels that name its tools), and no ranker falls below the figures recorded for it.
import { readFileSync } from "node:fs";
import { validateToolDefinition } from "@otc/types";
import { describe, expect, it } from "vitest";
import {
  definitionsOf,
  evaluate,
  type Figures,
  loadCatalog,
  loadQueries,
  QUERY_KINDS,
  RANKERS,
  recallAt,
  reciprocalRank,
} from "../src/eval.js";

const catalog = loadCatalog();
const definitions = definitionsOf(catalog);
const queries = loadQueries();

interface Recorded {
  recallAt1: number;
  recallAt5: number;
  mrr: number;
  recallAt5ByKind: Record<string, number>;
}
const recorded: Record<string, Recorded> = JSON.parse(
  readFileSync(new URL("../fixtures/recorded.json", import.meta.url), "utf8"),
).rankers;

describe("the catalog", () => {
  it("holds at least 500 tools of real MCP servers, each id once", () => {
    expect(definitions.length).toBeGreaterThanOrEqual(500);
    const ids = definitions.map((definition) => definition.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("says for each source its package, version, license, toolkit and what the toolkit is for", () => {
    const toolkits = catalog.sources.map((source) => source.toolkit);
    expect(new Set(toolkits).size).toBe(toolkits.length);
    for (const source of catalog.sources) {
      expect(source.package, JSON.stringify(source.toolkit)).toMatch(/^(@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*$/);
      expect(source.version, source.package).toMatch(/^\d+\.\d+\.\d+/);
      expect(source.license.trim(), source.package).not.toBe("");
      expect(source.toolkit, source.package).toMatch(/^[A-Za-z][A-Za-z0-9_]*$/);
      expect(source.description.trim(), source.package).not.toBe("");
      expect(source.tools.length, source.package).toBeGreaterThan(0);
    }
  });

  it("has OXP ToolDefinitions, each in its source's toolkit", () => {
    for (const source of catalog.sources) {
      for (const definition of source.tools) {
        expect(
          validateToolDefinition(definition),
          `${definition.id}: ${JSON.stringify(validateToolDefinition.errors)}`,
        ).toBe(true);
        expect(definition.id.startsWith(`${source.toolkit}.`), definition.id).toBe(true);
      }
    }
  });
});

describe("the labelled queries", () => {
  const known = new Set(definitions.map((definition) => definition.id));

  it("are at least 200, each once, of every kind", () => {
    expect(queries.length).toBeGreaterThanOrEqual(200);
    const texts = queries.map((query) => query.query.toLowerCase());
    expect(new Set(texts).size).toBe(texts.length);
    for (const kind of QUERY_KINDS) {
      expect(queries.filter((query) => query.kind === kind).length, kind).toBeGreaterThanOrEqual(20);
    }
    expect(queries.every((query) => QUERY_KINDS.includes(query.kind))).toBe(true);
  });

  it("name only tools of the catalog, at least one each, none twice", () => {
    for (const query of queries) {
      expect(query.relevant.length, query.query).toBeGreaterThan(0);
      expect(new Set(query.relevant).size, query.query).toBe(query.relevant.length);
      expect(
        query.relevant.filter((id) => !known.has(id)),
        query.query,
      ).toEqual([]);
    }
  });
});

describe("the measures", () => {
  it("count Recall@k out of as many relevant tools as fit in k, and MRR by the first relevant one", () => {
    expect(recallAt(["a", "b", "c"], ["c", "x"], 1)).toBe(0);
    expect(recallAt(["c", "b"], ["c", "x"], 1)).toBe(1);
    expect(recallAt(["a", "c", "b", "x"], ["c", "x"], 5)).toBe(1);
    expect(recallAt(["a", "c"], ["c", "x", "y", "z", "w", "v"], 5)).toBe(1 / 5);
    expect(reciprocalRank(["a", "b", "c"], ["c"])).toBeCloseTo(1 / 3);
    expect(reciprocalRank(["a"], ["c"])).toBe(0);
  });
});

describe("each ranker", () => {
  it("has recorded figures, and every recorded ranker is measured", () => {
    expect(Object.keys(recorded).sort()).toEqual(RANKERS.map(({ name }) => name).sort());
  });

  // The recorded figures are rounded down: a ranker that does as well as when they were recorded passes.
  const atLeast = (actual: number, floor: number) => actual + 1e-9 >= floor;

  for (const { name, ranker } of RANKERS) {
    it(`${name} does at least as well as recorded`, () => {
      const figures: Figures = evaluate(ranker, definitions, queries);
      const floor = recorded[name] as Recorded;
      const measured = {
        recallAt1: figures.recallAt1,
        recallAt5: figures.recallAt5,
        mrr: figures.mrr,
        ...Object.fromEntries(QUERY_KINDS.map((kind) => [`recallAt5 ${kind}`, figures.byKind[kind].recallAt5])),
      };
      const floors = {
        recallAt1: floor.recallAt1,
        recallAt5: floor.recallAt5,
        mrr: floor.mrr,
        ...Object.fromEntries(QUERY_KINDS.map((kind) => [`recallAt5 ${kind}`, floor.recallAt5ByKind[kind] as number])),
      };
      const below = Object.entries(floors).filter(
        ([figure, value]) => !atLeast(measured[figure as keyof typeof measured] as number, value),
      );
      expect(
        below.map(([figure, value]) => `${figure}: ${measured[figure as keyof typeof measured]} < ${value}`),
      ).toEqual([]);
    });
  }
});
