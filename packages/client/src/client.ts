/** The OXP client: health, discovery, tool lists (whole or by pages), search, calls with safe retries, tasks, authorization polling, connections. */
import {
  type CallStatus,
  type CallToolRequest,
  type CallToolResponse,
  type CallToolResultEnvelope,
  type ChallengeStatus,
  type Connection,
  type ConnectionFlow,
  type ConnectionListResponse,
  type ConnectionRequest,
  type DiscoveryDocument,
  ENVELOPE_SCHEMA,
  OXP_VERSION,
  type paths,
  type ToolAuthorizationChallenge,
  type ToolDefinition,
  type Toolkit,
  type ToolkitListResponse,
  type ToolListResponse,
  type ToolSearchResponse,
  WELL_KNOWN_OXP_PATH,
} from "@otc/types";
import createFetchClient from "openapi-fetch";
import { type AccessTokenProvider, withAccessToken } from "./access-token.js";
import { answers } from "./answers.js";
import {
  type AsyncCall,
  type AsyncCallOptions,
  type CallStatusOptions,
  followedCall,
  settledCall,
  type TaskRequests,
} from "./async-call.js";
import {
  type ConnectionOptions,
  type ConnectOptions,
  DEFAULT_POLL_INTERVAL_MS,
  pollIntervalOf,
  userQuery,
  type WaitForConnectionOptions,
} from "./connections.js";
import {
  errorFromResponse,
  OxpConnectionError,
  OxpCrossOriginError,
  OxpError,
  OxpExtensionUnavailableError,
  OxpProtocolError,
  OxpResponseError,
  OxpTimeoutError,
} from "./errors.js";
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  guardedFetch,
  originOf,
  outgoingRequest,
  RequestDraft,
  type SendRequest,
  sameOrigin,
} from "./guarded-fetch.js";
import { type ClientClock, runtimeClock, sleepOn } from "./internal/clock.js";
import { type JwtOptions, jwtSigner } from "./jwt.js";
import {
  checkedIds,
  checkedQuery,
  chunks,
  type GetToolsOptions,
  type IterateSearchOptions,
  maxIdsOf,
  type SearchToolsOptions,
  type ToolSearchHit,
  type ToolSearchResults,
  type ToolSearchView,
} from "./search.js";
import { normalizeToolDefinition } from "./tool-schemas.js";

/** How the client retries. */
export interface RetryOptions {
  /** Attempts in all, the first included. Default 3; 1 turns retries off. */
  maxAttempts?: number;
  /** The longest wait between attempts, in milliseconds. Default 10,000. */
  maxDelayMs?: number;
  /** The first backoff step when the server gives no hint, in milliseconds. Default 200. */
  baseDelayMs?: number;
}

/** Options of {@link createClient}. */
export interface ClientOptions {
  /** The Tool Server's base URL, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Sent in `OXP-API-Key`. */
  apiKey?: string;
  /** Sign HS256 JWTs (with a `sub`, the caller's identity) and send them as bearer tokens. */
  jwt?: JwtOptions;
  /**
   * An OAuth access token, or where they come from (an OAuth client library, stored sign-ins), sent as
   * `Authorization: Bearer <token>`. A provider is asked for each request (`reason: "initial"`: answer a cached token
   * at once), and once more after a 401 (`unauthorized`: refresh) or a 403 for too few scopes (`insufficient_scope`,
   * with the challenge's scopes: step up); the request is then sent again, once, unchanged. Not with `jwt` (both
   * would be the request's one Authorization header): a TypeError.
   *
   * @example
   * const client = createClient({ baseUrl, accessToken: async ({ reason }) => (reason === "initial" ? tokens.current() : tokens.refresh()) });
   */
  accessToken?: string | AccessTokenProvider;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /**
   * The fetch to use; default the global one. Tests pass their own to observe requests. It is given
   * Requests with `redirect: "manual"`: the client follows redirects itself, on the server's origin only.
   */
  fetch?: typeof fetch;
  /** Time limit of one attempt, in milliseconds. Default 60,000. */
  timeoutMs?: number;
  /**
   * The most bytes of one answer the client reads (decoded, after any gzip), in bytes. Default 16 MiB.
   * A longer answer is an OxpResponseTooLargeError, its reading stopped at the limit.
   */
  maxResponseBytes?: number;
  retry?: RetryOptions;
  /** `flat` (default) or `envelope`, the 1.0 draft's `{"request": ...}` form, for older servers. */
  wire?: "flat" | "envelope";
  /**
   * The server's discovery document, when the caller has read it already (another client of the same server
   * did): the client takes it for the server's answer to `GET /.well-known/oxp` and never asks. It uses the
   * extensions this document lists, and no other. A value that is not a DiscoveryDocument is a TypeError.
   *
   * @example
   * const discovery = await createClient({ baseUrl }).discover();
   * const client = createClient({ baseUrl, apiKey, discovery }); // asks for no discovery document
   */
  discovery?: DiscoveryDocument;
  /**
   * The clock the client waits on between attempts and between polls (a retry's backoff or `Retry-After`,
   * `waitForAuthorization`'s and `waitForConnection`'s intervals, an asynchronous call's reposts, reopened streams
   * and polls). Default: the runtime's timers and `Date.now()`. A test passes a clock it moves by hand instead of waiting those out
   * (`@otc/test-helpers`' ManualClock, or the one given to `@otc/server`). Time limits (`timeoutMs`, a quiet event
   * stream's) stay on the runtime's timers.
   *
   * @example
   * const clock = new ManualClock();
   * const client = createClient({ baseUrl, clock });
   * const calling = client.callTool(request); // answered 503, Retry-After: 1
   * await clock.untilPending(1); // the client waits before its next attempt
   * await clock.advance(1_000);
   */
  clock?: ClientClock;
}

/** Options of one call. */
export interface CallOptions {
  /** Aborts the call, waiting between attempts included. */
  signal?: AbortSignal;
}

/** Options of {@link OxpClient.listTools} and {@link OxpClient.readToolList}. */
export interface ListToolsOptions extends CallOptions {
  /**
   * Ask for the annotations extension (docs/protocol.md 9.2): each tool with its `annotations` and
   * `deprecation_message` where it has them. Asked only of a server whose discovery document lists it;
   * another server's tools come as OXP 1.0 lists them, without either field.
   */
  annotations?: boolean;
  /**
   * Ask for the oauth extension (docs/protocol.md 9.6): each tool with its `required_scopes`, the scopes an OAuth
   * access token must hold to call it, where it has some. Asked only of a server whose discovery document lists it;
   * another server's tools come without the field.
   */
  requiredScopes?: boolean;
}

/**
 * The whole tool list as {@link OxpClient.readToolList} answers it: the definitions, and where the server offers the
 * cache extension (docs/protocol.md 9.9) how long the list may be reused (`ttl_ms`) and by whom (`cache_scope`).
 */
export type ToolList = Pick<ToolListResponse, "items" | "ttl_ms" | "cache_scope">;

/** Options of {@link OxpClient.iterateTools}. */
export interface IterateToolsOptions extends ListToolsOptions {
  /**
   * The most tools the server puts on one page (a whole number; the server takes 1 to 1000 and answers
   * anything else with a 400). Default: the server's (100). Moot for a server without pagination.
   */
  limit?: number;
  /** Only this toolkit's tools: those whose id starts with `toolkit.`, matched exactly (case-sensitive). */
  toolkit?: string;
  /**
   * The most pages asked for (a whole number, 1 or more). Default 1,000: 100,000 tools at the server's default
   * page size. A catalog with more pages throws an OxpProtocolError naming this bound, after the tools read so
   * far were yielded, so a server that sends new cursors forever cannot keep the client asking.
   */
  maxPages?: number;
}

