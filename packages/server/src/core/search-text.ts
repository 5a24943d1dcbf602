/** The text a catalog is searched by (docs/protocol.md 9.5, `[search.ranking]`): its fields and their tokens. */
import { parseToolId, type ToolDefinition } from "@otc/types";

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

export type Field = keyof typeof FIELD_WEIGHTS;
export const FIELDS = Object.keys(FIELD_WEIGHTS) as Field[];

/** How deep parameter names and descriptions are read into a schema's `properties` and `items`. */
const SCHEMA_DEPTH = 4;

/**
 * The tokens of a text (`[search.ranking]`): cut at every character that is not a letter or digit, between a lower-
 * and an upper-case letter, and between letters and digits; folded to lower case without accents.
 * `SendEmail_v2` gives `send`, `email`, `v`, `2`.
 */
export function searchTokens(text: string): string[] {
  // Almost every catalog's text is ASCII, which needs neither normalisation nor Unicode classes: a third of the build.
  const ascii = asciiTokens(text);
  if (ascii !== undefined) {
    return ascii;
  }
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

/**
 * English words too common to tell tools apart (Lucene's English stop set, which Elasticsearch's `_english_` also
 * uses): a query's are not searched for (`[search.ranking]`). In nearly every tool's description, they found most of
 * the catalog and ranked by how often a tool says "a" or "to"; without them the labelled queries of `npm run
 * eval:search` rank better (bench/results/notes.md).
 */
const QUERY_STOPWORDS: ReadonlySet<string> = new Set([
  "a",
  "an",
  "and",
  "are",
  "as",
  "at",
  "be",
  "but",
  "by",
  "for",
  "if",
  "in",
  "into",
  "is",
  "it",
  "no",
  "not",
  "of",
  "on",
  "or",
  "such",
  "that",
  "the",
  "their",
  "then",
  "there",
  "these",
  "they",
  "this",
  "to",
  "was",
  "will",
  "with",
]);

/**
 * The tokens a query is searched by: its {@link searchTokens} but the {@link QUERY_STOPWORDS}, unless it has nothing
 * else (`the` still finds what says "the"). The catalog's text keeps every token: field lengths and BM25's averages
 * do not depend on the list.
 */
export function queryTokens(query: string): string[] {
  const tokens = searchTokens(query);
  const kept = tokens.filter((token) => !QUERY_STOPWORDS.has(token));
  return kept.length > 0 ? kept : tokens;
}

const OTHER = 0;
const LOWER = 1;
const UPPER = 2;
const DIGIT = 3;

function classOf(code: number): number {
  if (code >= 97 && code <= 122) {
    return LOWER;
  }
  if (code >= 65 && code <= 90) {
    return UPPER;
  }
  if (code >= 48 && code <= 57) {
    return DIGIT;
  }
  return OTHER;
}

/** {@link searchTokens} for ASCII text, by the same cuts (a test holds the two to the same tokens); else undefined. */
function asciiTokens(text: string): string[] | undefined {
  const tokens: string[] = [];
  let start = -1;
  let previous = OTHER;
  for (let i = 0; i <= text.length; i++) {
    const code = i < text.length ? text.charCodeAt(i) : 32;
    if (code > 127) {
      return undefined;
    }
    const current = classOf(code);
    if (current === OTHER) {
      if (start !== -1) {
        tokens.push(text.slice(start, i).toLowerCase());
        start = -1;
      }
    } else if (start === -1) {
      start = i;
    } else if (
      (previous === LOWER && current === UPPER) ||
      (previous === UPPER && current === UPPER && i + 1 < text.length && classOf(text.charCodeAt(i + 1)) === LOWER) ||
      (previous !== DIGIT && current === DIGIT) ||
      (previous === DIGIT && current !== DIGIT)
    ) {
      tokens.push(text.slice(start, i).toLowerCase());
      start = i;
    }
    previous = current;
  }
  return tokens;
}

/** The text a definition is searched by, field by field, in {@link FIELDS}' order. */
export function fieldsOf(definition: ToolDefinition, tool: string, toolkit: string): string[] {
  const names: string[] = [];
  const texts: string[] = [];
  collectParameters(definition.input_schema, names, texts, 0);
  // The tool part of the id: the wire `name` (`Gmail_SendEmail`) repeats the toolkit, which has a field of its own.
  return [tool, toolkit, definition.description, names.join(" "), texts.join(" ")];
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

/** A definition's toolkit, tool and `Toolkit.Tool`, from its id (`Toolkit.Tool@1.0.0`). */
export function partsOf(definition: ToolDefinition): { toolkit: string; tool: string; qualified: string } {
  const parsed = parseToolId(definition.id);
  if (!parsed) {
    return { toolkit: "", tool: definition.name, qualified: definition.id };
  }
  return { toolkit: parsed.toolkit, tool: parsed.tool, qualified: parsed.qualifiedName };
}
