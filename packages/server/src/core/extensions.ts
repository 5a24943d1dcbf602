/** The extensions beyond OXP 1.0 (docs/protocol.md 9): their ids, the `OXP-Extensions` header, and the list's pages. */
import type { ToolDefinition } from "@otc/types";
import * as base64url from "jose/base64url";
import { WireError } from "./errors.js";

/** The extensions this server implements, in the order an answer names them. */
export const EXTENSIONS = ["annotations", "tasks", "pagination", "search", "cache", "oauth", "connections"] as const;

/** One extension's id. */
export type ExtensionId = (typeof EXTENSIONS)[number];

/** The extensions a request asked for and the server applies; empty for an OXP 1.0 request. */
export type ExtensionSet = ReadonlySet<ExtensionId>;

const NONE: ExtensionSet = new Set();
const KNOWN: ReadonlySet<string> = new Set(EXTENSIONS);

/**
 * The extensions an `OXP-Extensions` header asks for among those `offered` (docs/protocol.md 9.1,
 * `[extensions.negotiation]`): comma-separated ids, case-insensitive, spaces around them ignored, ids the
 * server does not know or offer ignored. Several header lines arrive joined with commas, as HTTP joins them.
 */
export function requestedExtensions(header: string | undefined, offered: ExtensionSet): ExtensionSet {
  if (header === undefined || offered.size === 0) {
    return NONE;
  }
  let asked: Set<ExtensionId> | undefined;
  for (const item of header.split(",")) {
    const id = item.trim().toLowerCase();
    if (KNOWN.has(id) && offered.has(id as ExtensionId)) {
      asked ??= new Set();
      asked.add(id as ExtensionId);
    }
  }
  return asked ?? NONE;
}

/** The `OXP-Extensions` value naming `applied`, in the server's order; undefined when none applied. */
export function appliedHeader(applied: Iterable<ExtensionId>): string | undefined {
  const set = new Set(applied);
  const names = EXTENSIONS.filter((id) => set.has(id));
  return names.length > 0 ? names.join(", ") : undefined;
}

/** The page size when a paginated request names none. */
export const DEFAULT_PAGE_LIMIT = 100;
/** The largest page a request may ask for. */
export const MAX_PAGE_LIMIT = 1000;

/** What a paginated `GET /tools` asks for: its query parameters, as sent. */
export interface PageQuery {
  limit?: string | null;
  cursor?: string | null;
  toolkit?: string | null;
}

/** What a cursor carries: where the next page starts, for which catalog and which toolkit filter. */
interface CursorState {
  /** The catalog's ETag, without quotes: a cursor is good for that catalog only. */
  e: string;
  /** The index of the first tool of the next page, among the tools the filter keeps. */
  o: number;
  /** The toolkit filter the first page was asked with, if any. */
  t?: string;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

const startOver = (why: string) =>
  new WireError("bad_request", "This cursor cannot be used: list the tools again from the first page", {
    developerMessage: why,
  });

/**
 * One page of the list (docs/protocol.md 9.4): the tools the `toolkit` filter keeps, from the cursor's place,
 * at most `limit` of them, and the cursor of the next page when more follow. A malformed limit, a cursor that
 * is not one of this catalog's, or one asked with another toolkit filter: a 400.
 */
export function pageOf(
  definitions: readonly ToolDefinition[],
  etag: string,
  query: PageQuery,
): { items: ToolDefinition[]; next_cursor?: string } {
  const limit = parseLimit(query.limit);
  const toolkit = query.toolkit ?? undefined;
  if (toolkit !== undefined && !/^[A-Za-z0-9_]{1,128}$/.test(toolkit)) {
    throw new WireError("bad_request", "The toolkit filter is not a toolkit name", {
      developerMessage: "A toolkit name is 1 to 128 letters, digits or '_', as in the tool id 'Toolkit.Tool'.",
    });
  }
  const catalog = etag.replace(/"/g, "");
  let offset = 0;
  if (query.cursor !== undefined && query.cursor !== null) {
    const state = readCursor(query.cursor);
    if (state.e !== catalog) {
      throw startOver("The cursor was made for another version of the catalog, which has changed since.");
    }
    if ((state.t ?? undefined) !== toolkit) {
      throw startOver("The cursor was made with another toolkit filter; ask every page with the same one.");
    }
    offset = state.o;
  }
  const kept =
    toolkit === undefined ? definitions : definitions.filter((definition) => definition.id.startsWith(`${toolkit}.`));
  const items = kept.slice(offset, offset + limit);
  const next = offset + items.length;
  if (next >= kept.length) {
    return { items };
  }
  const state: CursorState = toolkit === undefined ? { e: catalog, o: next } : { e: catalog, o: next, t: toolkit };
  return { items, next_cursor: base64url.encode(JSON.stringify(state)) };
}

function parseLimit(limit: string | null | undefined): number {
  if (limit === undefined || limit === null) {
    return DEFAULT_PAGE_LIMIT;
  }
  const value = /^[0-9]{1,4}$/.test(limit) ? Number(limit) : Number.NaN;
  if (!(value >= 1 && value <= MAX_PAGE_LIMIT)) {
    throw new WireError("bad_request", `The page limit must be a whole number from 1 to ${MAX_PAGE_LIMIT}`, {
      developerMessage: `limit=${limit.slice(0, 32)} is not one; leave it out for pages of ${DEFAULT_PAGE_LIMIT}.`,
    });
  }
  return value;
}

/**
 * A cursor's JSON, decoded from its base64url (pages and searches make theirs alike); undefined for anything that
 * is not one: too long, not base64url, not UTF-8 or not JSON.
 */
export function decodeCursor(cursor: string): unknown {
  if (cursor.length > 1024 || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    return undefined;
  }
  try {
    return JSON.parse(utf8.decode(base64url.decode(cursor)));
  } catch {
    return undefined;
  }
}

function readCursor(cursor: string): CursorState {
  const state = decodeCursor(cursor);
  if (state === undefined) {
    throw startOver("The cursor is not one this server made.");
  }
  const { e, o, t } = (state ?? {}) as Partial<CursorState>;
  if (
    typeof e !== "string" ||
    typeof o !== "number" ||
    !Number.isSafeInteger(o) ||
    o < 0 ||
    (t !== undefined && typeof t !== "string")
  ) {
    throw startOver("The cursor is not one this server made.");
  }
  return t === undefined ? { e, o } : { e, o, t };
}