/** The default of {@link IterateToolsOptions.maxPages}. */
const DEFAULT_MAX_TOOL_PAGES = 1_000;

/** Options of {@link OxpClient.followCall}. */
export type FollowCallOptions = Omit<AsyncCallOptions, "waitSeconds">;

/** The health of a server. */
export interface Health {
  /** True when the server answered 200. */
  healthy: boolean;
  /** The HTTP status (503 while starting or draining). */
  status: number;
}

/** An OXP client. */
export interface OxpClient {
  /** GET /health. Never throws for a 503; throws OxpConnectionError / OxpTimeoutError when nothing answers. */
  health(options?: CallOptions): Promise<Health>;
  /**
   * GET /.well-known/oxp: the OXP versions the server speaks and the extensions it applies (docs/protocol.md
   * 9.1). A server without it (404) is an OXP 1.0 server without extensions: `{ oxp_versions: ["1.0"],
   * extensions: [] }`. The first such answer is kept for the client's life; anything else is thrown as
   * listTools throws it, and asked again next time. The document is read up to 64 KiB. A client given
   * `discovery` answers that document, asking nothing.
   *
   * @example
   * const { extensions } = await client.discover(); // ["annotations", "pagination"]
   */
  discover(options?: CallOptions): Promise<DiscoveryDocument>;
  /**
   * GET /tools, every definition in the flat form (an older `{"parameters": ...}` input_schema is unwrapped).
   * Throws like callTool: an OxpResponseError for an error the server answered, an OxpLocalError otherwise.
   * Without options the request is OXP 1.0's; `annotations: true` or `requiredScopes: true` discovers the server's
   * extensions first.
   *
   * @example
   * const tools = await client.listTools({ annotations: true });
   * const readOnly = tools.filter((tool) => tool.annotations?.read_only === true);
   */
  listTools(options?: ListToolsOptions): Promise<ToolDefinition[]>;
  /**
   * GET /tools as listTools reads it (the same options, checks and retries), with what the server says of keeping the
   * list: where its discovery document lists the cache extension (docs/protocol.md 9.9) the request asks for it too,
   * and the answer carries `ttl_ms` (how long the list may be reused, in milliseconds) and `cache_scope` (`public`:
   * every caller gets this list; `private`: it is this caller's). A server that does not offer `cache` is not asked
   * for it, and its list comes without either field. A field that breaks the spec (a negative `ttl_ms`, another
   * scope) makes the answer an OxpProtocolError, as any body that is not a ToolListResponse.
   *
   * @example
   * const { items, ttl_ms = 0, cache_scope = "private" } = await client.readToolList({ requiredScopes: true });
   * const keptUntil = Date.now() + ttl_ms; // shared between callers only when cache_scope is "public"
   */
  readToolList(options?: ListToolsOptions): Promise<ToolList>;
  /**
   * Every tool of the catalog (or of one toolkit), page by page, following `next_cursor` (docs/protocol.md
   * 9.4). A server whose discovery document does not list pagination is asked for its whole list once, and
   * `toolkit` is applied here. Each page is retried as listTools is; a catalog that changes while it is read
   * makes the server refuse the next cursor (an OxpServerError saying to list again from the first page).
   * A server whose pages never end throws an OxpProtocolError instead of being asked forever: a page without
   * tools or that gives back its own cursor, a `next_cursor` given before (a cycle), or more than `maxPages`
   * pages (default 1,000).
   *
   * @example
   * for await (const tool of client.iterateTools({ toolkit: "Calculator", limit: 50 })) console.log(tool.id);
   */
  iterateTools(options?: IterateToolsOptions): AsyncGenerator<ToolDefinition, void, undefined>;
  /**
   * GET /tools?q= (the search extension, docs/protocol.md 9.5): one page of the tools that match `q`, best first, each
   * with its `toolkit` and `score`, and `next_cursor` when more follow. `view: "summary"` leaves out the schemas and
   * requirements (the items' type says so); the default, `full`, gives whole definitions. No match: no items. A server
   * whose discovery document does not list `search` gets nothing but discovery: an OxpExtensionUnavailableError, never
   * its whole list in place of matches. An empty query is a RangeError, sent nowhere; the server judges the rest (a
   * query past 256 characters or 32 terms, a limit past 50, a cursor of another search: an OxpServerError, 400).
   * Retried as listTools is.
   *
   * @example
   * const { items } = await client.searchTools("send an email", { view: "summary", limit: 5 });
   * const [best] = await client.getTools(items.slice(0, 1).map((match) => match.id));
   */
  searchTools<V extends ToolSearchView = "full">(
    q: string,
    options?: SearchToolsOptions<V>,
  ): Promise<ToolSearchResults<V>>;
  /**
   * Every match of a search, best first, following `next_cursor` page by page as iterateTools follows a list's (with
   * its guards against pages that never end, and `maxPages`). Throws as searchTools does.
   *
   * @example
   * for await (const match of client.iterateSearch("email", { toolkit: "Gmail", view: "summary" })) console.log(match.score, match.id);
   */
  iterateSearch<V extends ToolSearchView = "full">(
    q: string,
    options?: IterateSearchOptions<V>,
  ): AsyncGenerator<ToolSearchHit<V>, void, undefined>;
  /**
   * GET /tools?ids= (the search extension): the definitions of `ids`, in the order asked, each id resolved as a call's
   * `tool_id` is (`A` the latest version, `A@2` exactly 2.0.0), each definition once (the first time it is named).
   * More ids than the server takes at once (`extension_info.search.max_ids`, 100) are asked in several requests, one
   * after the other, and put back in order. An id that names no tool makes the server answer 400: an OxpServerError
   * whose `developerMessage` names the unknown ids (of the first request that had one). An id that is empty or holds
   * a comma is a RangeError, sent nowhere; no ids resolve to `[]` without a request. A server without `search`: an
   * OxpExtensionUnavailableError. `annotations: true` asks for the annotated definitions where the server offers them.
   *
   * @example
   * const [send, list] = await client.getTools(["Gmail.SendEmail", "Gmail.ListEmails@1"]);
   */
  getTools(ids: readonly string[], options?: GetToolsOptions): Promise<ToolDefinition[]>;
  /**
   * GET /toolkits (the search extension): each toolkit of the catalog, by name, with the description the server's
   * configuration gives it and its number of tools (a tool's versions count once). A server without `search`: an
   * OxpExtensionUnavailableError. Retried as listTools is.
   *
   * @example
   * for (const { name, tool_count } of await client.listToolkits()) console.log(`${name}: ${tool_count} tools`);
   */
  listToolkits(options?: CallOptions): Promise<Toolkit[]>;
  /**
   * POST /tools/call. Resolves with the CallToolResponse, also when the tool failed (`success: false`).
   * Throws what the server answered, an OxpResponseError: OxpServerError (400, or 503 after the last
   * attempt), OxpAuthenticationError (401), OxpForbiddenError (403), OxpValidationError (422); or a local OxpLocalError:
   * OxpConnectionError / OxpTimeoutError after the last attempt, OxpProtocolError for an answer that
   * breaks the spec. Retries keep the same call_id.
   */
  callTool(request: CallToolRequest, options?: CallOptions): Promise<CallToolResponse>;
  /**
   * POST /tools/call as a task (the tasks extension, docs/protocol.md 9.3): resolves once the server accepted
   * the call (202), with a handle to follow its progress, read its result or cancel it. A call that ends within
   * `waitSeconds`, and every call to a server whose discovery document does not list `tasks` (an OXP 1.0
   * server), is answered in its own request as by `callTool`: the handle is then settled (`task: false`),
   * `progress` yields nothing, `result()` resolves at once. Throws what `callTool` throws (400, 401, 422 are
   * never a 202), and retries as it does, with the same call_id.
   *
   * @example
   * const call = await client.callToolAsync({ tool_id: "System.Sleep", input: { ms: 3000 } });
   * for await (const { progress, total } of call.progress) console.log(`${progress}/${total ?? "?"}`);
   * const response = await call.result(); // or: await call.cancel()
   */
  callToolAsync(request: CallToolRequest, options?: AsyncCallOptions): Promise<AsyncCall>;
  /**
   * A handle on a call started earlier with the same credentials (only its principal can see it), by its
   * call_id: reads its status first, so an unknown id throws an OxpServerError (404) here. Throws an
   * OxpExtensionUnavailableError where the server does not offer `tasks`. Its handle does not post the call
   * again after a retryable failure: it has no request to post.
   */
  followCall(callId: string, options?: FollowCallOptions): Promise<AsyncCall>;
  /**
   * GET /tools/calls/{call_id}: the call's CallStatus; `waitSeconds` makes it a long poll. Another principal's
   * call, an unknown or an expired id: an OxpServerError (404). A server without `tasks`: an
   * OxpExtensionUnavailableError, nothing sent.
   */
  callStatus(callId: string, options?: CallStatusOptions): Promise<CallStatus>;
  /**
   * DELETE /tools/calls/{call_id}: cancels a running call; resolves to its final CallStatus (`cancelled`, or
   * the status it had ended with). Throws as callStatus does.
   */
  cancelCall(callId: string, options?: CallOptions): Promise<CallStatus>;
  /**
   * GET a challenge's check_url once. A check_url on another origin than the server's is an
   * OxpCrossOriginError and is never requested: polling sends the server's credentials.
   */
  checkAuthorization(challenge: ToolAuthorizationChallenge, options?: CallOptions): Promise<ChallengeStatus>;
  /** Polls a challenge's check_url until it is completed or failed (or the signal aborts). */
  waitForAuthorization(
    challenge: ToolAuthorizationChallenge,
    options?: CallOptions & { intervalMs?: number },
  ): Promise<Exclude<ChallengeStatus, "pending">>;
  /**
   * GET /connections (the connections extension, docs/protocol.md 9.7): the user's connections to third-party
   * providers, newest first, none with a token. The user is the OAuth access token's subject, else `userId`, which a
   * trusted caller must give (an OxpServerError, 400, without). A server whose discovery document does not list
   * `connections`: an OxpExtensionUnavailableError, nothing sent. Retried as listTools is.
   *
   * @example
   * const connections = await client.listConnections({ userId: "alice" });
   * const active = connections.filter((connection) => connection.status === "active");
   */
  listConnections(options?: ConnectionOptions): Promise<Connection[]>;
  /**
   * POST /connections: starts connecting the user's account at `provider`, resolving with the pending flow. The user
   * opens its `url` (the provider's authorization page) in a browser that the server recognises as theirs; the flow's
   * check_url says when it is done (waitForConnection). An unknown provider, too many connections or no user: an
   * OxpServerError (400). Retried only after a 429 or 503 (the server started nothing): a request that may have
   * reached the server is not sent again, since each one starts a flow. Throws as listConnections does otherwise.
   *
   * @example
   * const flow = await client.connect({ provider: "google", scopes: ["gmail.readonly"], userId: "alice" });
   * sendToUser(flow.url);
   * if ((await client.waitForConnection(flow)) === "completed") console.log(`connected as ${flow.id}`);
   */
  connect(options: ConnectOptions): Promise<ConnectionFlow>;
  /**
   * Polls a flow's check_url, as waitForAuthorization polls a challenge's, until the user completed the connection
   * or it failed (denied at the provider, another user's browser, expired); rejects when the signal aborts. The
   * check_url must be on the server's origin (an OxpCrossOriginError, never requested, otherwise).
   */
  waitForConnection(
    flow: ConnectionFlow,
    options?: WaitForConnectionOptions,
  ): Promise<Exclude<ChallengeStatus, "pending">>;
  /**
   * DELETE /connections/{connection_id}: revokes the connection's tokens at the provider (where it can) and deletes
   * it. An unknown id, or another user's connection: an OxpServerError (404), except on a retry after an answer that
   * was lost (that attempt may have deleted it). Throws as listConnections does.
   */
  disconnect(connectionId: string, options?: ConnectionOptions): Promise<void>;
}

