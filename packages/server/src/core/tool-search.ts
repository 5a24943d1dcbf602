/** Ranked search over a catalog's definitions (docs/protocol.md 9.5, `[search.ranking]`), on MiniSearch's BM25 index. */
import { parseToolId, type ToolDefinition } from "@otc/types";
import MiniSearch from "minisearch";

/** One match: the definition and its score (higher is better; comparable within one search only). */
export interface ToolMatch {
  readonly definition: ToolDefinition;
  readonly score: number;
}

/** What a search may narrow to. */
export interface ToolSearchOptions {
  /** Only the tools of this toolkit (the part of the id before the dot, exactly). */
  toolkit?: string;
}

/** The most terms a query may have (`[search.bounds]`). */
export const MAX_QUERY_TERMS = 32;
/** The longest query, in characters once trimmed. */
export const MAX_QUERY_LENGTH = 256;

/**
 * How much a match in each field counts (`[search.ranking]`): the tool's own name above its toolkit, above the
 * description, above parameter names, above what parameters say of themselves. Set by that order, not tuned to
 * the labelled queries of `npm run eval:search` (tests/search-eval), which measure them.
 */
export const FIELD_WEIGHTS = {
  name: 5,
  toolkit: 3,
  description: 2,
  parameters: 1.5,
  parameterText: 1,
} as const;

type Field = keyof typeof FIELD_WEIGHTS;
const FIELDS = Object.keys(FIELD_WEIGHTS) as Field[];

/** A prefix match counts this much of an equal one (`email` finding `emails`). */
const PREFIX_WEIGHT = 0.3;
/** Scores are rounded to this many decimals before ties are ordered by id: the same bytes on every runtime. */
const SCORE_DECIMALS = 4;
/** How deep parameter names and descriptions are read into a schema's `properties` and `items`. */
const SCHEMA_DEPTH = 4;

/**
 * The tokens of a text (`[search.ranking]`): cut at every character that is not a letter or digit, between a lower-
 * and an upper-case letter, and between letters and digits; folded to lower case without accents.
 * `SendEmail_v2` gives `send`, `email`, `v`, `2`.
 */
export function searchTokens(text: string): string[] {
  const tokens: string[] = [];
  for (const word of text.normalize("NFKD").split(/[^\p{L}\p{N}\p{M}]+/u)) {
    if (word === "") {
      continue;
    }
    for (const part of word.split(
      /(?<=\p{Ll})(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})|(?<=\p{L})(?=\p{N})|(?<=\p{N})(?=\p{L})/u,
    )) {
      const folded = part.replace(/\p{M}+/gu, "").toLowerCase();
      if (folded !== "") {
        tokens.push(folded);
      }
    }
  }
  return tokens;
}

/** The text a definition is searched by, field by field. */
function documentOf(definition: ToolDefinition, index: number): Record<Field, string> & { index: number } {
  const names: string[] = [];
  const texts: string[] = [];
  collectParameters(definition.input_schema, names, texts, 0);
  const { toolkit, tool } = partsOf(definition);
  return {
    index,
    // The tool part of the id: the wire `name` (`Gmail_SendEmail`) repeats the toolkit, which has a field of its own.
    name: tool,
    toolkit,
    description: definition.description,
    parameters: names.join(" "),
    parameterText: texts.join(" "),
  };
}

/** Parameter names, descriptions and enum values of a schema's properties, nested ones too, to a bounded depth. */
function collectParameters(schema: unknown, names: string[], texts: string[], depth: number): void {
  if (depth >= SCHEMA_DEPTH || typeof schema !== "object" || schema === null) {
    return;
  }
  const { properties, items } = schema as { properties?: unknown; items?: unknown };
  if (typeof properties === "object" && properties !== null) {
    for (const [name, property] of Object.entries(properties)) {
      names.push(name);
      if (typeof property === "object" && property !== null) {
        const { description, enum: values } = property as { description?: unknown; enum?: unknown };
        if (typeof description === "string") {
          texts.push(description);
        }
        if (Array.isArray(values)) {
          texts.push(...values.filter((value): value is string => typeof value === "string"));
        }
        collectParameters(property, names, texts, depth + 1);
      }
    }
  }
  if (typeof items === "object" && items !== null) {
    collectParameters(items, names, texts, depth + 1);
  }
}

/** A definition's toolkit and tool, from its id (`Toolkit.Tool@1.0.0`). */
function partsOf(definition: ToolDefinition): { toolkit: string; tool: string; qualified: string } {
  const parsed = parseToolId(definition.id);
  if (!parsed) {
    return { toolkit: "", tool: definition.name, qualified: definition.id };
  }
  return { toolkit: parsed.toolkit, tool: parsed.tool, qualified: parsed.qualifiedName };
}

