/** A search index's build (docs/protocol.md 9.5, `[search.ranking]`): each term's BM25 impact on each tool, once. */
import type { ToolDefinition } from "@otc/types";
import { FIELD_WEIGHTS, FIELDS, fieldsOf, partsOf, searchTokens } from "./search-text.js";

const BOOSTS = FIELDS.map((field) => FIELD_WEIGHTS[field]);

/** A prefix match counts this much of an equal one (`email` finding `emails`), less the longer the rest of the word. */
const PREFIX_WEIGHT = 0.3;
/** BM25's parameters: term-frequency saturation, length normalisation, and a floor for any match. */
const BM25 = { k: 1.2, b: 0.7, d: 0.5 } as const;

/**
 * A query term that finds at least this share of the catalog (and at least {@link HEAVY_MIN_TOOLS} tools) has its
 * impacts summed at build, by tool: `a` or `to` would otherwise walk most of the catalog per query, and a page's best
 * matches are found among the rarer terms' tools with the common ones looked up. A dense array per such term: 13 MB
 * for the 162 of the bench's 10,000-tool catalog.
 */
const HEAVY_SHARE = 1 / 8;
const HEAVY_MIN_TOOLS = 64;
/**
 * Tools are bounded in blocks of `2 ** BLOCK_BITS` (32) by ordinal: the most each common term gives a tool of the
 * block is kept, and a tool whose bound cannot reach the page is not scored (block-max MaxScore).
 */
export const BLOCK_BITS = 5;

/** A query term's summed impacts over the tools, worked out at build (see {@link HEAVY_SHARE}). */
export interface HeavyTerm {
  /** Impact by tool ordinal, 0 where the term finds nothing. */
  readonly dense: Float64Array;
  /** The tools it finds, ascending, and their impacts. */
  readonly docs: Int32Array;
  readonly impacts: Float64Array;
  /** The largest impact: no tool gains more from this term. */
  readonly max: number;
  /** The largest impact in each block of 2 ** {@link BLOCK_BITS} tools. */
  readonly blockMax: Float64Array;
}

/** What {@link buildPostings} works out of a catalog; the index reads it, never changes it. */
export interface Postings {
  /** Every term of the catalog, sorted by code unit: a term's prefix matches are the range after it. */
  readonly terms: string[];
  /** Postings by term, in compressed rows: term `t`'s tools are `docs[starts[t]..starts[t + 1]]`. */
  readonly starts: Int32Array;
  readonly docs: Int32Array;
  readonly impacts: Float64Array;
  /** The summed impacts of each prefix whose words are in enough of the catalog ({@link HEAVY_SHARE}). */
  readonly heavy: Map<string, HeavyTerm>;
  /** Each tool's place in the order of ids: ties compare these. */
  readonly idRank: Int32Array;
  /** Each tool's toolkit, by its number in {@link toolkits}. */
  readonly toolkitOf: Int32Array;
  readonly toolkits: Map<string, number>;
  /** The tools by each name a query may give exactly (id, `Toolkit.Tool`, wire name, tool), lower-cased. */
  readonly exact: Map<string, number[]>;
  /** Each deprecated version's tool's versions that are not: a search visits these, not every match. */
  readonly currentOf: Map<number, number[]>;
  readonly isDeprecated: Uint8Array;
}