/** What one attempt ended in: an answer to return, or a reason to try again after a wait. */
type Attempt<T> = { done: T } | { retry: Error; waitMs?: number };

/** The most bytes of a discovery document the client reads: a few ids, far below any answer's limit. */
const MAX_DISCOVERY_BYTES = 64 * 1024;

/**
 * openapi-fetch's `Request` option: it makes RequestDrafts, which the client's fetch reads, instead of Requests that
 * would be built only to be read back (it uses none of a Request's own features: no middleware is registered).
 */
const DRAFTS = RequestDraft as unknown as typeof Request;

/** What a server without discovery speaks: OXP 1.0, and no extension (docs/protocol.md 9.1). */
const OXP_1_0_ONLY: DiscoveryDocument = { oxp_versions: [OXP_VERSION], extensions: [] };

/** The extensions this client can ask for, in no particular order: a request names them in the server's. */
type ClientExtension = "annotations" | "cache" | "connections" | "oauth" | "pagination" | "search" | "tasks";

/** The extensions a list's options ask for (each where the server offers it): `annotations`, and `oauth` for scopes. */
function listExtensionsOf(options: ListToolsOptions): ClientExtension[] {
  const wanted: ClientExtension[] = [];
  if (options.annotations) {
    wanted.push("annotations");
  }
  if (options.requiredScopes) {
    wanted.push("oauth");
  }
  return wanted;
}

/** The longest `Prefer: wait=N` the protocol allows, in seconds (docs/protocol.md 9.3). */
export const MAX_WAIT_SECONDS = 30;

/** The least time a quiet event stream is given before it counts as dropped: twice the server's default keep-alive. */
const MIN_STREAM_IDLE_MS = 30_000;

/** What one POST /tools/call came to: the response (200), or, asked as a task, the 202's status. */
type CallAnswer = { response: CallToolResponse } | { accepted: CallStatus };

/** A `Prefer: wait=N` value: a whole number of seconds from 0 to 30, or a RangeError naming the option `name`. */
function waitSecondsOf(value: number | undefined, name = "waitSeconds"): number | undefined {
  if (value !== undefined && !(Number.isInteger(value) && value >= 0 && value <= MAX_WAIT_SECONDS)) {
    throw new RangeError(`${name} must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS} (got ${value})`);
  }
  return value;
}

/**
 * An id that a path can name (`what` says which in the error: `call_id` by default). `.` and `..` cannot: URLs resolve
 * them (escaped too) as dot segments, and the request would reach another path.
 */
function checkedCallId(callId: string, what = "call_id"): string {
  if (typeof callId !== "string" || callId === "" || callId === "." || callId === "..") {
    throw new RangeError(`${what} ${JSON.stringify(callId)} cannot be named in a URL path`);
  }
  return callId;
}

/** A `maxPages` of iterateTools or iterateSearch: a whole number of pages, 1 or more, or a RangeError. */
function checkedMaxPages(maxPages: number): void {
  if (!(Number.isSafeInteger(maxPages) && maxPages >= 1)) {
    throw new RangeError(`maxPages must be a whole number of pages, 1 or more (got ${maxPages})`);
  }
}

/** The query parameters of one search request. */
interface SearchQuery {
  q: string;
  toolkit?: string;
  view?: ToolSearchView;
  limit?: number;
  cursor?: string;
}