/** The spellings of a tool a query may equal to rank it first (`[search.exact-first]`), folded to lower case. */
function exactNames(definition: ToolDefinition): string[] {
  const { tool, qualified } = partsOf(definition);
  return [definition.id, qualified, definition.name, tool].map((name) => name.toLowerCase());
}

/**
 * A catalog's search index, built once (docs/protocol.md 9.5): field-weighted BM25 over name, toolkit, description,
 * parameter names and parameter texts; exact names first; a deprecated version below the same tool's others;
 * ties by id. No pattern a client sends is ever run: queries are cut into terms and looked up.
 *
 * @example
 * const index = new ToolSearchIndex(core.registry.list({ annotations: true }));
 * index.search("send an email", { toolkit: "Gmail" }); // [{ definition, score }, ...]
 */
export class ToolSearchIndex {
  private readonly definitions: readonly ToolDefinition[];
  private readonly engine: MiniSearch<Record<Field, string> & { index: number }>;
  private readonly exact = new Map<string, number[]>();
  /** The deprecated versions, each with its tool's versions that are not: a search visits these, not every match. */
  private readonly deprecated: { index: number; current: number[] }[] = [];

  constructor(definitions: readonly ToolDefinition[]) {
    this.definitions = definitions;
    this.engine = new MiniSearch({
      idField: "index",
      fields: FIELDS,
      tokenize: searchTokens,
      processTerm: (term) => term,
      searchOptions: {
        boost: { ...FIELD_WEIGHTS },
        prefix: true,
        fuzzy: false,
        combineWith: "OR",
        weights: { prefix: PREFIX_WEIGHT, fuzzy: 0 },
      },
    });
    this.engine.addAll(definitions.map(documentOf));
    const current = new Map<string, number[]>();
    definitions.forEach((definition, index) => {
      for (const name of new Set(exactNames(definition))) {
        this.exact.set(name, [...(this.exact.get(name) ?? []), index]);
      }
      if (definition.deprecation_message === undefined) {
        const tool = toolOf(definition);
        current.set(tool, [...(current.get(tool) ?? []), index]);
      }
    });
    definitions.forEach((definition, index) => {
      if (definition.deprecation_message !== undefined) {
        this.deprecated.push({ index, current: current.get(toolOf(definition)) ?? [] });
      }
    });
  }

  /** The definitions that match at least one term of `query`, best first. */
  search(query: string, options: ToolSearchOptions = {}): ToolMatch[] {
    const prefix = options.toolkit === undefined ? undefined : `${options.toolkit}.`;
    const keep = (index: number) =>
      prefix === undefined || (this.definitions[index] as ToolDefinition).id.startsWith(prefix);
    const scores = new Map<number, number>();
    for (const result of this.engine.search(query)) {
      const index = result.id as number;
      if (keep(index)) {
        scores.set(index, round(result.score));
      }
    }
    this.demoteDeprecated(scores);
    // An exact name ranks first: above the best score any other match has. After the deprecated versions are put
    // below their tools' others, so that a query naming a deprecated version exactly still finds it first.
    const named = (this.exact.get(query.trim().toLowerCase()) ?? []).filter(keep);
    if (named.length > 0) {
      const top = Math.max(1, ...scores.values());
      for (const index of named) {
        scores.set(index, round(top + 1 + (scores.get(index) ?? 0)));
      }
    }
    const matches = [...scores].map(([index, score]) => ({
      definition: this.definitions[index] as ToolDefinition,
      score,
    }));
    return sortMatches(matches);
  }

  /** A deprecated version scores below every version of the same tool that is not deprecated (`[search.deprecated]`). */
  private demoteDeprecated(scores: Map<number, number>): void {
    for (const { index, current } of this.deprecated) {
      const score = scores.get(index);
      if (score === undefined) {
        continue;
      }
      let floor = Number.POSITIVE_INFINITY;
      for (const version of current) {
        floor = Math.min(floor, scores.get(version) ?? Number.POSITIVE_INFINITY);
      }
      if (floor !== Number.POSITIVE_INFINITY && score >= floor) {
        scores.set(index, round(floor / 2));
      }
    }
  }
}

/** Best first; equal scores by id (`[search.deterministic]`). */
function sortMatches(matches: ToolMatch[]): ToolMatch[] {
  return matches.sort((a, b) =>
    b.score !== a.score
      ? b.score - a.score
      : a.definition.id < b.definition.id
        ? -1
        : a.definition.id > b.definition.id
          ? 1
          : 0,
  );
}

/** `Toolkit.Tool` of a definition: its id without the version. */
function toolOf(definition: ToolDefinition): string {
  const at = definition.id.lastIndexOf("@");
  return at === -1 ? definition.id : definition.id.slice(0, at);
}

/** A score rounded so that runtimes whose last bits of floating point differ give the same bytes, never 0. */
function round(score: number): number {
  const factor = 10 ** SCORE_DECIMALS;
  return Math.max(1 / factor, Math.round(score * factor) / factor);
}
