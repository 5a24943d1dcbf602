/** The search extension's answers (docs/protocol.md 9.5): ranked pages of matches, definitions by id, and the toolkits. */
import type {
  ToolDefinition,
  ToolkitListResponse,
  ToolListResponse,
  ToolSearchItem,
  ToolSearchResponse,
} from "@otc/types";
import * as base64url from "jose/base64url";
import { ServerConfigError, shorten, WireError } from "./errors.js";
import { decodeCursor } from "./extensions.js";
import { sha256Base64url } from "./fingerprint.js";
import type { ListForm } from "./tool-definitions.js";
import { formSlot, type ToolRegistry } from "./tool-registry.js";
import { MAX_QUERY_LENGTH, MAX_QUERY_TERMS, searchTokens, ToolSearchIndex } from "./tool-search.js";

/** A search's page size when none is asked for. */
export const DEFAULT_SEARCH_LIMIT = 10;
/** The most matches one answer holds. */
export const MAX_SEARCH_LIMIT = 50;
/** The most ids one `ids=` request names. */
export const MAX_IDS = 100;

/** What the discovery document says of search (`[search.discovery]`). */
export const SEARCH_INFO = {
  max_limit: MAX_SEARCH_LIMIT,
  max_query_length: MAX_QUERY_LENGTH,
  max_terms: MAX_QUERY_TERMS,
  max_ids: MAX_IDS,
} as const;

/** How a tool author describes the toolkits of a catalog (`[search.toolkits]`), by toolkit name. */
export type ToolkitDescriptions = Readonly<Record<string, { readonly description: string }>>;

/** A search as its query parameters give it, unchecked. */
export interface SearchQuery {
  q: string;
  toolkit?: string | null;
  view?: string | null;
  limit?: string | null;
  cursor?: string | null;
}

/** Which of the catalog a request sees: its list form, and (for an access token) the ids it may call. */
export interface SearchScope {
  form: ListForm;
  /** The ids this caller may see; undefined for every tool. */
  visible?: ReadonlySet<string> | undefined;
  /** The ETag of the catalog this caller sees: a cursor is good for that catalog only. */
  catalogTag: string;
}

/** What a search cursor carries: the catalog, the query it was made for (as a digest), the next offset. */
interface SearchCursor {
  e: string;
  h: string;
  o: number;
}

const TOOLKIT_NAME = /^[A-Za-z0-9_]{1,128}$/;

const badRequest = (message: string, developerMessage: string) =>
  new WireError("bad_request", message, { developerMessage });
const searchAgain = (why: string) => badRequest("This cursor cannot be used: search again from the first page", why);

/**
 * The catalog's search index and the answers made from it. The index is built once, with the server, from every
 * definition with every field; answers take each definition in the form the request asked for.
 */
export class CatalogSearch {
  private readonly index: ToolSearchIndex;
  /** Each id's place in the registry's lists, which every form keeps in the same order. */
  private readonly places = new Map<string, number>();
  private readonly full: readonly ToolDefinition[];
  /** Toolkit name -> the `Toolkit.Tool` names it has, for `/toolkits`. */
  private readonly toolkitTools = new Map<string, Map<string, string[]>>();
  private allToolkits: ToolkitListResponse | undefined;
  /** Search items' JSON up to their score, by view and form (see {@link itemText}), by place. */
  private readonly itemTexts: string[][] = [];
  /** Definitions' JSON, by list form (the registry's `formSlot`), by place. */
  private readonly definitionTexts: string[][] = [];

  constructor(
    private readonly registry: ToolRegistry,
    private readonly descriptions: ToolkitDescriptions = {},
  ) {
    this.full = registry.list({ annotations: true, scopes: true });
    this.full.forEach((definition, place) => {
      this.places.set(definition.id, place);
      const [qualified = definition.id] = definition.id.split("@");
      const toolkit = qualified.slice(0, qualified.indexOf("."));
      const tools = this.toolkitTools.get(toolkit) ?? new Map<string, string[]>();
      tools.set(qualified, [...(tools.get(qualified) ?? []), definition.id]);
      this.toolkitTools.set(toolkit, tools);
    });
    for (const [name, entry] of Object.entries(descriptions)) {
      if (!this.toolkitTools.has(name)) {
        throw new ServerConfigError(`toolkits.${name} describes a toolkit that has no tools`);
      }
      const description = (entry as { description?: unknown } | undefined)?.description;
      if (typeof description !== "string" || description.length < 1 || description.length > 1000) {
        throw new ServerConfigError(`toolkits.${name}.description must be a string of 1 to 1000 characters`);
      }
    }
    this.index = new ToolSearchIndex(this.full);
  }

