/** The types and options of the client's methods for the search extension (docs/protocol.md 9.5): ranked search, tools by id, toolkits. */
import type { ToolDefinition, ToolSearchItem, ToolSearchResponse } from "@otc/types";
import type { CallOptions } from "./client.js";

/** How a search gives each match: `full`, its whole definition (the default), or `summary`, without schemas or requirements. */
export type ToolSearchView = "full" | "summary";

/**
 * A match in the summary view: what a model reads before it chooses (id, name, description, toolkit, version, score,
 * annotations and deprecation), without `input_schema`, `output_schema` or `requirements`. Load the definitions of
 * the ones picked with `getTools`.
 */
export type ToolSearchSummary = Omit<ToolSearchItem, "input_schema" | "output_schema" | "requirements">;

/** A match in the full view: a whole ToolDefinition (so the LLM adapters take it), with its toolkit and score. */
export type ToolSearchMatch = ToolDefinition & Pick<ToolSearchItem, "toolkit" | "score">;

/** A match as the view `V` gives it. */
export type ToolSearchHit<V extends ToolSearchView = "full"> = V extends "summary"
  ? ToolSearchSummary
  : ToolSearchMatch;

/** One page of a search, best first: a ToolSearchResponse whose items are typed by the view asked for. */
export interface ToolSearchResults<V extends ToolSearchView = "full"> extends Omit<ToolSearchResponse, "items"> {
  items: ToolSearchHit<V>[];
}

/** Options of {@link OxpClient.searchTools}. */
export interface SearchToolsOptions<V extends ToolSearchView = ToolSearchView> extends CallOptions {
  /** Only this toolkit's matches (matched exactly, case-sensitive). An unknown toolkit gives no matches. */
  toolkit?: string;
  /** `full` (the server's default) or `summary`. The type of the items follows it. */
  view?: V;
  /** The most matches on one page (a whole number; the server takes 1 to 50 and answers anything else with a 400). Default: the server's (10). */
  limit?: number;
  /** The `next_cursor` of the previous page, sent with the same query, toolkit and view (another is a 400). */
  cursor?: string;
}

/** Options of {@link OxpClient.iterateSearch}. */
export interface IterateSearchOptions<V extends ToolSearchView = ToolSearchView>
  extends Omit<SearchToolsOptions<V>, "cursor"> {
  /** The most pages asked for (a whole number, 1 or more). Default 1,000; past it an OxpProtocolError, as iterateTools. */
  maxPages?: number;
}

/** Options of {@link OxpClient.getTools}. */
export interface GetToolsOptions extends CallOptions {
  /** Ask for the annotations extension too, where the server offers it: each tool with its `annotations` and `deprecation_message`. */
  annotations?: boolean;
}

/** The most ids one `GET /tools?ids=` names when the discovery document gives no `extension_info.search.max_ids`. */
export const DEFAULT_MAX_IDS = 100;

/** The query of a search: a string with something besides spaces, or a RangeError (the server judges its length and terms). */
export function checkedQuery(q: unknown): string {
  if (typeof q !== "string" || q.trim() === "") {
    throw new RangeError(
      `A search needs a query with at least one character besides spaces (got ${JSON.stringify(q)})`,
    );
  }
  return q;
}

/**
 * The ids of a `getTools`, checked: strings, none empty, none with a comma (`ids=` is comma-separated, so `A,B` would
 * ask for two tools). Anything else is a RangeError naming it, before a request is sent.
 */
export function checkedIds(ids: unknown): string[] {
  if (!Array.isArray(ids)) {
    throw new RangeError("getTools takes an array of tool ids");
  }
  for (const id of ids) {
    if (typeof id !== "string" || id === "" || id.includes(",")) {
      throw new RangeError(
        `${JSON.stringify(id)} cannot be asked for as a tool id: ids are non-empty and have no comma`,
      );
    }
  }
  return ids as string[];
}

/** The most ids the server takes at once: its discovery document's `max_ids` where that is a whole number of 1 or more. */
export function maxIdsOf(maxIds: unknown): number {
  return Number.isSafeInteger(maxIds) && (maxIds as number) >= 1 ? (maxIds as number) : DEFAULT_MAX_IDS;
}

/** `ids` cut into runs of at most `size`, in order. */
export function chunks<T>(ids: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let start = 0; start < ids.length; start += size) {
    out.push(ids.slice(start, start + size));
  }
  return out;
}
