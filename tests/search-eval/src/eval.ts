/**
 * A retrieval evaluation of tool search: labelled queries (fixtures/queries.json) against a catalog of real published
 * tools (fixtures/catalog.json), and the rankers measured on them. A ranker is given the catalog once and then answers
 * queries with tool ids, best first; {@link evaluate} scores its answers with Recall@1, Recall@5 and MRR.
 */
import { readFileSync } from "node:fs";
import { ToolSearchIndex } from "@otc/server/core";
import type { ToolDefinition } from "@otc/types";
import MiniSearch from "minisearch";

/** What a labelled query tests: a plain task, a parameter's description, words the tools do not use, a tool's code name, a toolkit's name. */
export type QueryKind = "task" | "parameter" | "synonym" | "identifier" | "toolkit";

/** Every kind, in the order the figures list them. */
export const QUERY_KINDS: readonly QueryKind[] = ["task", "parameter", "synonym", "identifier", "toolkit"];

/** A query in a user's words and the ids of every catalog tool that answers it. */
export interface LabelledQuery {
  query: string;
  kind: QueryKind;
  relevant: string[];
}

/** One published MCP server in the catalog, as scripts/build-catalog.ts listed it. */
export interface CatalogSource {
  /** The npm package. */
  package: string;
  version: string;
  /** As the package's manifest states it. */
  license: string;
  /** The OXP toolkit its tools are in: the prefix of their ids. */
  toolkit: string;
  /** One line on what the toolkit is for. */
  description: string;
  /** MCP tools left out by @otc/mcp, and why. */
  skipped: { name: string; reason: string }[];
  tools: ToolDefinition[];
}

/** fixtures/catalog.json. */
export interface Catalog {
  about: string;
  sources: CatalogSource[];
}

/**
 * A ranker: built once over the catalog's definitions, then asked each query; it answers tool ids, best first (as
 * many as it finds relevant; those past the fifth count only for MRR).
 */
export type Ranker = (catalog: readonly ToolDefinition[]) => (query: string) => string[];

/** A ranker and the name its figures go under. */
export interface NamedRanker {
  name: string;
  ranker: Ranker;
}

/** The figures of one ranker over a set of queries, each a mean over the queries (0 to 1). */
export interface Figures {
  recallAt1: number;
  recallAt5: number;
  mrr: number;
  /** Recall@5 over each kind's queries alone. */
  byKind: Record<QueryKind, { queries: number; recallAt5: number }>;
}

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), "utf8"));

/** fixtures/catalog.json, as written by scripts/build-catalog.ts. */
export const loadCatalog = (): Catalog => fixture("catalog.json") as Catalog;

/** fixtures/queries.json's queries. */
export const loadQueries = (): LabelledQuery[] => (fixture("queries.json") as { queries: LabelledQuery[] }).queries;

/** Every tool definition of the catalog, in the order its sources list them. */
export const definitionsOf = (catalog: Catalog): ToolDefinition[] => catalog.sources.flatMap((source) => source.tools);

/**
 * The share of the relevant ids found in the first `k` answers, out of as many as could be found there: with three
 * relevant tools, Recall@1 is 1 when the first answer is any of them, and Recall@5 is 1 when all three are in the
 * first five. (Plain recall, out of all relevant ids, could never reach 1 at k = 1 for a query with several.)
 */
export function recallAt(ranked: readonly string[], relevant: readonly string[], k: number): number {
  const wanted = new Set(relevant);
  const found = ranked.slice(0, k).filter((id) => wanted.has(id)).length;
  return found / Math.min(k, wanted.size);
}

/** 1 / the rank of the first relevant answer, or 0 when none is relevant. */
export function reciprocalRank(ranked: readonly string[], relevant: readonly string[]): number {
  const wanted = new Set(relevant);
  const index = ranked.findIndex((id) => wanted.has(id));
  return index === -1 ? 0 : 1 / (index + 1);
}

const mean = (values: readonly number[]) =>
  values.length === 0 ? 0 : values.reduce((sum, value) => sum + value, 0) / values.length;