/** Works out the postings of `definitions`, a tool's ordinal being its place in them. */
export function buildPostings(definitions: readonly ToolDefinition[]): Postings {
  const count = definitions.length;
  const exact = new Map<string, number[]>();
  const currentOf = new Map<number, number[]>();
  const toolkits = new Map<string, number>();
  // Terms by number as they are met; each distinct text's distinct terms and their counts worked out once (a
  // catalog's descriptions repeat: a third of the bench's are distinct).
  const termIds = new Map<string, number>();
  const termTexts: string[] = [];
  const counted = new Map<string, Int32Array>();
  const countTerms = (text: string): Int32Array => {
    let pairs = counted.get(text);
    if (pairs === undefined) {
      const frequencies = new Map<number, number>();
      for (const token of searchTokens(text)) {
        let id = termIds.get(token);
        if (id === undefined) {
          id = termTexts.length;
          termIds.set(token, id);
          termTexts.push(token);
        }
        frequencies.set(id, (frequencies.get(id) ?? 0) + 1);
      }
      pairs = new Int32Array(frequencies.size * 2);
      let i = 0;
      for (const [id, frequency] of frequencies) {
        pairs[i++] = id;
        pairs[i++] = frequency;
      }
      counted.set(text, pairs);
    }
    return pairs;
  };
  // field -> term number -> [tool, frequency, tool, frequency, ...]
  const byField: number[][][] = FIELDS.map(() => []);
  const lengths = FIELDS.map(() => new Float64Array(count));
  const averages = FIELDS.map(() => 0);
  const current = new Map<string, number[]>();
  const ids = definitions.map((definition) => definition.id);
  definitions.forEach((definition, index) => {
    const { toolkit, tool, qualified } = partsOf(definition);
    const texts = fieldsOf(definition, tool, toolkit);
    for (let field = 0; field < texts.length; field++) {
      const pairs = countTerms(texts[field] as string);
      const length = pairs.length / 2;
      // A field's length is its distinct terms, and the average is kept as MiniSearch keeps it, one tool at a time.
      (lengths[field] as Float64Array)[index] = length;
      averages[field] = ((averages[field] as number) * index + length) / (index + 1);
      const postings = byField[field] as number[][];
      for (let i = 0; i < pairs.length; i += 2) {
        const id = pairs[i] as number;
        const row = postings[id];
        if (row === undefined) {
          postings[id] = [index, pairs[i + 1] as number];
        } else {
          row.push(index, pairs[i + 1] as number);
        }
      }
    }
    for (const name of new Set([definition.id, qualified, definition.name, tool].map((n) => n.toLowerCase()))) {
      const named = exact.get(name);
      if (named === undefined) {
        exact.set(name, [index]);
      } else {
        named.push(index);
      }
    }
    if (definition.deprecation_message === undefined) {
      const versions = current.get(qualified);
      if (versions === undefined) {
        current.set(qualified, [index]);
      } else {
        versions.push(index);
      }
    }
  });
  const isDeprecated = new Uint8Array(count);
  definitions.forEach((definition, index) => {
    if (definition.deprecation_message !== undefined) {
      isDeprecated[index] = 1;
      currentOf.set(index, current.get(partsOf(definition).qualified) ?? []);
    }
  });
  const toolkitOf = new Int32Array(count);
  definitions.forEach((definition, index) => {
    const toolkit = definition.id.slice(0, definition.id.indexOf("."));
    let ordinal = toolkits.get(toolkit);
    if (ordinal === undefined) {
      ordinal = toolkits.size;
      toolkits.set(toolkit, ordinal);
    }
    toolkitOf[index] = ordinal;
  });
  const idRank = new Int32Array(count);
  [...ids.keys()]
    .sort((a, b) => compareCodeUnits(ids[a] as string, ids[b] as string))
    .forEach((index, rank) => {
      idRank[index] = rank;
    });

  const order = [...termTexts.keys()].sort((a, b) => compareCodeUnits(termTexts[a] as string, termTexts[b] as string));
  const terms = order.map((id) => termTexts[id] as string);
  const starts = new Int32Array(terms.length + 1);
  let postings = 0;
  const fieldsByTerm = order.map((id) => byField.map((postings) => postings[id] ?? NO_POSTINGS));
  const scratch = new Float64Array(count);
  const touched = new Int32Array(count);
  const rows: { docs: Int32Array; impacts: Float64Array }[] = [];
  fieldsByTerm.forEach((fields, t) => {
    let n = 0;
    fields.forEach((pairs, field) => {
      if (pairs.length === 0) {
        return;
      }
      const matching = pairs.length / 2;
      const idf = Math.log(1 + (count - matching + 0.5) / (matching + 0.5));
      const boost = BOOSTS[field] as number;
      const fieldLengths = lengths[field] as Float64Array;
      const average = averages[field] as number;
      for (let i = 0; i < pairs.length; i += 2) {
        const doc = pairs[i] as number;
        const frequency = pairs[i + 1] as number;
        const raw =
          idf *
          (BM25.d +
            (frequency * (BM25.k + 1)) /
              (frequency + BM25.k * (1 - BM25.b + (BM25.b * (fieldLengths[doc] as number)) / average)));
        if (scratch[doc] === 0) {
          touched[n++] = doc;
        }
        scratch[doc] = (scratch[doc] as number) + boost * raw;
      }
    });
    const rowDocs = touched.slice(0, n).sort();
    const rowImpacts = new Float64Array(n);
    rowDocs.forEach((doc, i) => {
      rowImpacts[i] = scratch[doc] as number;
      scratch[doc] = 0;
    });
    rows.push({ docs: rowDocs, impacts: rowImpacts });
    postings += n;
    starts[t + 1] = postings;
  });
  const docs = new Int32Array(postings);
  const impacts = new Float64Array(postings);
  rows.forEach((row, t) => {
    docs.set(row.docs, starts[t] as number);
    impacts.set(row.impacts, starts[t] as number);
  });
  const heavy = buildHeavy({ terms, starts, docs, impacts }, count, scratch);
  return { terms, starts, docs, impacts, heavy, idRank, toolkitOf, toolkits, exact, currentOf, isDeprecated };
}

