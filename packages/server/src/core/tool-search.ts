/** Ranked search over a catalog's definitions (docs/protocol.md 9.5, `[search.ranking]`): a BM25 impact index. */
import type { ToolDefinition } from "@otc/types";
import { Heap } from "./search-heap.js";
import { BLOCK_BITS, buildPostings, type HeavyTerm, lowerBound, prefixEnd, prefixWeight } from "./search-postings.js";
import { queryTokens } from "./search-text.js";

export { FIELD_WEIGHTS, queryTokens, searchTokens } from "./search-text.js";

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

/** Scores are rounded to this many decimals before ties are ordered by id: the same bytes on every runtime. */
const SCORE_DECIMALS = 4;
const SCORE_FACTOR = 10 ** SCORE_DECIMALS;

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
  private readonly heavy: ReadonlyMap<string, HeavyTerm>;
  /** Each tool's place in the order of ids: ties compare these. */
  private readonly idRank: Int32Array;
  private readonly toolkitOf: Int32Array;
  private readonly toolkits: ReadonlyMap<string, number>;
  private readonly exact: ReadonlyMap<string, readonly number[]>;
  /** Each deprecated version's tool's versions that are not: a search visits these, not every match. */
  private readonly currentOf: ReadonlyMap<number, readonly number[]>;
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
    const built = buildPostings(definitions);
    this.terms = built.terms;
    this.starts = built.starts;
    this.docs = built.docs;
    this.impacts = built.impacts;
    this.heavy = built.heavy;
    this.idRank = built.idRank;
    this.toolkitOf = built.toolkitOf;
    this.toolkits = built.toolkits;
    this.exact = built.exact;
    this.currentOf = built.currentOf;
    this.isDeprecated = built.isDeprecated;
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
    for (const token of queryTokens(query)) {
      times.set(token, (times.get(token) ?? 0) + 1);
    }
    return [...times].map(([text, n]) => {
      const from = lowerBound(this.terms, text);
      return { text, times: n, heavy: this.heavy.get(text), from, to: prefixEnd(this.terms, text, from) };
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
    // The exact names, then the ranked matches: those from `offset`, `limit` of them, made straight into the page.
    const matches: ToolMatch[] = [];
    let place = 0;
    const add = (index: number, value: number) => {
      if (place >= offset && matches.length < limit) {
        matches.push({ definition: this.definitions[index] as ToolDefinition, score: value });
      }
      place++;
    };
    for (const { index, score: value } of first) {
      add(index, value);
    }
    for (const index of best) {
      add(index, score[index] as number);
    }
    return { matches, more: place > offset + limit };
  }

  private nextEpoch(): number {
    if (this.epoch === 0x7fffffff) {
      this.epoch = 0;
      this.epochOf.fill(0);
      this.finalEpoch.fill(0);
    }
    return ++this.epoch;
  }
}

const REFUSED = -2;
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
 * The least score of a match, two steps of the rounding above 0, and of a deprecated version put below its tool's
 * others, one: so that halving a version's least score still ranks it below ([search.deprecated]) rather than level.
 */
const LEAST = 2 / SCORE_FACTOR;
const DEMOTED_LEAST = 1 / SCORE_FACTOR;

/** A score rounded so that runtimes whose last bits of floating point differ give the same bytes, never 0. */
function round(score: number, least = LEAST): number {
  return Math.max(least, Math.round(score * SCORE_FACTOR) / SCORE_FACTOR);
}