/** The ranker's figures: built once over `catalog`, asked every query. */
export function evaluate(
  ranker: Ranker,
  catalog: readonly ToolDefinition[],
  queries: readonly LabelledQuery[],
): Figures {
  const search = ranker(catalog);
  const scored = queries.map((query) => {
    const ranked = search(query.query);
    return {
      kind: query.kind,
      r1: recallAt(ranked, query.relevant, 1),
      r5: recallAt(ranked, query.relevant, 5),
      rr: reciprocalRank(ranked, query.relevant),
    };
  });
  const byKind = Object.fromEntries(
    QUERY_KINDS.map((kind) => {
      const ofKind = scored.filter((score) => score.kind === kind);
      return [kind, { queries: ofKind.length, recallAt5: mean(ofKind.map((score) => score.r5)) }];
    }),
  ) as Figures["byKind"];
  return {
    recallAt1: mean(scored.map((score) => score.r1)),
    recallAt5: mean(scored.map((score) => score.r5)),
    mrr: mean(scored.map((score) => score.rr)),
    byKind,
  };
}

/** Lowercase words: the text split at every character that is not a letter or a digit. */
export const tokenize = (text: string): string[] =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);

/**
 * Baseline `description-bm25`: Okapi BM25 (k1 = 1.2, b = 0.75) over each tool's description alone, tokenized by
 * {@link tokenize}; no stemming, no stop words, no field but the description. Ties keep the catalog's order.
 */
export const descriptionBm25: Ranker = (catalog) => {
  const k1 = 1.2;
  const b = 0.75;
  const docs = catalog.map((definition) => {
    const terms = new Map<string, number>();
    const tokens = tokenize(definition.description);
    for (const token of tokens) {
      terms.set(token, (terms.get(token) ?? 0) + 1);
    }
    return { id: definition.id, terms, length: tokens.length };
  });
  const averageLength = mean(docs.map((doc) => doc.length)) || 1;
  const documentFrequency = new Map<string, number>();
  for (const doc of docs) {
    for (const term of doc.terms.keys()) {
      documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1);
    }
  }
  const idf = (term: string) => {
    const df = documentFrequency.get(term) ?? 0;
    return Math.log(1 + (docs.length - df + 0.5) / (df + 0.5));
  };
  return (query) => {
    const terms = [...new Set(tokenize(query))].filter((term) => documentFrequency.has(term));
    const scored = docs.map((doc) => {
      let score = 0;
      for (const term of terms) {
        const tf = doc.terms.get(term) ?? 0;
        if (tf > 0) {
          score += (idf(term) * tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * doc.length) / averageLength));
        }
      }
      return { id: doc.id, score };
    });
    return scored
      .filter((doc) => doc.score > 0)
      .sort((x, y) => y.score - x.score)
      .map((doc) => doc.id);
  };
};

/**
 * Baseline `library-defaults`: MiniSearch 7.2.0 as it comes, over the fields `name` and `description` (its default
 * tokenizer, term processing and search options: no prefix or fuzzy match, no boost).
 */
export const libraryDefaults: Ranker = (catalog) => {
  const index = new MiniSearch<ToolDefinition>({ fields: ["name", "description"] });
  index.addAll(catalog);
  return (query) => index.search(query).map((result) => String(result.id));
};

/**
 * ==== The third ranker, `ours` ====
 * @otc/server/core's ToolSearchIndex (docs/protocol.md 9.5), the ranking GET /tools?q= serves: built once over the
 * definitions, each query's matches best first. Under vitest the core is read from its sources; under
 * `npm run eval:search` (plain tsx) from its build, so rebuild @otc/server after changing it.
 */
export const ours: Ranker = (catalog) => {
  const index = new ToolSearchIndex(catalog);
  return (query) => index.search(query).map((match) => match.definition.id);
};

/** The rankers measured: the two baselines and ours. */
export const RANKERS: readonly NamedRanker[] = [
  { name: "description-bm25", ranker: descriptionBm25 },
  { name: "library-defaults", ranker: libraryDefaults },
  { name: "ours", ranker: ours },
];

/** A figure rounded down to 3 decimals, as fixtures/recorded.json keeps them. */
export const floor3 = (value: number): number => Math.floor(value * 1000 + 1e-9) / 1000;