/**
 * A search's query parameters but its cursor, checked before anything is sent: a query with something besides spaces,
 * a whole `limit` of 1 or more (the server judges its upper bound), a `view` that is `full` or `summary`.
 */
function searchQuery(q: string, options: Omit<SearchToolsOptions, "cursor">): SearchQuery {
  const { toolkit, view, limit } = options;
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1)) {
    throw new RangeError(`limit must be a whole number of matches, 1 or more (got ${limit})`);
  }
  if (view !== undefined && view !== "full" && view !== "summary") {
    throw new RangeError(`view must be "full" or "summary" (got ${JSON.stringify(view)})`);
  }
  return {
    q: checkedQuery(q),
    ...(toolkit !== undefined ? { toolkit } : {}),
    ...(view !== undefined ? { view } : {}),
    ...(limit !== undefined ? { limit } : {}),
  };
}

/**
 * The JSON of a success's body. openapi-fetch is asked for text so that a body that is not JSON is
 * an OxpProtocolError carrying the answer's status, not a bare SyntaxError thrown before it is known.
 */
function json(text: string | undefined, response: Response, what: string): unknown {
  if (text === undefined || text === "") {
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new OxpProtocolError(`${what} answered a body that is not JSON`, response.status, text.slice(0, 200));
  }
}

/** The wait a 429/503 asks for: `retry-after-ms`, or `Retry-After` in seconds or as a date (from `now`, epoch ms). */
function retryAfter(headers: Headers, now: number): number | undefined {
  const ms = Number(headers.get("retry-after-ms"));
  if (headers.has("retry-after-ms") && Number.isFinite(ms) && ms >= 0) {
    return ms;
  }
  const value = headers.get("retry-after");
  if (value === null) {
    return undefined;
  }
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) {
    return seconds * 1000;
  }
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/**
 * Creates a client for one Tool Server. Every request sends `OXP-Version: 1.0`. Credentials and
 * bodies go to the server's origin only: a redirect elsewhere is an OxpCrossOriginError, not followed.
 *
 * @example
 * const client = createClient({ baseUrl: "http://127.0.0.1:8080", apiKey: process.env.OXP_API_KEY });
 * const response = await client.callTool({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
 * if (response.success) console.log(response.value);
 */