/** Works out the summed impacts of every prefix whose words are in enough of the catalog ({@link HEAVY_SHARE}). */
function buildHeavy(
  { terms, starts, docs, impacts }: Pick<Postings, "terms" | "starts" | "docs" | "impacts">,
  count: number,
  scratch: Float64Array,
): Map<string, HeavyTerm> {
  const heavy = new Map<string, HeavyTerm>();
  const threshold = Math.max(HEAVY_MIN_TOOLS, count * HEAVY_SHARE);
  const postingsOf = new Map<string, number>();
  terms.forEach((term, t) => {
    const postings = (starts[t + 1] as number) - (starts[t] as number);
    for (let length = 1; length <= term.length; length++) {
      const prefix = term.slice(0, length);
      postingsOf.set(prefix, (postingsOf.get(prefix) ?? 0) + postings);
    }
  });
  for (const [prefix, postings] of postingsOf) {
    if (postings < threshold) {
      continue;
    }
    const from = lowerBound(terms, prefix);
    const touched: number[] = [];
    for (let t = from; t < terms.length && (terms[t] as string).startsWith(prefix); t++) {
      const weight = prefixWeight(prefix, terms[t] as string);
      for (let p = starts[t] as number, end = starts[t + 1] as number; p < end; p++) {
        const doc = docs[p] as number;
        if (scratch[doc] === 0) {
          touched.push(doc);
        }
        scratch[doc] = (scratch[doc] as number) + weight * (impacts[p] as number);
      }
    }
    const found = Int32Array.from(touched).sort();
    if (found.length < threshold) {
      for (const doc of found) {
        scratch[doc] = 0;
      }
      continue;
    }
    const summed = new Float64Array(found.length);
    const dense = new Float64Array(count);
    const blockMax = new Float64Array((count >> BLOCK_BITS) + 1);
    let max = 0;
    found.forEach((doc, i) => {
      const impact = scratch[doc] as number;
      summed[i] = impact;
      dense[doc] = impact;
      max = Math.max(max, impact);
      blockMax[doc >> BLOCK_BITS] = Math.max(blockMax[doc >> BLOCK_BITS] as number, impact);
      scratch[doc] = 0;
    });
    heavy.set(prefix, { dense, docs: found, impacts: summed, max, blockMax });
  }
  return heavy;
}

const NO_POSTINGS: readonly number[] = [];

/** How much an index term counts for a query term it begins: 1 for itself, less the more letters follow. */
export function prefixWeight(query: string, term: string): number {
  const distance = term.length - query.length;
  return distance === 0 ? 1 : (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance);
}

/** The first place in sorted `terms` not before `term`. */
export function lowerBound(terms: readonly string[], term: string): number {
  let low = 0;
  let high = terms.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if ((terms[middle] as string) < term) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

/**
 * The end of the range of sorted `terms` that begin with `prefix`, the range starting at `from`: found by halving, as
 * every term that begins with it sorts before `prefix` with its last code unit one higher: a walk would visit each of
 * the thousands of terms a one-letter query term begins, on every query.
 */
export function prefixEnd(terms: readonly string[], prefix: string, from: number): number {
  const last = prefix.charCodeAt(prefix.length - 1);
  if (prefix.length === 0 || last === 0xffff) {
    let to = from;
    while (to < terms.length && (terms[to] as string).startsWith(prefix)) {
      to++;
    }
    return to;
  }
  return lowerBound(terms, prefix.slice(0, -1) + String.fromCharCode(last + 1));
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
