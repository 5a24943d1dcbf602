/** Ranked search over a catalog's definitions (docs/protocol.md 9.5, `[search.ranking]`): a BM25 impact index. */
import { parseToolId, type ToolDefinition } from "@otc/types";

/** One match: the definition and its score (higher is better; comparable within one search only). */
export interface ToolMatch {
  readonly definition: ToolDefinition;
  readonly score: number;
}

/** What a search may narrow to. */
export interface ToolSearchOptions {
  /** Only the tools of this toolkit (the part of the id before the dot, exactly). */
  toolkit?: string;
  /** Only the definitions this returns true for (a caller's visible catalog); the others are not matches at all. */
  keep?: (definition: ToolDefinition) => boolean;
}

/** A page of a search: the matches from `offset`, and whether more follow. */
export interface ToolSearchPage {
  readonly matches: readonly ToolMatch[];
  readonly more: boolean;
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
const BOOSTS = FIELDS.map((field) => FIELD_WEIGHTS[field]);

/** A prefix match counts this much of an equal one (`email` finding `emails`), less the longer the rest of the word. */
const PREFIX_WEIGHT = 0.3;
/** BM25's parameters: term-frequency saturation, length normalisation, and a floor for any match. */
const BM25 = { k: 1.2, b: 0.7, d: 0.5 } as const;
/** Scores are rounded to this many decimals before ties are ordered by id: the same bytes on every runtime. */
const SCORE_DECIMALS = 4;
const SCORE_FACTOR = 10 ** SCORE_DECIMALS;
/** How deep parameter names and descriptions are read into a schema's `properties` and `items`. */
const SCHEMA_DEPTH = 4;
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
const BLOCK_BITS = 5;

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
function fieldsOf(definition: ToolDefinition, tool: string, toolkit: string): string[] {
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
function partsOf(definition: ToolDefinition): { toolkit: string; tool: string; qualified: string } {
  const parsed = parseToolId(definition.id);
  if (!parsed) {
    return { toolkit: "", tool: definition.name, qualified: definition.id };
  }
  return { toolkit: parsed.toolkit, tool: parsed.tool, qualified: parsed.qualifiedName };
}

/** A query term's summed impacts over the tools, worked out at build (see {@link HEAVY_SHARE}). */
interface HeavyTerm {
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

/** One distinct term of a query, with how often the query has it. */
interface QueryTerm {
  readonly text: string;
  readonly times: number;
  readonly heavy: HeavyTerm | undefined;
  /** The index terms it finds (itself and those it begins), as a range of the sorted terms. */
  readonly from: number;
  readonly to: number;
}

/**
 * A catalog's search index, built once (docs/protocol.md 9.5): field-weighted BM25 over name, toolkit, description,
 * parameter names and parameter texts, a term finding the words it begins at a lower weight; a tool's score is its
 * terms' sum times how many of the query's terms it has; exact names first; a deprecated version below the same
 * tool's others; ties by id. No pattern a client sends is ever run: queries are cut into terms and looked up.
 *
 * The catalog does not change under an index, so each term's contribution to each tool is computed at build, and a
 * query adds up postings: its cost follows the postings of its rarer terms, the common terms (in an eighth of the
 * catalog or more) looked up for the tools those find, and walked only when the page's best could lie among the
 * tools only the common terms find. The scores are MiniSearch's (7.2, configured as above) to within rounding, which a test holds them
 * to: the library, doing this per query, costs 50-100x more on a 10,000-tool catalog (bench/results/notes.md).
 *
 * @example
 * const index = new ToolSearchIndex(core.registry.list({ annotations: true }));
 * index.search("send an email", { toolkit: "Gmail" }); // [{ definition, score }, ...]
 */
export class ToolSearchIndex {
  private readonly definitions: readonly ToolDefinition[];
  private readonly count: number;
  /** Every term of the catalog, sorted by code unit: a term's prefix matches are the range after it. */
  private readonly terms: string[];
  /** Postings by term, in compressed rows: term `t`'s tools are `docs[starts[t]..starts[t + 1]]`. */
  private readonly starts: Int32Array;
  private readonly docs: Int32Array;
  private readonly impacts: Float64Array;
  private readonly heavy = new Map<string, HeavyTerm>();
  /** Each tool's place in the order of ids: ties compare these. */
  private readonly idRank: Int32Array;
  private readonly toolkitOf: Int32Array;
  private readonly toolkits = new Map<string, number>();
  private readonly exact = new Map<string, number[]>();
  /** Each deprecated version's tool's versions that are not: a search visits these, not every match. */
  private readonly currentOf = new Map<number, number[]>();
  private readonly isDeprecated: Uint8Array;

  // A query's working state, by tool ordinal: reused (a search runs to its end synchronously), reset by epoch.
  private readonly score: Float64Array;
  // Counts of query terms: Int32, since the class takes queries of any length (the HTTP layer, 32 terms at most).
  private readonly found: Int32Array;
  private readonly epochOf: Int32Array;
  /** The query term that last counted a tool, or {@link REFUSED} for a tool the filter leaves out. */
  private readonly termOf: Int32Array;
  private readonly touched: Int32Array;
  /** Each tool's score once worked out ({@link final}), for the search of {@link finalEpoch}. */
  private readonly finalScore: Float64Array;
  private readonly finalEpoch: Int32Array;
  /** By block of 2 ** {@link BLOCK_BITS} tools, the most the current query's common terms add, and how many of them can. */
  private readonly blockSum: Float64Array;
  private readonly blockCount: Int32Array;
  /** How many of {@link touched} the current search has gathered. */
  private gathered = 0;
  private epoch = 0;

  constructor(definitions: readonly ToolDefinition[]) {
    this.definitions = definitions;
    const count = definitions.length;
    this.count = count;
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
        const named = this.exact.get(name);
        if (named === undefined) {
          this.exact.set(name, [index]);
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
    this.isDeprecated = new Uint8Array(count);
    definitions.forEach((definition, index) => {
      if (definition.deprecation_message !== undefined) {
        this.isDeprecated[index] = 1;
        this.currentOf.set(index, current.get(partsOf(definition).qualified) ?? []);
      }
    });
    this.toolkitOf = new Int32Array(count);
    definitions.forEach((definition, index) => {
      const toolkit = definition.id.slice(0, definition.id.indexOf("."));
      let ordinal = this.toolkits.get(toolkit);
      if (ordinal === undefined) {
        ordinal = this.toolkits.size;
        this.toolkits.set(toolkit, ordinal);
      }
      this.toolkitOf[index] = ordinal;
    });
    this.idRank = new Int32Array(count);
    [...ids.keys()]
      .sort((a, b) => compareCodeUnits(ids[a] as string, ids[b] as string))
      .forEach((index, rank) => {
        this.idRank[index] = rank;
      });

    const order = [...termTexts.keys()].sort((a, b) =>
      compareCodeUnits(termTexts[a] as string, termTexts[b] as string),
    );
    this.terms = order.map((id) => termTexts[id] as string);
    this.starts = new Int32Array(this.terms.length + 1);
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
      const docs = touched.slice(0, n).sort();
      const impacts = new Float64Array(n);
      docs.forEach((doc, i) => {
        impacts[i] = scratch[doc] as number;
        scratch[doc] = 0;
      });
      rows.push({ docs, impacts });
      postings += n;
      this.starts[t + 1] = postings;
    });
    this.docs = new Int32Array(postings);
    this.impacts = new Float64Array(postings);
    rows.forEach(({ docs, impacts }, t) => {
      this.docs.set(docs, this.starts[t] as number);
      this.impacts.set(impacts, this.starts[t] as number);
    });
    this.buildHeavy(scratch);

    this.score = new Float64Array(count);
    this.found = new Int32Array(count);
    this.epochOf = new Int32Array(count);
    this.termOf = new Int32Array(count);
    this.touched = new Int32Array(count);
    this.finalScore = new Float64Array(count);
    this.finalEpoch = new Int32Array(count);
    this.blockSum = new Float64Array((count >> BLOCK_BITS) + 1);
    this.blockCount = new Int32Array((count >> BLOCK_BITS) + 1);
  }

  /** Every match of `query`, best first. */
  search(query: string, options: ToolSearchOptions = {}): ToolMatch[] {
    return this.run(query, options, 0, this.count).matches as ToolMatch[];
  }

  /**
   * `limit` matches of `query` from the `offset`-th, best first, and whether more follow: the same matches as
   * {@link search}'s slice, without ranking the ones past the page.
   */
  page(query: string, options: ToolSearchOptions & { offset: number; limit: number }): ToolSearchPage {
    return this.run(query, options, options.offset, options.limit);
  }

  private run(text: string, options: ToolSearchOptions, offset: number, limit: number): ToolSearchPage {
    const keep = this.filter(options);
    if (keep === NOTHING) {
      return { matches: [], more: false };
    }
    const query = this.prepare(text, keep, offset + limit + 1);
    this.walkRare(query);
    const heap = new Heap(query.wanted, this.finalScore, this.idRank);
    const named = query.named.length === 0 ? undefined : new Set(query.named);
    const consider = (doc: number) => {
      if (named?.has(doc) || (heap.full() && this.bound(doc) < heap.worstScore())) {
        return;
      }
      if (this.final(doc, query) !== undefined) {
        heap.add(doc);
      }
    };
    const { touched, gathered } = this;
    for (let i = 0; i < gathered; i++) {
      const doc = touched[i] as number;
      // The test of consider, inline: most of a search's tools stop at it.
      if (named === undefined && heap.full() && this.bound(doc) < heap.worstScore()) {
        continue;
      }
      consider(doc);
    }
    // The common terms' own tools: while the page is not full, those of the terms with fewest tools first. Then
    // a term stays unwalked while the most it and the other unwalked ones could give a tool (each one's largest
    // impact, summed, times their number) cannot reach the page (MaxScore); the terms with most tools are the dearest
    // to walk, so they are the first to stay unwalked.
    const { common, terms } = query;
    let next = 0;
    while (!heap.full() && next < common.length) {
      this.walkCommon(query, common[next++] as number, consider, heap);
    }
    let sum = 0;
    let unwalked = 0;
    for (const j of common.slice(next).reverse()) {
      const term = terms[j] as QueryTerm;
      const more = sum + term.times * (term.heavy as HeavyTerm).max;
      if (more * (unwalked + 1) + 1 / SCORE_FACTOR < heap.worstScore()) {
        sum = more;
        unwalked++;
      } else {
        this.walkCommon(query, j, consider, heap);
      }
    }
    return this.answer(heap.sorted(), query, offset, limit);
  }

  /** A query's terms and what the search of it needs to know before it starts. */
  private prepare(text: string, keep: (index: number) => boolean, wanted: number): Query {
    const terms = this.queryTerms(text);
    const common = [...terms.keys()]
      .filter((j) => terms[j]?.heavy !== undefined)
      .sort((a, b) => (terms[a]?.heavy?.docs.length as number) - (terms[b]?.heavy?.docs.length as number));
    // By block of tools, the most the common terms could add to a tool's sum, and how many of them could.
    const blocks = this.blockSum.length;
    this.blockSum.fill(0);
    this.blockCount.fill(0);
    for (const j of common) {
      const term = terms[j] as QueryTerm;
      const { blockMax } = term.heavy as HeavyTerm;
      for (let b = 0; b < blocks; b++) {
        const max = blockMax[b] as number;
        if (max > 0) {
          this.blockSum[b] = (this.blockSum[b] as number) + term.times * max;
          this.blockCount[b] = (this.blockCount[b] as number) + 1;
        }
      }
    }
    const inOrder = [...common].sort((a, b) => a - b);
    return {
      terms,
      keep,
      named: (this.exact.get(text.trim().toLowerCase()) ?? []).filter((index) => keep(index)),
      wanted,
      common,
      dense: inOrder.map((j) => ((terms[j] as QueryTerm).heavy as HeavyTerm).dense),
      times: inOrder.map((j) => (terms[j] as QueryTerm).times),
    };
  }

  /** The tool ordinals a search keeps: all, those of a toolkit, those the caller's filter keeps. */
  private filter(options: ToolSearchOptions): (index: number) => boolean {
    const { toolkit, keep } = options;
    const ordinal = toolkit === undefined ? undefined : this.toolkits.get(toolkit);
    if (toolkit !== undefined && ordinal === undefined) {
      return NOTHING;
    }
    const definitions = this.definitions;
    const toolkitOf = this.toolkitOf;
    if (keep === undefined) {
      return ordinal === undefined ? EVERYTHING : (index) => toolkitOf[index] === ordinal;
    }
    return (index) =>
      (ordinal === undefined || toolkitOf[index] === ordinal) && keep(definitions[index] as ToolDefinition);
  }

  /** The query's distinct terms in their first order, with their index ranges and precomputed impacts. */
  private queryTerms(query: string): QueryTerm[] {
    const times = new Map<string, number>();
    for (const token of searchTokens(query)) {
      times.set(token, (times.get(token) ?? 0) + 1);
    }
    return [...times].map(([text, n]) => {
      const from = lowerBound(this.terms, text);
      let to = from;
      while (to < this.terms.length && (this.terms[to] as string).startsWith(text)) {
        to++;
      }
      return { text, times: n, heavy: this.heavy.get(text), from, to };
    });
  }

  /**
   * Starts a search: every tool the rare terms (all of the query's but the common ones) find, kept in
   * {@link touched} with the sum of those terms' impacts in {@link score} and their number in {@link found}.
   */
  private walkRare(query: Query): void {
    const epoch = this.nextEpoch();
    const { terms, keep } = query;
    const { score, found, epochOf, termOf, touched, starts, docs, impacts } = this;
    const filtered = keep !== EVERYTHING;
    let n = 0;
    for (let j = 0; j < terms.length; j++) {
      const term = terms[j] as QueryTerm;
      if (term.heavy !== undefined) {
        continue;
      }
      for (let t = term.from; t < term.to; t++) {
        const weight = term.times * prefixWeight(term.text, this.terms[t] as string);
        for (let p = starts[t] as number, end = starts[t + 1] as number; p < end; p++) {
          const doc = docs[p] as number;
          if (epochOf[doc] !== epoch) {
            epochOf[doc] = epoch;
            if (filtered && !keep(doc)) {
              termOf[doc] = REFUSED;
              continue;
            }
            termOf[doc] = -1;
            score[doc] = 0;
            found[doc] = 0;
            touched[n++] = doc;
          } else if (termOf[doc] === REFUSED) {
            continue;
          }
          score[doc] = (score[doc] as number) + weight * (impacts[p] as number);
          if (termOf[doc] !== j) {
            termOf[doc] = j;
            found[doc] = (found[doc] as number) + 1;
          }
        }
      }
    }
    this.gathered = n;
  }

  /** Hands `consider` each tool the common term `j` finds that the search has not met yet. */
  private walkCommon(query: Query, j: number, consider: (doc: number) => void, heap: Heap): void {
    const { docs } = (query.terms[j] as QueryTerm).heavy as HeavyTerm;
    const { epochOf, termOf, score, found, epoch, blockSum, blockCount } = this;
    let block = -1;
    let skip = false;
    for (let i = 0; i < docs.length; i++) {
      const doc = docs[i] as number;
      // A block whose bound cannot reach the page: none of its tools not met yet could (each would fail consider's
      // test), and the page's worst only rises. Its tools are passed over unmet, scored as such if asked for.
      if (doc >> BLOCK_BITS !== block) {
        block = doc >> BLOCK_BITS;
        const most = (blockSum[block] as number) * (blockCount[block] as number) + 1 / SCORE_FACTOR;
        skip = heap.full() && most < heap.worstScore();
      }
      if (skip || epochOf[doc] === epoch) {
        continue;
      }
      epochOf[doc] = epoch;
      if (!query.keep(doc)) {
        termOf[doc] = REFUSED;
        continue;
      }
      termOf[doc] = -1;
      score[doc] = 0;
      found[doc] = 0;
      consider(doc);
    }
  }

  /** The most a tool met by the rare terms could score, the common ones at their block's largest. */
  private bound(doc: number): number {
    const block = doc >> BLOCK_BITS;
    const met = this.epochOf[doc] === this.epoch;
    const sum = (met ? (this.score[doc] as number) : 0) + (this.blockSum[block] as number);
    return sum * ((met ? (this.found[doc] as number) : 0) + (this.blockCount[block] as number)) + 1 / SCORE_FACTOR;
  }

  /**
   * A tool's score (`[search.ranking]`): the rare terms' impacts in the query's order, then the common ones', summed,
   * times the number of terms that find it, rounded; a deprecated version below its tool's others
   * (`[search.deprecated]`). Worked out once a search, kept in {@link finalScore}; undefined for a tool no term finds
   * or the filter leaves out.
   */
  private final(doc: number, query: Query): number | undefined {
    if (this.finalEpoch[doc] === this.epoch) {
      const kept = this.finalScore[doc] as number;
      return kept > 0 ? kept : undefined;
    }
    let value = this.raw(doc, query);
    const siblings = value === undefined || this.isDeprecated[doc] === 0 ? undefined : this.currentOf.get(doc);
    if (value !== undefined && siblings !== undefined) {
      let floor = Number.POSITIVE_INFINITY;
      for (const version of siblings) {
        floor = Math.min(floor, this.final(version, query) ?? Number.POSITIVE_INFINITY);
      }
      if (floor !== Number.POSITIVE_INFINITY && value >= floor) {
        value = round(floor / 2, DEMOTED_LEAST);
      }
    }
    this.finalEpoch[doc] = this.epoch;
    this.finalScore[doc] = value ?? 0;
    return value;
  }

  /** A tool's score before the deprecated are put below their tools' others. */
  private raw(doc: number, query: Query): number | undefined {
    const met = this.epochOf[doc] === this.epoch;
    if (met ? this.termOf[doc] === REFUSED : !query.keep(doc)) {
      return undefined;
    }
    let sum = met ? (this.score[doc] as number) : 0;
    let found = met ? (this.found[doc] as number) : 0;
    const { dense, times } = query;
    for (let k = 0; k < dense.length; k++) {
      const impact = (dense[k] as Float64Array)[doc] as number;
      if (impact > 0) {
        sum += (times[k] as number) * impact;
        found++;
      }
    }
    return found === 0 ? undefined : round(sum * found);
  }

  /**
   * The page: an exact name ranks first (`[search.exact-first]`), above the best score any other match has, after
   * the deprecated versions are put below their tools' others, so that a query naming a deprecated version exactly
   * still finds it first; then the ranked matches.
   */
  private answer(best: readonly number[], query: Query, offset: number, limit: number): ToolSearchPage {
    const { finalScore: score, idRank } = this;
    const first: { index: number; score: number }[] = [];
    if (query.named.length > 0) {
      const own = query.named.map((index) => this.final(index, query) ?? 0);
      const top = Math.max(1, ...own, best.length > 0 ? (score[best[0] as number] as number) : 0);
      query.named.forEach((index, i) => {
        first.push({ index, score: round(top + 1 + (own[i] as number)) });
      });
      first.sort((a, b) => b.score - a.score || (idRank[a.index] as number) - (idRank[b.index] as number));
    }
    const ordered = [...first, ...best.map((index) => ({ index, score: score[index] as number }))];
    const matches = ordered.slice(offset, offset + limit).map(({ index, score }) => ({
      definition: this.definitions[index] as ToolDefinition,
      score,
    }));
    return { matches, more: ordered.length > offset + limit };
  }

  private nextEpoch(): number {
    if (this.epoch === 0x7fffffff) {
      this.epoch = 0;
      this.epochOf.fill(0);
      this.finalEpoch.fill(0);
    }
    return ++this.epoch;
  }

  /** Works out the summed impacts of every prefix whose words are in enough of the catalog ({@link HEAVY_SHARE}). */
  private buildHeavy(scratch: Float64Array): void {
    const threshold = Math.max(HEAVY_MIN_TOOLS, this.count * HEAVY_SHARE);
    const postingsOf = new Map<string, number>();
    this.terms.forEach((term, t) => {
      const postings = (this.starts[t + 1] as number) - (this.starts[t] as number);
      for (let length = 1; length <= term.length; length++) {
        const prefix = term.slice(0, length);
        postingsOf.set(prefix, (postingsOf.get(prefix) ?? 0) + postings);
      }
    });
    for (const [prefix, postings] of postingsOf) {
      if (postings < threshold) {
        continue;
      }
      const from = lowerBound(this.terms, prefix);
      const touched: number[] = [];
      for (let t = from; t < this.terms.length && (this.terms[t] as string).startsWith(prefix); t++) {
        const weight = prefixWeight(prefix, this.terms[t] as string);
        for (let p = this.starts[t] as number, end = this.starts[t + 1] as number; p < end; p++) {
          const doc = this.docs[p] as number;
          if (scratch[doc] === 0) {
            touched.push(doc);
          }
          scratch[doc] = (scratch[doc] as number) + weight * (this.impacts[p] as number);
        }
      }
      const docs = Int32Array.from(touched).sort();
      if (docs.length < threshold) {
        for (const doc of docs) {
          scratch[doc] = 0;
        }
        continue;
      }
      const impacts = new Float64Array(docs.length);
      const dense = new Float64Array(this.count);
      const blockMax = new Float64Array((this.count >> BLOCK_BITS) + 1);
      let max = 0;
      docs.forEach((doc, i) => {
        const impact = scratch[doc] as number;
        impacts[i] = impact;
        dense[doc] = impact;
        max = Math.max(max, impact);
        blockMax[doc >> BLOCK_BITS] = Math.max(blockMax[doc >> BLOCK_BITS] as number, impact);
        scratch[doc] = 0;
      });
      this.heavy.set(prefix, { dense, docs, impacts, max, blockMax });
    }
  }
}

const REFUSED = -2;
const NO_POSTINGS: readonly number[] = [];
const EVERYTHING = () => true;
const NOTHING = () => false;

/** A search as the index runs it. */
interface Query {
  readonly terms: readonly QueryTerm[];
  readonly keep: (index: number) => boolean;
  /** The tools whose name the query is (`[search.exact-first]`). */
  readonly named: readonly number[];
  /** How many of the best the page needs: up to its end, and one more to tell whether more follow. */
  readonly wanted: number;
  /** The query's common terms (by place), fewest tools first. */
  readonly common: readonly number[];
  /** Their impacts by tool and how often the query has each, in the query's order: the order they are added in. */
  readonly dense: readonly Float64Array[];
  readonly times: readonly number[];
}

/**
 * The best `capacity` tools by score (ties by id), the worst kept on top: most tools lose to it at one comparison.
 */
class Heap {
  private readonly items: number[] = [];

  constructor(
    private readonly capacity: number,
    private readonly score: Float64Array,
    private readonly idRank: Int32Array,
  ) {}

  full(): boolean {
    return this.items.length >= this.capacity;
  }

  /** The score a tool must beat (or equal, with a smaller id) to be kept; none while the heap is not full. */
  worstScore(): number {
    return this.full() ? (this.score[this.items[0] as number] as number) : Number.NEGATIVE_INFINITY;
  }

  add(doc: number): void {
    const items = this.items;
    if (items.length < this.capacity) {
      items.push(doc);
      let i = items.length - 1;
      while (i > 0) {
        const parent = (i - 1) >> 1;
        if (!this.before(items[parent] as number, items[i] as number)) {
          return;
        }
        [items[i], items[parent]] = [items[parent] as number, items[i] as number];
        i = parent;
      }
      return;
    }
    if (!this.before(doc, items[0] as number)) {
      return;
    }
    items[0] = doc;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let worst = i;
      if (left < items.length && this.before(items[worst] as number, items[left] as number)) {
        worst = left;
      }
      if (right < items.length && this.before(items[worst] as number, items[right] as number)) {
        worst = right;
      }
      if (worst === i) {
        return;
      }
      [items[i], items[worst]] = [items[worst] as number, items[i] as number];
      i = worst;
    }
  }

  /** The kept tools, best first. */
  sorted(): number[] {
    return [...this.items].sort((a, b) => (this.before(a, b) ? -1 : this.before(b, a) ? 1 : 0));
  }

  /** Whether `a` ranks before `b`: a higher score, or the same and a smaller id (`[search.deterministic]`). */
  private before(a: number, b: number): boolean {
    const sa = this.score[a] as number;
    const sb = this.score[b] as number;
    return sa > sb || (sa === sb && (this.idRank[a] as number) < (this.idRank[b] as number));
  }
}

/** How much an index term counts for a query term it begins: 1 for itself, less the more letters follow. */
function prefixWeight(query: string, term: string): number {
  const distance = term.length - query.length;
  return distance === 0 ? 1 : (PREFIX_WEIGHT * term.length) / (term.length + 0.3 * distance);
}

/** The first place in sorted `terms` not before `term`. */
function lowerBound(terms: readonly string[], term: string): number {
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

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The least score of a match, two steps of the rounding above 0, and of a deprecated version put below its tool's
 * others, one: so that halving a version's least score still ranks it below ([search.deprecated]) rather than level.
 */
const LEAST = 2 / SCORE_FACTOR;
const DEMOTED_LEAST = 1 / SCORE_FACTOR;

/** A score rounded so that runtimes whose last bits of floating point differ give the same bytes, never 0. */
function round(score: number, least = LEAST): number {
  return Math.max(least, Math.round(score * SCORE_FACTOR) / SCORE_FACTOR);
}