export function createClient(options: ClientOptions): OxpClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  if (!(Number.isInteger(maxResponseBytes) && maxResponseBytes > 0)) {
    throw new RangeError("maxResponseBytes must be a positive whole number of bytes");
  }
  if (options.accessToken !== undefined && options.jwt !== undefined) {
    throw new TypeError("accessToken and jwt cannot both be given: each is sent as the request's bearer token");
  }
  const { accessToken } = options;
  if (accessToken !== undefined && typeof accessToken !== "string" && typeof accessToken !== "function") {
    throw new TypeError("accessToken must be a token (a string) or a function giving one");
  }
  // A fetch given is handed Requests, as documented; the global one is given the URL and init, and builds its own.
  const given = options.fetch;
  const network: SendRequest = given ? (url, init) => given(new Request(url, init)) : globalThis.fetch;
  // Each request is read once, at the way in (its body as bytes), and sent from there. Outside the guard: one token
  // per request, whatever redirects it follows, and a request refused for its token is sent again through the guard
  // whole.
  const through = (maxBytes: number) => {
    const guard = guardedFetch(network, { maxResponseBytes: maxBytes });
    const send = accessToken === undefined ? guard : withAccessToken(guard, accessToken);
    return async (request: Request | RequestDraft) => send(await outgoingRequest(request));
  };
  const guarded = through(maxResponseBytes);
  // An event stream lasts as long as its call: its events are bounded one by one (maxResponseBytes), not in all.
  const streamFetch = through(Number.POSITIVE_INFINITY);
  // "manual": fetch would follow a redirect anywhere, resending the credentials and the call's body.
  const api = createFetchClient<paths>({ baseUrl, fetch: guarded, redirect: "manual", Request: DRAFTS });
  // Discovery has a limit of its own: its document lists a few ids, and no server makes it cost 16 MiB.
  const discoveryApi = createFetchClient<paths>({
    baseUrl,
    fetch: through(Math.min(maxResponseBytes, MAX_DISCOVERY_BYTES)),
    redirect: "manual",
    Request: DRAFTS,
  });
  /** The server's discovery document, once it answered one (or a 404), or the one given: kept for the client's life. */
  let discovered: DiscoveryDocument | undefined;
  if (options.discovery !== undefined) {
    if (!answers.discoveryDocument(options.discovery)) {
      throw new TypeError(`discovery is not a DiscoveryDocument: ${answers.discoveryDocument.why()}`);
    }
    // A copy: the caller's object is theirs to change.
    discovered = structuredClone(options.discovery);
  }
  const timeoutMs = options.timeoutMs ?? 60_000;
  const maxAttempts = Math.max(1, Math.floor(options.retry?.maxAttempts ?? 3));
  const maxDelayMs = options.retry?.maxDelayMs ?? 10_000;
  const baseDelayMs = options.retry?.baseDelayMs ?? 200;
  const clock = options.clock ?? runtimeClock;
  const signJwt = options.jwt ? jwtSigner(options.jwt) : undefined;
  const envelope = options.wire === "envelope";

  const headers = async (): Promise<Record<string, string>> => {
    const out: Record<string, string> = { ...options.headers, "OXP-Version": OXP_VERSION };
    if (options.apiKey !== undefined) {
      out["OXP-API-Key"] = options.apiKey;
    }
    if (signJwt) {
      out.Authorization = `Bearer ${await signJwt()}`;
    }
    return out;
  };

  /** Exponential backoff with jitter: between half and all of base * 2^(attempt - 1), capped. */
  const backoff = (attempt: number) => {
    const cap = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    return cap / 2 + Math.random() * (cap / 2);
  };

  /**
   * Runs one request with the attempt's time limit (plus `heldMs`, the time the request asks the server to hold
   * its answer); turns fetch's failures into the client's errors.
   */
  async function send<T>(
    run: (signal: AbortSignal) => Promise<T>,
    signal: AbortSignal | undefined,
    heldMs = 0,
  ): Promise<T> {
    const limitMs = timeoutMs + heldMs;
    const timeout = AbortSignal.timeout(limitMs);
    const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
    try {
      return await run(combined);
    } catch (error) {
      if (signal?.aborted) {
        throw signal.reason;
      }
      if (timeout.aborted) {
        throw new OxpTimeoutError(`No answer within ${limitMs} ms`);
      }
      if (error instanceof OxpError) {
        throw error;
      }
      throw new OxpConnectionError(
        `Could not reach ${baseUrl}: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  /**
   * Repeats `attempt` while it asks to, up to maxAttempts, waiting as told or backing off. A connection failure or a
   * timeout is retried too, unless `unanswered` is false: a request that is not safe to repeat may have reached the
   * server.
   */
  async function withRetries<T>(
    attempt: (signal: AbortSignal | undefined) => Promise<Attempt<T>>,
    signal?: AbortSignal,
    unanswered = true,
  ) {
    for (let n = 1; ; n++) {
      let outcome: Attempt<T>;
      try {
        outcome = await attempt(signal);
      } catch (error) {
        const lost = error instanceof OxpConnectionError || error instanceof OxpTimeoutError;
        if (!lost || !unanswered || n >= maxAttempts) {
          throw error;
        }
        outcome = { retry: error };
      }
      if ("done" in outcome) {
        return outcome.done;
      }
      if (n >= maxAttempts) {
        throw outcome.retry;
      }
      await sleepOn(clock, Math.min(maxDelayMs, outcome.waitMs ?? backoff(n)), signal);
    }
  }

  /** An answer that is not a success: the typed error, or a retry for 429 and 503 (never 400, 401, 422). */
  function failure<T>(response: Response, body: unknown): Attempt<T> {
    const error = errorFromResponse(response.status, body, response.headers);
    if (response.status === 429 || response.status === 503) {
      return { retry: error, waitMs: retryAfter(response.headers, clock.now()) };
    }
    throw error;
  }

  /** GET /.well-known/oxp once; a 404 is OXP 1.0 without extensions. */
  async function discover(signal: AbortSignal | undefined): Promise<DiscoveryDocument> {
    if (discovered) {
      return discovered;
    }
    const document = await withRetries(async (retrySignal) => {
      const { data, error, response } = await send(
        async (attemptSignal) =>
          discoveryApi.GET(WELL_KNOWN_OXP_PATH, { headers: await headers(), signal: attemptSignal, parseAs: "text" }),
        retrySignal,
      );
      if (response.status === 404) {
        return { done: OXP_1_0_ONLY };
      }
      if (!response.ok) {
        return failure<DiscoveryDocument>(response, error);
      }
      const body = json(data, response, `GET ${WELL_KNOWN_OXP_PATH}`);
      if (!answers.discoveryDocument(body)) {
        throw new OxpProtocolError(
          `GET ${WELL_KNOWN_OXP_PATH} answered a body that is not a DiscoveryDocument`,
          response.status,
          answers.discoveryDocument.why(),
        );
      }
      return { done: body as DiscoveryDocument };
    }, signal);
    discovered ??= document;
    return discovered;
  }

  /**
   * Of the extensions `wanted`, those the server's discovery document lists, in its order: a client asks for
   * an extension only where the server offers it. A server that answers discovery with anything but a
   * DiscoveryDocument or a 404 (an error status, a body of another shape) gets this request as OXP 1.0: the
   * extensions are optional, its tool list is not. Connection failures, timeouts and aborts are thrown.
   */
  async function negotiate(
    wanted: readonly ClientExtension[],
    signal: AbortSignal | undefined,
  ): Promise<ClientExtension[]> {
    if (wanted.length === 0) {
      return [];
    }
    let offered: readonly string[];
    try {
      offered = (await discover(signal)).extensions;
    } catch (error) {
      if (error instanceof OxpResponseError || error instanceof OxpProtocolError) {
        return [];
      }
      throw error;
    }
    return offered.filter((id): id is ClientExtension => (wanted as readonly string[]).includes(id));
  }

  /**
   * One GET /tools: the list, or one page of it. Without extensions and query it is OXP 1.0's request, byte
   * for byte; with them, it names them in `OXP-Extensions`.
   */
  async function getToolList(
    extensions: readonly ClientExtension[],
    query: { limit?: number; cursor?: string; toolkit?: string; ids?: string } | undefined,
    signal: AbortSignal | undefined,
  ): Promise<ToolListResponse> {
    return withRetries(async (retrySignal) => {
      const { data, error, response } = await send(async (attemptSignal) => {
        const requestHeaders = await headers();
        if (extensions.length > 0) {
          requestHeaders["OXP-Extensions"] = extensions.join(", ");
        }
        return api.GET("/tools", {
          headers: requestHeaders,
          signal: attemptSignal,
          parseAs: "text",
          ...(query ? { params: { query } } : {}),
        });
      }, retrySignal);
      if (!response.ok) {
        return failure(response, error);
      }
      const list = json(data, response, "GET /tools") as { items?: unknown } | undefined;
      const items = Array.isArray(list?.items) ? list.items.map(normalizeToolDefinition) : list?.items;
      const normalized = { ...list, items };
      if (!answers.toolList(normalized)) {
        throw new OxpProtocolError(
          "GET /tools answered a body that is not a ToolListResponse",
          response.status,
          answers.toolList.why(),
        );
      }
      return { done: normalized as ToolListResponse };
    }, signal);
  }

  /**
   * POST /tools/call, retried as the client retries: a tool failure with `can_retry: true` too when
   * `retryToolFailures`. With `asyncWait` (seconds), asked as a task: `Prefer: respond-async[, wait=N]`.
   */
  async function postCall(post: {
    body: CallToolRequest;
    asyncWait?: number;
    retryToolFailures: boolean;
    signal: AbortSignal | undefined;
  }): Promise<CallAnswer> {
    const { body, asyncWait } = post;
    const wireBody = envelope ? { $schema: ENVELOPE_SCHEMA, request: body } : body;
    return withRetries<CallAnswer>(async (signal) => {
      const { data, error, response } = await send(
        async (attemptSignal) => {
          const requestHeaders = await headers();
          if (asyncWait !== undefined) {
            requestHeaders["OXP-Extensions"] = "tasks";
            requestHeaders.Prefer = asyncWait > 0 ? `respond-async, wait=${asyncWait}` : "respond-async";
          }
          return api.POST("/tools/call", {
            body: wireBody,
            headers: requestHeaders,
            signal: attemptSignal,
            parseAs: "text",
          });
        },
        signal,
        (asyncWait ?? 0) * 1000,
      );
      if (!response.ok) {
        return failure(response, error);
      }
      const parsed = json(data, response, "POST /tools/call");
      if (asyncWait !== undefined && response.status === 202) {
        if (!answers.callStatus(parsed)) {
          throw new OxpProtocolError(
            "POST /tools/call answered a 202 whose body is not a CallStatus",
            response.status,
            answers.callStatus.why(),
          );
        }
        return { done: { accepted: parsed as CallStatus } };
      }
      const answer = envelope ? (parsed as CallToolResultEnvelope | undefined)?.result : parsed;
      const valid = envelope ? answers.callToolResultEnvelope(parsed) : answers.callToolResponse(answer);
      if (!valid || answer === undefined) {
        const why = envelope ? answers.callToolResultEnvelope.why() : answers.callToolResponse.why();
        throw new OxpProtocolError(
          "POST /tools/call answered a body that is not a CallToolResponse",
          response.status,
          why,
        );
      }
      const result = answer as CallToolResponse;
      if (post.retryToolFailures && !result.success && result.error.can_retry === true) {
        return { retry: new RetryableFailure(result), waitMs: result.error.retry_after_ms };
      }
      return { done: { response: result } };
    }, post.signal).catch((error: unknown) => {
      // A retryable tool failure on the last attempt is still an answer: return it, not an error.
      if (error instanceof RetryableFailure) {
        return { response: error.response };
      }
      throw error;
    });
  }

  /** A CallStatus answer (of GET or DELETE /tools/calls/{call_id}), checked; errors as everywhere. */
  function statusAnswer(answer: { data?: string; error?: unknown; response: Response }, what: string) {
    const { data, error, response } = answer;
    if (!response.ok) {
      return failure<CallStatus>(response, error);
    }
    const body = json(data, response, what);
    if (!answers.callStatus(body)) {
      throw new OxpProtocolError(
        `${what} answered a body that is not a CallStatus`,
        response.status,
        answers.callStatus.why(),
      );
    }
    return { done: body as CallStatus };
  }

  /** The client's headers, asking for the tasks extension. */
  const taskHeaders = async (): Promise<Record<string, string>> => ({
    ...(await headers()),
    "OXP-Extensions": "tasks",
  });

  /** GET /tools/calls/{call_id}, a long poll with `waitSeconds`; retried as the client retries. */
  async function getCallStatus(callId: string, statusOptions: CallStatusOptions): Promise<CallStatus> {
    const path = { call_id: checkedCallId(callId) };
    const waitSeconds = waitSecondsOf(statusOptions.waitSeconds) ?? 0;
    return withRetries(async (signal) => {
      const answer = await send(
        async (attemptSignal) => {
          const requestHeaders = await taskHeaders();
          if (waitSeconds > 0) {
            requestHeaders.Prefer = `wait=${waitSeconds}`;
          }
          return api.GET("/tools/calls/{call_id}", {
            params: { path },
            headers: requestHeaders,
            signal: attemptSignal,
            parseAs: "text",
          });
        },
        signal,
        waitSeconds * 1000,
      );
      return statusAnswer(answer, "GET /tools/calls/{call_id}");
    }, statusOptions.signal);
  }

  /** DELETE /tools/calls/{call_id}; retried as the client retries (cancelling twice changes nothing). */
  async function deleteCall(callId: string, signal: AbortSignal | undefined): Promise<CallStatus> {
    const path = { call_id: checkedCallId(callId) };
    return withRetries(async (retrySignal) => {
      const answer = await send(
        async (attemptSignal) =>
          api.DELETE("/tools/calls/{call_id}", {
            params: { path },
            headers: await taskHeaders(),
            signal: attemptSignal,
            parseAs: "text",
          }),
        retrySignal,
      );
      return statusAnswer(answer, "DELETE /tools/calls/{call_id}");
    }, signal);
  }

  /** GET /tools/calls/{call_id}/events, once: the answer, its body unread (the handle reads and times it). */
  async function openEvents(callId: string, lastEventId: string | undefined, signal: AbortSignal) {
    const requestHeaders = { ...(await taskHeaders()), Accept: "text/event-stream" };
    const url = `${baseUrl}/tools/calls/${encodeURIComponent(checkedCallId(callId))}/events`;
    const request = new Request(url, { headers: requestHeaders, signal, redirect: "manual" });
    if (lastEventId !== undefined) {
      request.headers.set("Last-Event-ID", lastEventId);
    }
    return streamFetch(request);
  }

  /**
   * The items of a paged answer, page by page, following `next_cursor` until a page has none. A server whose pages
   * never end is stopped with an OxpProtocolError (named by `names`): a page that does not move on (no items, or the
   * cursor it was asked with), a `next_cursor` given before (a cycle), more than `maxPages` pages, or cursors longer
   * in all than maxResponseBytes. What was read is yielded before the error.
   */
  async function* followPages<T>(
    read: (cursor: string | undefined) => Promise<{ items: T[]; next_cursor?: string }>,
    names: { request: string; method: string },
    maxPages: number,
  ): AsyncGenerator<T, void, undefined> {
    const { request, method } = names;
    let cursor: string | undefined;
    // Every cursor asked with: one given again would lead round the same pages forever (A, B, A, ...). Kept
    // within maxResponseBytes in all, like one answer, however long the server makes them.
    const asked = new Set<string>();
    let askedChars = 0;
    for (let pages = 1; ; pages++) {
      const page = await read(cursor);
      yield* page.items;
      if (page.next_cursor === undefined) {
        return;
      }
      // A page that does not move on would be asked for forever: the server breaks pagination.pages.
      if (page.items.length === 0 || page.next_cursor === cursor) {
        throw new OxpProtocolError(
          `${request} answered a page that does not move on: no tools, or the cursor it was asked with`,
          200,
        );
      }
      if (asked.has(page.next_cursor)) {
        throw new OxpProtocolError(
          `${request} answered, on page ${pages}, a next_cursor it had already given: its pages go round in a cycle`,
          200,
        );
      }
      if (pages >= maxPages) {
        throw new OxpProtocolError(
          `${request} has more pages than ${method} reads (maxPages: ${maxPages}): stopped after page ${pages}`,
          200,
        );
      }
      askedChars += page.next_cursor.length;
      if (askedChars > maxResponseBytes) {
        throw new OxpProtocolError(
          `${request} answered cursors longer in all than the client keeps (maxResponseBytes: ${maxResponseBytes}): stopped after page ${pages}`,
          200,
        );
      }
      asked.add(page.next_cursor);
      cursor = page.next_cursor;
    }
  }

  /**
   * One GET /tools?q= with `OXP-Extensions: search`, after discovery said the server offers it; retried as the client
   * retries. The answer must be a ToolSearchResponse, and in the full view each match a whole definition: a server
   * that ignored `q` and answered its list is an OxpProtocolError, never taken for matches.
   */
  async function getSearchPage(query: SearchQuery, signal: AbortSignal | undefined): Promise<ToolSearchResponse> {
    return withRetries(async (retrySignal) => {
      const { data, error, response } = await send(
        async (attemptSignal) =>
          api.GET("/tools", {
            headers: { ...(await headers()), "OXP-Extensions": "search" },
            signal: attemptSignal,
            parseAs: "text",
            params: { query },
          }),
        retrySignal,
      );
      if (!response.ok) {
        return failure(response, error);
      }
      const body = json(data, response, "GET /tools?q=") as { items?: unknown } | undefined;
      const items = Array.isArray(body?.items) ? body.items.map(normalizeToolDefinition) : body?.items;
      const normalized = { ...body, items };
      if (!answers.toolSearch(normalized)) {
        throw new OxpProtocolError(
          "GET /tools?q= answered a body that is not a ToolSearchResponse",
          response.status,
          answers.toolSearch.why(),
        );
      }
      const page = normalized as ToolSearchResponse;
      if (query.view !== "summary") {
        const partial = page.items.find((item) => !("input_schema" in item && "output_schema" in item));
        if (partial) {
          throw new OxpProtocolError(
            `GET /tools?q= answered, in the full view, a match without its input_schema or output_schema (${partial.id})`,
            response.status,
          );
        }
      }
      return { done: page };
    }, signal);
  }

  /**
   * GET /tools?ids= for `ids`, in runs of at most the server's `max_ids`, one request after the other: the definitions
   * in the order asked, each once (the server lists a definition once per request; across requests this does).
   */
  async function getToolsByIds(ids: readonly string[], getOptions: GetToolsOptions): Promise<ToolDefinition[]> {
    const { signal } = getOptions;
    if (ids.length === 0) {
      return [];
    }
    const extensions = await negotiate(getOptions.annotations ? ["annotations", "search"] : ["search"], signal);
    if (!extensions.includes("search")) {
      throw new OxpExtensionUnavailableError("search", "getTools (GET /tools?ids=)");
    }
    const size = maxIdsOf((await discover(signal)).extension_info?.search?.max_ids);
    const seen = new Set<string>();
    const tools: ToolDefinition[] = [];
    for (const run of chunks(ids, size)) {
      const { items } = await getToolList(extensions, { ids: run.join(",") }, signal);
      // A server that ignored `ids` answers its whole list: never taken for the tools asked for.
      if (items.length > run.length) {
        throw new OxpProtocolError(
          `GET /tools?ids= answered ${items.length} tools for ${run.length} ids: more than were asked for`,
          200,
        );
      }
      for (const tool of items) {
        if (!seen.has(tool.id)) {
          seen.add(tool.id);
          tools.push(tool);
        }
      }
    }
    return tools;
  }

  /** GET /toolkits with `OXP-Extensions: search`, after discovery said the server offers it; retried as the client retries. */
  async function getToolkits(signal: AbortSignal | undefined): Promise<Toolkit[]> {
    await requireExtension("search", signal, "listToolkits (GET /toolkits)");
    return withRetries(async (retrySignal) => {
      const { data, error, response } = await send(
        async (attemptSignal) =>
          api.GET("/toolkits", {
            headers: { ...(await headers()), "OXP-Extensions": "search" },
            signal: attemptSignal,
            parseAs: "text",
          }),
        retrySignal,
      );
      if (!response.ok) {
        return failure(response, error);
      }
      const body = json(data, response, "GET /toolkits");
      if (!answers.toolkitList(body)) {
        throw new OxpProtocolError(
          "GET /toolkits answered a body that is not a ToolkitListResponse",
          response.status,
          answers.toolkitList.why(),
        );
      }
      return { done: (body as ToolkitListResponse).items };
    }, signal);
  }

  /** Throws an OxpExtensionUnavailableError unless the server's discovery document lists `extension`. */
  async function requireExtension(
    extension: ClientExtension,
    signal: AbortSignal | undefined,
    what: string,
  ): Promise<void> {
    if (!(await negotiate([extension], signal)).includes(extension)) {
      throw new OxpExtensionUnavailableError(extension, what);
    }
  }

  /** Throws an OxpExtensionUnavailableError unless the server's discovery document lists `tasks`. */
  const requireTasks = (signal: AbortSignal | undefined, what: string) => requireExtension("tasks", signal, what);

  /** The client's headers, asking for the connections extension. */
  const connectionHeaders = async (): Promise<Record<string, string>> => ({
    ...(await headers()),
    "OXP-Extensions": "connections",
  });

  /** GET /connections, after discovery said the server offers them; retried as the client retries. */
  async function getConnections(connectionOptions: ConnectionOptions): Promise<Connection[]> {
    const { signal } = connectionOptions;
    await requireExtension("connections", signal, "listConnections (GET /connections)");
    const query = userQuery(connectionOptions.userId);
    return withRetries(async (retrySignal) => {
      const { data, error, response } = await send(
        async (attemptSignal) =>
          api.GET("/connections", {
            params: { query },
            headers: await connectionHeaders(),
            signal: attemptSignal,
            parseAs: "text",
          }),
        retrySignal,
      );
      if (!response.ok) {
        return failure(response, error);
      }
      const body = json(data, response, "GET /connections");
      if (!answers.connectionList(body)) {
        throw new OxpProtocolError(
          "GET /connections answered a body that is not a ConnectionListResponse",
          response.status,
          answers.connectionList.why(),
        );
      }
      return { done: (body as ConnectionListResponse).items };
    }, signal);
  }

  /** POST /connections: a flow started. Sent again only after a 429 or 503: each request that arrives starts one. */
  async function postConnection(connectOptions: ConnectOptions): Promise<ConnectionFlow> {
    const { signal, provider, scopes, userId } = connectOptions;
    await requireExtension("connections", signal, "connect (POST /connections)");
    const body: ConnectionRequest = {
      provider,
      ...(scopes !== undefined ? { scopes } : {}),
      ...(userId !== undefined ? { user_id: userId } : {}),
    };
    return withRetries(
      async (retrySignal) => {
        const { data, error, response } = await send(
          async (attemptSignal) =>
            api.POST("/connections", {
              body,
              headers: await connectionHeaders(),
              signal: attemptSignal,
              parseAs: "text",
            }),
          retrySignal,
        );
        if (!response.ok) {
          return failure(response, error);
        }
        const flow = json(data, response, "POST /connections");
        if (!answers.connectionFlow(flow)) {
          throw new OxpProtocolError(
            "POST /connections answered a body that is not a ConnectionFlow",
            response.status,
            answers.connectionFlow.why(),
          );
        }
        return { done: flow as ConnectionFlow };
      },
      signal,
      false,
    );
  }

  /**
   * DELETE /connections/{connection_id}; retried as the client retries. A 404 after an attempt whose answer was lost
   * counts as done: that attempt may have deleted it, and the connection is gone either way.
   */
  async function deleteConnection(connectionId: string, connectionOptions: ConnectionOptions): Promise<void> {
    const { signal } = connectionOptions;
    const path = { connection_id: checkedCallId(connectionId, "connection id") };
    await requireExtension("connections", signal, "disconnect (DELETE /connections/{connection_id})");
    const query = userQuery(connectionOptions.userId);
    let lostOne = false;
    await withRetries(async (retrySignal) => {
      let answer: { error?: unknown; response: Response };
      try {
        answer = await send(
          async (attemptSignal) =>
            api.DELETE("/connections/{connection_id}", {
              params: { path, query },
              headers: await connectionHeaders(),
              signal: attemptSignal,
              parseAs: "text",
            }),
          retrySignal,
        );
      } catch (error) {
        lostOne ||= error instanceof OxpConnectionError || error instanceof OxpTimeoutError;
        throw error;
      }
      const { error, response } = answer;
      if (response.ok || (response.status === 404 && lostOne)) {
        return { done: undefined };
      }
      return failure<undefined>(response, error);
    }, signal);
  }

  /**
   * GET a check_url once (a challenge's, a connection flow's). One on another origin than the server's is an
   * OxpCrossOriginError and is never requested: polling sends the server's credentials.
   */
  async function checkChallenge(
    checkUrl: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<ChallengeStatus> {
    if (!checkUrl) {
      throw new OxpProtocolError("The challenge has no check_url to poll", 0);
    }
    if (!sameOrigin(checkUrl, baseUrl)) {
      const serverOrigin = originOf(baseUrl) ?? baseUrl;
      const other = originOf(checkUrl, `${baseUrl}/`);
      throw new OxpCrossOriginError(
        `The challenge's check_url is on ${other ?? "no origin"}, not on the server's origin ${serverOrigin}: the client does not poll it, since polling sends the server's credentials`,
        0,
        serverOrigin,
        other,
      );
    }
    const url = new URL(checkUrl, `${baseUrl}/`).toString();
    return withRetries<ChallengeStatus>(async (retrySignal) => {
      const { response, text } = await send(async (attemptSignal) => {
        const request = new Request(url, { headers: await headers(), signal: attemptSignal, redirect: "manual" });
        const answer = await guarded(request);
        return { response: answer, text: await answer.text() };
      }, retrySignal);
      let body: unknown;
      try {
        body = text === "" ? undefined : JSON.parse(text);
      } catch {
        body = text;
      }
      if (!response.ok) {
        return failure(response, body);
      }
      if (!answers.challengeStatus(body)) {
        throw new OxpProtocolError(
          "check_url answered a body that is not a challenge status",
          response.status,
          answers.challengeStatus.why(),
        );
      }
      return { done: (body as { status: ChallengeStatus }).status };
    }, signal);
  }

  /** Reads a check_url every `intervalMs` on the client's clock until it is no longer pending. */
  async function waitForChallenge(
    checkUrl: string | undefined,
    intervalMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Exclude<ChallengeStatus, "pending">> {
    for (;;) {
      const status = await checkChallenge(checkUrl, signal);
      if (status !== "pending") {
        return status;
      }
      await sleepOn(clock, intervalMs, signal);
    }
  }

  /** A handle following a running task with the client's requests and limits. */
  function follow(
    initial: CallStatus,
    followOptions: FollowCallOptions & { pollWaitSeconds: number },
    repost?: TaskRequests["repost"],
  ): AsyncCall {
    const requests: TaskRequests = {
      status: getCallStatus,
      cancel: deleteCall,
      events: openEvents,
      ...(repost ? { repost } : {}),
    };
    return followedCall({
      requests,
      initial,
      signal: followOptions.signal,
      cancelOnAbort: followOptions.cancelOnAbort === true,
      maxAttempts,
      backoff,
      maxDelayMs,
      clock,
      idleMs: Math.max(timeoutMs, MIN_STREAM_IDLE_MS),
      maxEventChars: maxResponseBytes,
      pollWaitSeconds: followOptions.pollWaitSeconds,
      onFollow: followOptions.onFollow,
    });
  }

  return {
    async health(callOptions = {}) {
      const { response } = await send(
        async (signal) => api.GET("/health", { headers: await headers(), signal, parseAs: "text" }),
        callOptions.signal,
      );
      return { healthy: response.status === 200, status: response.status };
    },

    async discover(callOptions = {}) {
      const document = await discover(callOptions.signal);
      // A copy: the kept document is the client's, not the caller's to change.
      return { oxp_versions: [...document.oxp_versions], extensions: [...document.extensions] };
    },

    async listTools(listOptions = {}) {
      const extensions = await negotiate(listExtensionsOf(listOptions), listOptions.signal);
      return (await getToolList(extensions, undefined, listOptions.signal)).items;
    },

    async readToolList(listOptions = {}) {
      const extensions = await negotiate([...listExtensionsOf(listOptions), "cache"], listOptions.signal);
      const { items, ttl_ms, cache_scope } = await getToolList(extensions, undefined, listOptions.signal);
      // The fields of an answer the cache extension shaped, and of no other: a server not asked says nothing of it.
      if (!extensions.includes("cache")) {
        return { items };
      }
      return {
        items,
        ...(ttl_ms === undefined ? {} : { ttl_ms }),
        ...(cache_scope === undefined ? {} : { cache_scope }),
      };
    },

    async *iterateTools(iterateOptions = {}) {
      const { limit, toolkit, signal, maxPages = DEFAULT_MAX_TOOL_PAGES } = iterateOptions;
      if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 1)) {
        throw new RangeError(`limit must be a whole number of tools, 1 or more (got ${limit})`);
      }
      checkedMaxPages(maxPages);
      const extensions = await negotiate([...listExtensionsOf(iterateOptions), "pagination"], signal);
      if (!extensions.includes("pagination")) {
        // The whole list in one answer; the toolkit filter is the server's, applied here.
        const { items } = await getToolList(extensions, undefined, signal);
        for (const tool of items) {
          if (toolkit === undefined || tool.id.startsWith(`${toolkit}.`)) {
            yield tool;
          }
        }
        return;
      }
      const query = {
        ...(limit !== undefined ? { limit } : {}),
        ...(toolkit !== undefined ? { toolkit } : {}),
      };
      yield* followPages(
        (cursor) => getToolList(extensions, cursor === undefined ? query : { ...query, cursor }, signal),
        { request: "GET /tools", method: "iterateTools" },
        maxPages,
      );
    },

    async searchTools<V extends ToolSearchView = "full">(
      q: string,
      searchOptions: SearchToolsOptions<V> = {},
    ): Promise<ToolSearchResults<V>> {
      const { signal, cursor } = searchOptions;
      const query = searchQuery(q, searchOptions);
      await requireExtension("search", signal, "searchTools (GET /tools?q=)");
      const page = await getSearchPage(cursor === undefined ? query : { ...query, cursor }, signal);
      return page as ToolSearchResults<V>;
    },

    async *iterateSearch<V extends ToolSearchView = "full">(
      q: string,
      iterateOptions: IterateSearchOptions<V> = {},
    ): AsyncGenerator<ToolSearchHit<V>, void, undefined> {
      const { signal, maxPages = DEFAULT_MAX_TOOL_PAGES } = iterateOptions;
      const query = searchQuery(q, iterateOptions);
      checkedMaxPages(maxPages);
      await requireExtension("search", signal, "iterateSearch (GET /tools?q=)");
      const pages = followPages(
        async (cursor) =>
          (await getSearchPage(cursor === undefined ? query : { ...query, cursor }, signal)) as ToolSearchResults<V>,
        { request: "GET /tools?q=", method: "iterateSearch" },
        maxPages,
      );
      yield* pages;
    },

    async getTools(ids, getOptions = {}) {
      return getToolsByIds(checkedIds(ids), getOptions);
    },

    async listToolkits(callOptions = {}) {
      return getToolkits(callOptions.signal);
    },

    async callTool(request, callOptions = {}) {
      // Made once, before the first attempt: every retry is the same call, which the server runs once.
      const body: CallToolRequest = { ...request, call_id: request.call_id ?? crypto.randomUUID() };
      const answer = await postCall({ body, retryToolFailures: true, signal: callOptions.signal });
      return (answer as { response: CallToolResponse }).response;
    },

    async callToolAsync(request, asyncOptions = {}) {
      const { signal } = asyncOptions;
      const waitSeconds = waitSecondsOf(asyncOptions.waitSeconds) ?? 0;
      const pollWaitSeconds = waitSecondsOf(asyncOptions.pollWaitSeconds, "pollWaitSeconds") ?? MAX_WAIT_SECONDS;
      const body: CallToolRequest = { ...request, call_id: request.call_id ?? crypto.randomUUID() };
      const callId = body.call_id as string;
      if (!(await negotiate(["tasks"], signal)).includes("tasks")) {
        const answer = await postCall({ body, retryToolFailures: true, signal });
        return settledCall(callId, (answer as { response: CallToolResponse }).response);
      }
      checkedCallId(callId);
      let answer: CallAnswer;
      try {
        answer = await postCall({ body, asyncWait: waitSeconds, retryToolFailures: true, signal });
      } catch (error) {
        if (signal?.aborted && asyncOptions.cancelOnAbort) {
          // The call may have started before the abort: cancel it too, best effort (a 404 if it never did).
          deleteCall(callId, AbortSignal.timeout(timeoutMs)).catch(() => undefined);
        }
        throw error;
      }
      if ("response" in answer) {
        return settledCall(callId, answer.response);
      }
      const repost = async (repostSignal: AbortSignal) =>
        postCall({ body, asyncWait: 0, retryToolFailures: false, signal: repostSignal });
      return follow(answer.accepted, { ...asyncOptions, pollWaitSeconds }, repost);
    },

    async followCall(callId, followOptions = {}) {
      const pollWaitSeconds = waitSecondsOf(followOptions.pollWaitSeconds, "pollWaitSeconds") ?? MAX_WAIT_SECONDS;
      await requireTasks(followOptions.signal, "followCall (GET /tools/calls/{call_id})");
      return follow(await getCallStatus(callId, { signal: followOptions.signal }), {
        ...followOptions,
        pollWaitSeconds,
      });
    },

    async callStatus(callId, statusOptions = {}) {
      await requireTasks(statusOptions.signal, "GET /tools/calls/{call_id}");
      return getCallStatus(callId, statusOptions);
    },

    async cancelCall(callId, callOptions = {}) {
      await requireTasks(callOptions.signal, "DELETE /tools/calls/{call_id}");
      return deleteCall(callId, callOptions.signal);
    },

    async checkAuthorization(challenge, callOptions = {}) {
      return checkChallenge(challenge.check_url, callOptions.signal);
    },

    async waitForAuthorization(challenge, waitOptions = {}) {
      return waitForChallenge(
        challenge.check_url,
        waitOptions.intervalMs ?? DEFAULT_POLL_INTERVAL_MS,
        waitOptions.signal,
      );
    },

    async listConnections(connectionOptions = {}) {
      return getConnections(connectionOptions);
    },

    async connect(connectOptions) {
      return postConnection(connectOptions);
    },

    async waitForConnection(flow, waitOptions = {}) {
      const intervalMs = pollIntervalOf(waitOptions.pollIntervalMs);
      return waitForChallenge(flow.check_url, intervalMs, waitOptions.signal);
    },

    async disconnect(connectionId, connectionOptions = {}) {
      return deleteConnection(connectionId, connectionOptions);
    },
  };
}

/** Carries a retryable tool failure out of the retry loop once attempts run out; never reaches the caller. */
class RetryableFailure extends Error {
  constructor(readonly response: CallToolResponse) {
    super(response.success ? "" : response.error.message);
  }
}