  /**
   * A page of the tools that match `query.q`, best first (`[search.query]`, `[search.view]`, `[search.compose]`): a
   * ToolSearchResponse as JSON text, made from each item's text (kept once made) and its score, not by stringifying.
   */
  search(query: SearchQuery, scope: SearchScope): string {
    const q = checkedQuery(query.q);
    const limit = searchLimit(query.limit);
    const view = query.view ?? "full";
    if (view !== "full" && view !== "summary") {
      throw badRequest("The view must be 'summary' or 'full'", `view=${shorten(view, 32)} is neither.`);
    }
    const toolkit = query.toolkit ?? undefined;
    if (toolkit !== undefined && !TOOLKIT_NAME.test(toolkit)) {
      throw badRequest(
        "The toolkit filter is not a toolkit name",
        "A toolkit name is 1 to 128 letters, digits or '_', as in the tool id 'Toolkit.Tool'.",
      );
    }
    const catalog = scope.catalogTag.replace(/"/g, "");
    // The cursor is bound to what made its page: the query, filter and view, by digest (a query is long).
    const digest = sha256Base64url(JSON.stringify([q, toolkit ?? null, view])).slice(0, 22);
    let offset = 0;
    if (query.cursor !== undefined && query.cursor !== null) {
      const state = readCursor(query.cursor);
      if (state.e !== catalog) {
        throw searchAgain("The cursor was made for another version of the catalog, which has changed since.");
      }
      if (state.h !== digest) {
        throw searchAgain("The cursor was made for another q, toolkit or view; ask every page with the same ones.");
      }
      offset = state.o;
    }
    const visible = scope.visible;
    const { matches, more } = this.index.page(q, {
      ...(toolkit === undefined ? {} : { toolkit }),
      ...(visible === undefined ? {} : { keep: (definition: ToolDefinition) => visible.has(definition.id) }),
      offset,
      limit,
    });
    const items = matches.map(
      ({ definition, score }) =>
        `${this.itemText(definition.id, view === "summary", scope.form.scopes === true)}${score}}`,
    );
    const text = `{"items":[${items.join(",")}]`;
    if (!more) {
      return `${text}}`;
    }
    const state: SearchCursor = { e: catalog, h: digest, o: offset + items.length };
    const answer: Pick<ToolSearchResponse, "next_cursor"> = { next_cursor: base64url.encode(JSON.stringify(state)) };
    return `${text},${JSON.stringify(answer).slice(1)}`;
  }

  /** A search item's JSON up to its score (`...,"score":`), in the form and view asked for: made once per tool. */
  private itemText(id: string, summary: boolean, scopes: boolean): string {
    const place = this.places.get(id) as number;
    return keptText(this.itemTexts, (summary ? 1 : 0) + (scopes ? 2 : 0), place, () => {
      const shown = this.registry.list({ annotations: true, scopes })[place] as ToolDefinition;
      const whole = JSON.stringify(searchItem(shown, 0, summary));
      if (!whole.endsWith(',"score":0}')) {
        throw new Error("a search item's score must be its last member");
      }
      return whole.slice(0, -"0}".length);
    });
  }

  /** The definitions `ids` names, in that order, each once (`[search.ids]`). */
  byIds(ids: string, scope: SearchScope): ToolListResponse {
    const listed = this.registry.list(scope.form);
    return { items: this.placesOf(ids, scope).map((place) => listed[place] as ToolDefinition) };
  }

  /**
   * {@link byIds}' answer as JSON text, byte for byte: made from each definition's text, kept once made (as the list's
   * body is made once), not by stringifying the definitions again for every request.
   */
  byIdsText(ids: string, scope: SearchScope): string {
    const { form } = scope;
    const slot = formSlot(form);
    const items = this.placesOf(ids, scope).map((place) =>
      keptText(this.definitionTexts, slot, place, () => JSON.stringify(this.registry.list(form)[place])),
    );
    return `{"items":[${items.join(",")}]}`;
  }

  /** The places of the definitions `ids` names, in that order, each once; a 400 naming those that name none. */
  private placesOf(ids: string, scope: SearchScope): number[] {
    const names = ids.split(",").map((id) => id.trim());
    if (names.length > MAX_IDS) {
      throw badRequest(`At most ${MAX_IDS} ids can be asked for at once`, `ids names ${names.length}.`);
    }
    const unknown: string[] = [];
    const seen = new Set<string>();
    const places: number[] = [];
    for (const name of names) {
      const lookup = name === "" ? undefined : this.registry.lookup(name);
      const id = lookup?.found ? lookup.registered.definition.id : undefined;
      if (id === undefined || (scope.visible !== undefined && !scope.visible.has(id))) {
        unknown.push(name);
        continue;
      }
      if (!seen.has(id)) {
        seen.add(id);
        places.push(this.places.get(id) as number);
      }
    }
    if (unknown.length > 0) {
      const quoted = unknown.slice(0, 10).map((name) => `'${shorten(name)}'`);
      const more = unknown.length > 10 ? ` and ${unknown.length - 10} more` : "";
      throw badRequest(
        "Some ids name no tool",
        `${quoted.join(", ")}${more} ${unknown.length === 1 ? "is" : "are"} not the id of a tool on this server.`,
      );
    }
    return places;
  }

  /** Every toolkit by name with its description and its number of tools (`[search.toolkits]`). */
  toolkits(visible?: ReadonlySet<string>): ToolkitListResponse {
    // Every caller without an access token gets the same answer: made once.
    if (visible === undefined) {
      this.allToolkits ??= this.toolkitsOf(undefined);
      return this.allToolkits;
    }
    return this.toolkitsOf(visible);
  }

  private toolkitsOf(visible: ReadonlySet<string> | undefined): ToolkitListResponse {
    const items: ToolkitListResponse["items"] = [];
    for (const name of [...this.toolkitTools.keys()].sort(byCodeUnit)) {
      const tools = this.toolkitTools.get(name) as Map<string, string[]>;
      const count = [...tools.values()].filter(
        (versions) => visible === undefined || versions.some((id) => visible.has(id)),
      ).length;
      if (count > 0) {
        const description = this.descriptions[name]?.description;
        items.push(description === undefined ? { name, tool_count: count } : { name, description, tool_count: count });
      }
    }
    return { items };
  }
}

/** A ToolSearchItem: the definition with its toolkit and score; in the summary view, without schemas or requirements. */
function searchItem(definition: ToolDefinition, score: number, summary: boolean): ToolSearchItem {
  const { id, name, input_schema, output_schema, requirements, ...rest } = definition;
  const toolkit = id.slice(0, id.indexOf("."));
  if (summary) {
    return { id, name, toolkit, ...rest, score };
  }
  return {
    id,
    name,
    toolkit,
    ...rest,
    input_schema,
    output_schema,
    ...(requirements === undefined ? {} : { requirements }),
    score,
  };
}

/** `q` once trimmed: 1 to 256 characters and at most 32 terms (`[search.bounds]`). */
function checkedQuery(raw: string): string {
  const q = raw.trim();
  const length = [...q].length;
  if (length < 1 || length > MAX_QUERY_LENGTH) {
    throw badRequest(
      `The query must be 1 to ${MAX_QUERY_LENGTH} characters`,
      length === 0 ? "q is empty once trimmed." : `q has ${length} characters.`,
    );
  }
  const terms = searchTokens(q).length;
  if (terms > MAX_QUERY_TERMS) {
    throw badRequest(`The query may have at most ${MAX_QUERY_TERMS} terms`, `q has ${terms}.`);
  }
  return q;
}

function searchLimit(limit: string | null | undefined): number {
  if (limit === undefined || limit === null) {
    return DEFAULT_SEARCH_LIMIT;
  }
  const value = /^[0-9]{1,3}$/.test(limit) ? Number(limit) : Number.NaN;
  if (!(value >= 1 && value <= MAX_SEARCH_LIMIT)) {
    throw badRequest(
      `The search limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}`,
      `limit=${shorten(limit, 32)} is not one; leave it out for ${DEFAULT_SEARCH_LIMIT} matches.`,
    );
  }
  return value;
}

function readCursor(cursor: string): SearchCursor {
  const { e, h, o } = (decodeCursor(cursor) ?? {}) as Partial<SearchCursor>;
  if (typeof e !== "string" || typeof h !== "string" || typeof o !== "number" || !Number.isSafeInteger(o) || o < 0) {
    throw searchAgain("The cursor is not one this server made.");
  }
  return { e, h, o };
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The text kept in `store` for `slot` and `place`, made by `make` the first time and kept: the catalog does not change under it. */
function keptText(store: string[][], slot: number, place: number, make: () => string): string {
  let texts = store[slot];
  if (texts === undefined) {
    texts = [];
    store[slot] = texts;
  }
  let text = texts[place];
  if (text === undefined) {
    text = make();
    texts[place] = text;
  }
  return text;
}
