/**
 * OXP to MCP: an MCP server (the official SDK's, v2) whose tools are one OXP server's, called through
 * @otc/client. One handler set serves both protocol generations: 2026-07-28 (stateless, per request)
 * and the 2025-era ones (initialize handshake: 2025-11-25, 2025-06-18, 2025-03-26...).
 */
import { randomUUID } from "node:crypto";
import {
  type CallToolResult,
  type CallToolRequest as McpCallToolRequest,
  type Tool as McpTool,
  type ProgressToken,
  ProtocolError,
  ProtocolErrorCode,
  Server,
  type ServerContext,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/server";
import {
  type AccessTokenProvider,
  type ClientOptions,
  createClient,
  type JwtOptions,
  type ListToolsOptions,
  OxpAuthenticationError,
  type OxpClient,
  OxpConnectionError,
  OxpCrossOriginError,
  OxpExtensionUnavailableError,
  OxpProtocolError,
  OxpResponseTooLargeError,
  OxpServerError,
  OxpTimeoutError,
  OxpValidationError,
  type RetryOptions,
  sameOrigin,
  type ToolList,
} from "@otc/client";
import { type Clock, systemClock, unrefTimer } from "@otc/server/core";
import {
  type CallToolRequest,
  type CallToolResponse,
  compareToolVersions,
  parseToolId,
  type ToolAuthorizationChallenge,
  type ToolDefinition,
} from "@otc/types";
import { callScopes, grantsTool, missingScopes, readScopes } from "./auth.js";
import { DEPRECATION_META_KEY, mcpDescription, toMcpAnnotations } from "./internal/annotations.js";
import {
  argumentError,
  DEFAULT_SEARCH_LIMIT,
  type FoundTool,
  LOAD_TOOL,
  loadArguments,
  loadedTool,
  MAX_SEARCH_LIMIT,
  META_TOOLS,
  metaResult,
  SEARCH_TOOL,
  searchArguments,
} from "./internal/meta-tools.js";
import { wholeBodies } from "./internal/whole-bodies.js";
import { byCodePoint, mcpToolName, uniqueMcpName } from "./names.js";
import { toMcpInputSchema, toMcpOutput } from "./schemas.js";

/** The `_meta` key of a failed call's retry hints and status. */
export const ERROR_META_KEY = "oxp/error";
/** The `_meta` key of the authorizations a call waits for. */
export const AUTHORIZATION_META_KEY = "oxp/authorization";
/** The `_meta` key, on each listed tool, of the OXP tool id it calls. */
export const TOOL_ID_META_KEY = "oxp/tool_id";

/** Options of {@link createMcpBridge}. */
export interface McpBridgeOptions {
  /** The OXP server's base URL, e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** Sent to the OXP server in `OXP-API-Key`; never shown to the MCP client. */
  apiKey?: string;
  /** Sign HS256 JWTs (with `subject` as their `sub`) for the OXP server; never shown to the MCP client. */
  jwt?: JwtOptions;
  /**
   * The bridge's own OAuth access token for the OXP server, or a provider of one (@otc/client's `accessToken`); never
   * an MCP client's token, which stays in the bridge.
   */
  accessToken?: string | AccessTokenProvider;
  /** `latest` (default): one MCP tool per OXP tool, its highest version. `all`: older versions too, with a `_vX_Y_Z` suffix. */
  toolVersions?: "latest" | "all";
  /** The end user every call is made for (`context.user_id`): tools that require one need it. */
  userId?: string;
  /**
   * Adds two meta-tools for MCP clients without a tool search of their own (docs/protocol.md 9.5): `search-tools`
   * (a query, optionally a toolkit and a limit: the tools that fit, best first, by the OXP server's ranked
   * `GET /tools?q=&view=summary`, each with its MCP name, description, toolkit and score) and `load-tools` (MCP names:
   * their full definitions, input schemas included). tools/list still lists every tool, the two meta-tools first;
   * their names have a `-`, which no bridged tool's name has, so none is renamed. The OXP server must offer the
   * search extension: {@link McpBridge.ready} (which `serveStdio` and `serveHttp` await) rejects when its discovery
   * document does not list it. Default false: the list and the calls as without it, byte for byte.
   */
  toolSearch?: boolean;
  /** Secrets sent with every call (`context.secrets`), by id; never shown to the MCP client. */
  secrets?: Readonly<Record<string, string>>;
  /**
   * How long a tools/call reuses the catalog the last listing read, in ms. Default 30,000. A name not
   * in the catalog re-reads it at most once per this time or per second, whichever is shorter.
   */
  catalogTtlMs?: number;
  /**
   * How long one call waits for the user to complete its authorizations, in ms: one deadline for the
   * whole call, however many challenges it has (the elicitations and the polling). Default 300,000.
   */
  authorizationWaitMs?: number;
  /**
   * How often the authorization's check_url is polled, in ms. Default 1,000. A check_url on another
   * origin than `url`'s is never polled (polling sends the credentials): the call ends with the link.
   */
  authorizationPollMs?: number;
  /** Time limit of one OXP request, in ms (the client's `timeoutMs`). */
  timeoutMs?: number;
  /** How the OXP client retries (the same call_id every time). */
  retry?: RetryOptions;
  /**
   * The fetch the OXP client sends through, handed Requests as @otc/client's `fetch` option is (tests pass one to
   * observe the requests). Default the global one, which the client hands each request's URL and init.
   */
  fetch?: typeof fetch;
  /** The MCP server's name and version, as the MCP client sees them. */
  serverInfo?: { name: string; version: string };
  /**
   * The clock the bridge's own time rules follow: the catalog's age (`catalogTtlMs`) and the one deadline of a
   * call's authorizations (`authorizationWaitMs`). Default the real one (`Date.now()` and the runtime's timers). A
   * test passes a clock it moves by hand (`@otc/test-helpers`' ManualClock) instead of waiting those out. The OXP
   * client's waits (`authorizationPollMs`, retries) and the MCP SDK's time limit on an elicitation (what is left
   * of the deadline, on this clock) run on the runtime's timers.
   */
  clock?: Clock;
}

/** What an OXP list's cache fields said (docs/protocol.md 9.9), as MCP 2026-07-28 names them: `ttlMs`, `cacheScope`. */
interface ListCacheFields {
  ttlMs?: number;
  cacheScope?: "public" | "private";
}

/** The cache fields of an OXP list, undefined when it has neither (a server that does not offer `cache`). */
function cacheFieldsOf(list: ToolList): ListCacheFields | undefined {
  const { ttl_ms: ttlMs, cache_scope: cacheScope } = list;
  if (ttlMs === undefined && cacheScope === undefined) {
    return undefined;
  }
  return { ...(ttlMs === undefined ? {} : { ttlMs }), ...(cacheScope === undefined ? {} : { cacheScope }) };
}

/** One MCP tool and the OXP tool behind it. */
interface Entry {
  tool: McpTool;
  definition: ToolDefinition;
  wrapped: boolean;
}

/**
 * One read of the OXP catalog: its MCP tools by name and by OXP id, when it was read, its list's cache fields, every
 * scope some tool requires (in the order first met), and the lists of the callers that lack some of them.
 */
interface Catalog {
  entries: Map<string, Entry>;
  byId: Map<string, Entry>;
  readAt: number;
  cache: ListCacheFields | undefined;
  scopes: readonly string[];
  /** The MCP tools a caller sees, by the space-separated scopes of `scopes` it holds: see {@link grantedTools}. */
  granted: Map<string, readonly McpTool[]>;
}

/**
 * How many callers' lists one catalog read keeps: one per distinct set of the scopes its tools require that a
 * token holds, so a few in practice; the bound holds it however many sets the tokens bring.
 */
const GRANTED_LISTS_KEPT = 32;

/**
 * The most pages of {@link MAX_SEARCH_LIMIT} matches one `search-tools` of a caller who sees only some tools reads to
 * find `limit` of them: the best 200 matches. Past them the answer has fewer, as a search with few matches has.
 */
const SEARCH_PAGES_FOR_CALLER = 4;

/** Whether `caller`'s token holds every scope the tools of `read` require: then it sees them all. */
function seesEveryTool(read: Catalog, caller: McpCaller): boolean {
  return read.scopes.every((scope) => caller.scopes.has(scope));
}

/**
 * The bridged tools a caller sees, in the catalog's order: those whose `required_scopes` its token holds all of
 * (docs/protocol.md 9.6, `[oauth.catalog-by-scope]`, as the OXP server lists its own); undefined when it sees every
 * tool (no caller, or one holding every scope the tools require). Made once per catalog read and set of the scopes
 * that matter (those some tool requires), so a bridge of 10,000 tools walks them once per set, not once per request.
 */
function grantedTools(read: Catalog, caller: McpCaller | undefined): readonly McpTool[] | undefined {
  if (!caller || seesEveryTool(read, caller)) {
    return undefined;
  }
  const held = read.scopes.filter((scope) => caller.scopes.has(scope));
  // Scopes have no spaces (RFC 6749, 3.3): joined, they are a key one set of them alone makes.
  const key = held.join(" ");
  let tools = read.granted.get(key);
  if (!tools) {
    const granted = new Set(held);
    const seen: McpTool[] = [];
    for (const entry of read.entries.values()) {
      if (grantsTool(entry.definition, granted)) {
        seen.push(entry.tool);
      }
    }
    tools = seen;
    for (const oldest of read.granted.keys()) {
      if (read.granted.size < GRANTED_LISTS_KEPT) {
        break;
      }
      read.granted.delete(oldest);
    }
    read.granted.set(key, tools);
  }
  return tools;
}

/**
 * The user an MCP request comes from, as its OAuth access token says (`serveHttp` with `oauth`). The token itself
 * stays in the bridge: the OXP server is called with the bridge's own credentials, for this user.
 */
export interface McpCaller {
  /** The token's `sub`: each call's `context.user_id`, in place of the bridge's `userId`. */
  readonly userId: string;
  /**
   * The scopes the token grants: a tools/call whose OXP tool needs others is refused, and tools/list, `search-tools`
   * and `load-tools` show only the tools whose `required_scopes` are all among them.
   */
  readonly scopes: ReadonlySet<string>;
}

/** An OXP server seen as MCP tools; one bridge serves any number of MCP sessions. */
export interface McpBridge {
  /**
   * A new SDK `Server` with the bridge's handlers, for one transport: one per request over HTTP, one per
   * connection over stdio. Either protocol generation may be served by it; the SDK binds it to the first. With a
   * `caller`, its calls are made for that user and only with the scopes it holds, and it sees only the tools those
   * scopes allow.
   */
  createServer(caller?: McpCaller): Server;
  /**
   * The scopes a tools/call of the MCP tool `name` needs: `oxp:tools:call` and its OXP tool's `required_scopes`
   * (listed by an OXP server that offers the oauth extension). Read from the catalog as a call reads it.
   */
  callScopes(name: string, signal?: AbortSignal): Promise<string[]>;
  /** Every OXP tool's `required_scopes`, from a catalog at most `catalogTtlMs` old (one read for all who ask at once). */
  catalogScopes(): Promise<string[]>;
  /** The MCP tools, read from the OXP server now: tools/list's (with `toolSearch`, the meta-tools first). */
  listTools(): Promise<McpTool[]>;
  /**
   * Checks, before serving, what the options need of the OXP server: with `toolSearch`, that its discovery document
   * lists the search extension, else it rejects saying so. `serveStdio` and `serveHttp` await it; call it before
   * serving `createServer()` any other way. Without `toolSearch` it resolves at once, asking nothing. An OXP server
   * that cannot be read now (down, refusing the credentials) does not stop the start: `search-tools` says so when
   * called, as every tool does.
   */
  ready(signal?: AbortSignal): Promise<void>;
  /** The OXP client the bridge calls through. */
  readonly client: OxpClient;
}

/**
 * The MCP tools of an OXP catalog, by MCP name: latest versions first, so they get the plain names. A
 * definition's annotations become MCP's (`title` both on the tool and in `annotations`), and a
 * `deprecation_message` starts the description and sits in `_meta["oxp/deprecation_message"]`.
 */
export function catalogToMcpTools(
  definitions: readonly ToolDefinition[],
  toolVersions: "latest" | "all" = "latest",
): Map<string, Entry> {
  const byName = new Map<string, ToolDefinition[]>();
  for (const definition of definitions) {
    const parsed = parseToolId(definition.id);
    if (!parsed) {
      continue;
    }
    const versions = byName.get(parsed.qualifiedName) ?? [];
    versions.push(definition);
    byName.set(parsed.qualifiedName, versions);
  }
  const latest: { definition: ToolDefinition; name: string }[] = [];
  const older: { definition: ToolDefinition; name: string }[] = [];
  for (const [qualifiedName, versions] of [...byName].sort(([a], [b]) => byCodePoint(a, b))) {
    const [toolkit = "", tool = ""] = qualifiedName.split(".");
    const sorted = [...versions].sort((a, b) => compareToolVersions(b.version, a.version));
    const [newest, ...rest] = sorted;
    if (newest) {
      latest.push({ definition: newest, name: mcpToolName(toolkit, tool) });
    }
    if (toolVersions === "all") {
      for (const definition of rest) {
        older.push({ definition, name: mcpToolName(toolkit, tool, definition.version) });
      }
    }
  }
  const taken = new Set<string>();
  const entries = new Map<string, Entry>();
  for (const { definition, name: wanted } of [...latest, ...older]) {
    const name = uniqueMcpName(wanted, taken);
    const { outputSchema, wrapped } = toMcpOutput(definition.output_schema);
    const tool: McpTool = {
      name,
      description: mcpDescription(definition),
      inputSchema: toMcpInputSchema(definition.input_schema),
      _meta: { [TOOL_ID_META_KEY]: definition.id },
    };
    if (outputSchema) {
      tool.outputSchema = outputSchema;
    }
    // MCP hosts show `title` (newer) or `annotations.title` (older): both carry OXP's title.
    const annotations = toMcpAnnotations(definition.annotations);
    if (annotations) {
      tool.annotations = annotations;
    }
    if (annotations?.title !== undefined) {
      tool.title = annotations.title;
    }
    if (definition.deprecation_message !== undefined) {
      tool._meta = { ...tool._meta, [DEPRECATION_META_KEY]: definition.deprecation_message };
    }
    entries.set(name, { tool, definition, wrapped });
  }
  return entries;
}

/** A value as text for the model: strings as they are, anything else as JSON. */
function render(value: unknown): string {
  if (typeof value === "string") {
    return value;
  }
  return JSON.stringify(value) ?? "null";
}

/** The MCP result of an OXP answer: the value as structuredContent and text, or a tool error with its hints in `_meta`. */
export function toCallToolResult(response: CallToolResponse, wrapped: boolean, hasOutput: boolean): CallToolResult {
  if (response.success) {
    const value = response.value ?? null;
    if (!hasOutput) {
      return {
        content: [{ type: "text", text: value === null ? "Done: the tool returned no value." : render(value) }],
      };
    }
    const structured = wrapped ? { value } : (value as Record<string, unknown>);
    return { content: [{ type: "text", text: render(value) }], structuredContent: structured };
  }
  const { error } = response;
  const text = error.additional_prompt_content
    ? `${error.message}\n\n${error.additional_prompt_content}`
    : error.message;
  const hints: Record<string, unknown> = { call_id: response.call_id, can_retry: error.can_retry === true };
  if (error.retry_after_ms !== undefined) {
    hints.retry_after_ms = error.retry_after_ms;
  }
  return { isError: true, content: [{ type: "text", text }], _meta: { [ERROR_META_KEY]: hints } };
}

const errorResult = (text: string, meta: Record<string, unknown>): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text }],
  _meta: { [ERROR_META_KEY]: meta },
});

/**
 * The MCP result of what the OXP client threw. Only what the server wrote for users or models is
 * passed on (`message`, parameter errors); never `developer_message`, the server's URL or credentials.
 */
export function errorToCallToolResult(error: unknown): CallToolResult {
  if (error instanceof OxpValidationError) {
    const lines = Object.entries(error.parameterErrors).map(([path, message]) => `- ${path}: ${message}`);
    return errorResult(`Invalid input: ${error.message}${lines.length ? `\n${lines.join("\n")}` : ""}`, {
      status: error.status,
      can_retry: false,
      parameter_errors: error.parameterErrors,
    });
  }
  if (error instanceof OxpAuthenticationError) {
    return errorResult("The tool server refused the bridge's credentials; the bridge's configuration must be fixed.", {
      status: error.status,
      can_retry: false,
    });
  }
  if (error instanceof OxpServerError) {
    const missing = error.missingRequirements;
    const hint = missing?.user_id ? "\n\nThis tool needs an end user: start the bridge with a user id." : "";
    const meta: Record<string, unknown> = { status: error.status, can_retry: error.status === 503 };
    if (missing?.user_id) {
      meta.missing_user_id = true;
    }
    return errorResult(`${error.message}${hint}`, meta);
  }
  if (error instanceof OxpConnectionError || error instanceof OxpTimeoutError) {
    return errorResult("The tool server could not be reached or did not answer in time.", {
      status: 0,
      can_retry: true,
    });
  }
  if (error instanceof OxpResponseTooLargeError) {
    return errorResult("The tool server's answer was too large: the bridge stopped reading it.", {
      status: error.status,
      can_retry: false,
    });
  }
  if (error instanceof OxpCrossOriginError) {
    return errorResult("The tool server sent the bridge to another server, which the bridge does not follow.", {
      status: error.status,
      can_retry: false,
    });
  }
  if (error instanceof OxpProtocolError) {
    return errorResult("The tool server's answer did not follow the protocol.", {
      status: error.status,
      can_retry: false,
    });
  }
  throw error;
}

/** The result telling the user to open the authorization links, then call again. */
function authorizationResult(challenges: readonly ToolAuthorizationChallenge[], why: string): CallToolResult {
  const links = challenges.map((challenge) => `  ${challenge.url}`).join("\n");
  return {
    isError: true,
    content: [
      {
        type: "text",
        text: `${why} Ask the user to open this link to grant access, then call the tool again:\n${links}`,
      },
    ],
    _meta: {
      [AUTHORIZATION_META_KEY]: challenges.map(({ id, url }) => ({ id, url })),
      [ERROR_META_KEY]: { status: 400, can_retry: true },
    },
  };
}

type Extra = ServerContext;

/**
 * Whether the client this request came from takes URL-mode elicitation now. Only the 2025-era protocol
 * has server-to-client requests: 2026-07-28 replaced them with `input_required` results, which the bridge
 * does not use, so a 2026-07-28 client gets the authorization link in the result instead.
 */
function elicitsUrl(server: Server): boolean {
  const version = server.getNegotiatedProtocolVersion();
  const legacy = version !== undefined && SUPPORTED_PROTOCOL_VERSIONS.includes(version);
  return legacy && server.getClientCapabilities()?.elicitation?.url !== undefined;
}

/**
 * Creates the bridge. Its MCP tools are the OXP server's (latest versions unless `toolVersions: "all"`),
 * and each tools/call is one OXP call with a fresh `call_id` that the client's retries reuse. Where the
 * server offers the tasks extension, a request's `progressToken` gets the call's progress as
 * `notifications/progress` (the call is then asynchronous; without one it is synchronous), and cancelling the request
 * cancels the call.
 *
 * @example
 * const bridge = createMcpBridge({ url: "http://127.0.0.1:8080", apiKey: process.env.OXP_API_KEY });
 * await serveStdio(bridge); // or serveHttp(bridge, { port: 3000 })
 */
export function createMcpBridge(options: McpBridgeOptions): McpBridge {
  const clientOptions: ClientOptions = { baseUrl: options.url };
  if (options.apiKey !== undefined) {
    clientOptions.apiKey = options.apiKey;
  }
  if (options.jwt !== undefined) {
    clientOptions.jwt = options.jwt;
  }
  if (options.accessToken !== undefined) {
    clientOptions.accessToken = options.accessToken;
  }
  if (options.timeoutMs !== undefined) {
    clientOptions.timeoutMs = options.timeoutMs;
  }
  if (options.retry !== undefined) {
    clientOptions.retry = options.retry;
  }
  // Without a fetch of its own the client sends through the global one, given the URL and init it made (its fast
  // path); a fetch given is handed Requests (the client's contract), whose bodies wholeBodies hands on as bytes.
  if (options.fetch !== undefined) {
    clientOptions.fetch = wholeBodies(options.fetch);
  }
  const client: OxpClient = createClient(clientOptions);
  const toolSearch = options.toolSearch === true;
  const toolVersions = options.toolVersions ?? "latest";
  const catalogTtlMs = options.catalogTtlMs ?? 30_000;
  const waitMs = options.authorizationWaitMs ?? 300_000;
  const pollMs = options.authorizationPollMs ?? 1_000;
  const serverInfo = options.serverInfo ?? { name: "otc-mcp-bridge", version: "0.1.0" };
  const clock = options.clock ?? systemClock;

  // A name the catalog lacks re-reads it, but not more often than this: a client repeating an unknown
  // name must not turn every call into a GET /tools.
  const missRefreshMs = Math.min(catalogTtlMs, 1_000);

  let catalog: Catalog | undefined;
  /** The read in progress for {@link fresh}: callers that need no new read of their own share one. */
  let reading: Promise<Catalog> | undefined;

  /**
   * A new read of the catalog. With `withCache` (a 2026-07-28 tools/list, the one answer that carries them) it asks for
   * the cache extension too (the client's readToolList) and keeps the list's cache fields.
   */
  const readCatalog = async (signal?: AbortSignal, withCache = false): Promise<Catalog> => {
    // Asked of a server whose discovery document lists them: annotations (MCP's hints), and oauth for each tool's
    // required_scopes (the scopes a caller needs, docs/protocol.md 9.6). Any other server lists as OXP 1.0.
    const listOptions: ListToolsOptions = { annotations: true, requiredScopes: true, ...(signal ? { signal } : {}) };
    let definitions: ToolDefinition[];
    let cache: ListCacheFields | undefined;
    if (withCache) {
      const list = await client.readToolList(listOptions);
      definitions = list.items;
      cache = cacheFieldsOf(list);
    } else {
      definitions = await client.listTools(listOptions);
    }
    const entries = catalogToMcpTools(definitions, toolVersions);
    const byId = new Map([...entries.values()].map((entry) => [entry.definition.id, entry]));
    const scopes = new Set<string>();
    for (const { definition } of entries.values()) {
      for (const scope of definition.required_scopes ?? []) {
        scopes.add(scope);
      }
    }
    catalog = { entries, byId, readAt: clock.now(), cache, scopes: [...scopes], granted: new Map() };
    return catalog;
  };

  /**
   * The catalog if it is younger than `catalogTtlMs`, else one read shared by all who ask meanwhile (so it takes no
   * signal: one caller going away must not fail the others' read).
   */
  const fresh = (): Promise<Catalog> => {
    if (catalog && clock.now() - catalog.readAt < catalogTtlMs) {
      return Promise.resolve(catalog);
    }
    reading ??= readCatalog().finally(() => {
      reading = undefined;
    });
    return reading;
  };

  /** The entry of an MCP name: from the cached catalog while fresh, else a new read; an unknown name re-reads at most once per `missRefreshMs`. */
  const lookup = async (name: string, signal?: AbortSignal): Promise<Entry | undefined> => {
    if (catalog) {
      const age = clock.now() - catalog.readAt;
      const found = age < catalogTtlMs ? catalog.entries.get(name) : undefined;
      if (found) {
        return found;
      }
      if (age < missRefreshMs) {
        return undefined;
      }
    }
    return (await readCatalog(signal)).entries.get(name);
  };

  const context = (caller: McpCaller | undefined): CallToolRequest["context"] => {
    const out: NonNullable<CallToolRequest["context"]> = {};
    // A signed-in user is the call's user (the OXP server takes it on the bridge's credentials, section 5).
    const userId = caller ? caller.userId : options.userId;
    if (userId) {
      out.user_id = userId;
    }
    if (options.secrets && Object.keys(options.secrets).length > 0) {
      out.secrets = Object.entries(options.secrets).map(([id, value]) => ({ id, value }));
    }
    return Object.keys(out).length > 0 ? out : undefined;
  };

  /**
   * Walks the user through the challenges by URL-mode elicitation, then waits for each to complete,
   * all within one deadline (`authorizationWaitMs` from the first challenge), so a call with several
   * challenges waits no longer than one with a single challenge. Resolves with a result to return
   * instead of retrying, or undefined when all completed.
   */
  async function authorize(
    server: Server,
    challenges: readonly ToolAuthorizationChallenge[],
    toolName: string,
    extra: Extra,
  ): Promise<CallToolResult | undefined> {
    const deadlineAt = clock.now() + waitMs;
    const deadline = new AbortController();
    const timer = clock.setTimeout(
      () => deadline.abort(new DOMException("The authorization was not completed in time", "TimeoutError")),
      waitMs,
    );
    unrefTimer(timer);
    const bounded = AbortSignal.any([extra.mcpReq.signal, deadline.signal]);
    try {
      return await walkThrough(challenges, { server, toolName, extra, deadlineAt, bounded });
    } finally {
      clock.clearTimeout(timer);
    }
  }

  /** The walk of {@link authorize} within its deadline: `bounded` aborts at `deadlineAt` (on the clock) or with the request. */
  async function walkThrough(
    challenges: readonly ToolAuthorizationChallenge[],
    walk: { server: Server; toolName: string; extra: Extra; deadlineAt: number; bounded: AbortSignal },
  ): Promise<CallToolResult | undefined> {
    const { server, toolName, extra, deadlineAt, bounded } = walk;
    const late = () => authorizationResult(challenges, "The authorization was not completed in time.");
    for (const challenge of challenges) {
      if (bounded.aborted) {
        if (extra.mcpReq.signal.aborted) {
          throw extra.mcpReq.signal.reason;
        }
        return late();
      }
      let answer: Awaited<ReturnType<Extra["mcpReq"]["elicitInput"]>>;
      try {
        answer = await extra.mcpReq.elicitInput(
          {
            mode: "url",
            message: `${toolName} needs your permission to access an account. Open the link to grant it.`,
            elicitationId: challenge.id,
            url: challenge.url,
          },
          // The SDK's own time limit (60 s unless given) would cut the wait short: it gets what is left.
          { signal: bounded, timeout: Math.max(1, deadlineAt - clock.now()) },
        );
      } catch (error) {
        if (extra.mcpReq.signal.aborted) {
          throw error;
        }
        if (bounded.aborted || clock.now() >= deadlineAt) {
          return late();
        }
        // The client declared URL elicitation but could not show it: the link goes in the result instead.
        return authorizationResult(challenges, "The tool needs an authorization.");
      }
      if (answer.action !== "accept") {
        return authorizationResult(challenges, "The authorization was not accepted.");
      }
      // Without a check_url on the server's own origin there is nothing the bridge may poll: the user
      // completes the authorization and calls again.
      if (!challenge.check_url || !sameOrigin(challenge.check_url, options.url)) {
        return authorizationResult(challenges, "The tool needs an authorization.");
      }
      let status: string;
      try {
        status = await client.waitForAuthorization(challenge, { signal: bounded, intervalMs: pollMs });
      } catch (error) {
        if (extra.mcpReq.signal.aborted) {
          throw error;
        }
        if (bounded.aborted) {
          return late();
        }
        return errorToCallToolResult(error);
      }
      if (status !== "completed") {
        return authorizationResult(challenges, "The authorization was denied or failed.");
      }
      // Tells the client the link's page is done with; a client that cannot take it changes nothing.
      await server
        .createElicitationCompletionNotifier(challenge.id, { relatedRequestId: extra.mcpReq.id })()
        .catch(() => undefined);
    }
    return undefined;
  }

  /**
   * One OXP call, run so that the MCP request's cancellation (`extra.mcpReq.signal`) cancels it. Without a progress
   * token it is a synchronous call (one POST, as a direct OXP client makes it); an abort ends its request and, where
   * the server offers tasks, DELETEs it by its call_id, which reaches the tool's AbortSignal (a call with a call_id
   * runs on when its client hangs up, its answer kept for a retry). With a progress token, where the server offers
   * tasks, it is asynchronous: accepted at once and followed, each progress sent as `notifications/progress`, the
   * abort DELETEs it. Elsewhere (an OXP 1.0 server) it is a plain call, and the abort only ends its HTTP request.
   */
  async function runCall(
    request: CallToolRequest,
    progressToken: ProgressToken | undefined,
    extra: Extra,
  ): Promise<CallToolResponse> {
    const { signal } = extra.mcpReq;
    if (progressToken === undefined) {
      try {
        return await client.callTool(request, { signal });
      } catch (error) {
        if (signal.aborted && request.call_id !== undefined) {
          // Best effort, not awaited: the call may not have started yet (a 404), or the server has no tasks.
          client.cancelCall(request.call_id).catch(() => undefined);
        }
        throw error;
      }
    }
    const call = await client.callToolAsync(request, { signal, cancelOnAbort: true, waitSeconds: 0 });
    // MCP wants each notification's progress above the last; a run posted again after a retryable
    // failure starts its own progress over, so what does not move on is not sent.
    let last = -1;
    for await (const { progress, total, message } of call.progress) {
      if (progress <= last) {
        continue;
      }
      last = progress;
      const params = {
        progressToken,
        progress,
        ...(total === undefined ? {} : { total }),
        ...(message === undefined ? {} : { message }),
      };
      // Awaited, so a slow client holds back the reading (which keeps only the latest), never a queue. A
      // notification that cannot be sent (the client went away) is no reason to fail the call.
      await extra.mcpReq.notify({ method: "notifications/progress", params }).catch(() => undefined);
    }
    return call.result();
  }

  /** One MCP tools/call: its tool looked up, then one OXP call, made again with its call_id once the user authorized it. */
  async function callTool(
    server: Server,
    params: McpCallToolRequest["params"],
    extra: Extra,
    caller: McpCaller | undefined,
  ) {
    const { name, arguments: args = {} } = params;
    if (toolSearch && (name === SEARCH_TOOL.name || name === LOAD_TOOL.name)) {
      // A catalog read, as tools/list is: it needs what tools/list needs (the HTTP layer asked for it already).
      if (caller && missingScopes(readScopes(), caller.scopes).length > 0) {
        return errorResult(`This tool needs the scope ${readScopes().join(" ")}: sign in again allowing it.`, {
          status: 403,
          can_retry: false,
          scopes: readScopes(),
        });
      }
      return name === SEARCH_TOOL.name
        ? searchTools(args, extra.mcpReq.signal, caller)
        : loadTools(args, extra.mcpReq.signal, caller);
    }
    const progressToken = extra.mcpReq._meta?.progressToken ?? params._meta?.progressToken;
    const entry = await lookup(name, extra.mcpReq.signal);
    if (!entry) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
    }
    // The HTTP layer answered a token without these scopes with its 403 already, from the catalog it read then; this
    // is the entry the call is made with, which a catalog read in between may have changed.
    const needed = callScopes(entry.definition);
    if (caller && missingScopes(needed, caller.scopes).length > 0) {
      return errorResult(`This tool needs the scopes ${needed.join(" ")}: sign in again allowing them.`, {
        status: 403,
        can_retry: false,
        scopes: needed,
      });
    }
    const request: CallToolRequest = { tool_id: entry.definition.id, call_id: randomUUID(), input: args };
    const ctx = context(caller);
    if (ctx) {
      request.context = ctx;
    }
    const hasOutput = entry.tool.outputSchema !== undefined;
    const once = async () => toCallToolResult(await runCall(request, progressToken, extra), entry.wrapped, hasOutput);
    try {
      return await once();
    } catch (error) {
      const challenges = error instanceof OxpServerError ? error.authorizationChallenges : [];
      if (challenges.length === 0) {
        return errorToCallToolResult(error);
      }
      if (!elicitsUrl(server)) {
        return authorizationResult(challenges, "The tool needs an authorization.");
      }
      const stop = await authorize(server, challenges, name, extra);
      if (stop) {
        return stop;
      }
    }
    // Retried once, with the same call_id: the first attempt never ran (a challenge comes before the tool).
    try {
      return await once();
    } catch (error) {
      const challenges = error instanceof OxpServerError ? error.authorizationChallenges : [];
      return challenges.length > 0
        ? authorizationResult(challenges, "The tool still needs an authorization.")
        : errorToCallToolResult(error);
    }
  }

  /**
   * `search-tools`: the OXP server's ranked search in its summary view, each match under the MCP name the bridge gives
   * its tool. A match the catalog read lacks (a tool added since, or an older version where only the latest are
   * bridged) is re-read for at most once per `missRefreshMs`, as an unknown name is, then left out. A caller sees only
   * the tools its token grants, as in tools/list (`[search.catalog-by-scope]`): the OXP server searches with the
   * bridge's credentials, so for a caller that lacks some tool's scopes the bridge asks for full pages, up to
   * {@link SEARCH_PAGES_FOR_CALLER} of them, until it has `limit` matches the caller may see.
   */
  async function searchTools(
    args: Record<string, unknown>,
    signal: AbortSignal,
    caller: McpCaller | undefined,
  ): Promise<CallToolResult> {
    const asked = searchArguments(args);
    if ("content" in asked) {
      return asked;
    }
    const { query, toolkit, limit } = asked;
    const wanted = limit ?? DEFAULT_SEARCH_LIMIT;
    const sees = (entry: Entry | undefined): entry is Entry =>
      entry !== undefined && (caller === undefined || grantsTool(entry.definition, caller.scopes));
    const items: { id: string; toolkit: string; score: number }[] = [];
    let narrowed = false;
    try {
      const seen = caller === undefined ? undefined : await fresh();
      narrowed = seen !== undefined && caller !== undefined && !seesEveryTool(seen, caller);
      let cursor: string | undefined;
      for (let page = 0; page < (narrowed ? SEARCH_PAGES_FOR_CALLER : 1); page++) {
        const found = await client.searchTools(query, {
          view: "summary",
          signal,
          ...(toolkit === undefined ? {} : { toolkit }),
          ...(narrowed ? { limit: MAX_SEARCH_LIMIT } : limit === undefined ? {} : { limit }),
          ...(cursor === undefined ? {} : { cursor }),
        });
        items.push(...found.items);
        cursor = found.next_cursor;
        if (cursor === undefined || !narrowed || items.filter(({ id }) => sees(seen?.byId.get(id))).length >= wanted) {
          break;
        }
      }
    } catch (error) {
      if (error instanceof OxpExtensionUnavailableError) {
        return errorResult(
          "The tool server does not offer search (the OXP search extension): every tool is in the tool list.",
          { can_retry: false },
        );
      }
      return errorToCallToolResult(error);
    }
    let read = await fresh();
    if (items.some(({ id }) => !read.byId.has(id)) && clock.now() - read.readAt >= missRefreshMs) {
      read = await readCatalog(signal);
    }
    const found: FoundTool[] = [];
    for (const { id, toolkit, score } of items) {
      const entry = read.byId.get(id);
      if (!sees(entry)) {
        continue;
      }
      if (narrowed && found.length === wanted) {
        break;
      }
      const { name, title, description = "" } = entry.tool;
      found.push({ name, ...(title === undefined ? {} : { title }), description, toolkit, score });
    }
    return metaResult({ tools: found });
  }

  /**
   * `load-tools`: the MCP tools of `names`, in the order asked, as tools/list lists them (without `_meta`); unknown
   * names listed apart. A tool the caller's token does not grant is one of those: what tools/list and `search-tools`
   * do not show the caller, `load-tools` does not either (`[search.catalog-by-scope]`: an id the token cannot call is
   * answered as one that names no tool). Calling it by name still gets the 403 that asks for its scopes.
   */
  async function loadTools(
    args: Record<string, unknown>,
    signal: AbortSignal,
    caller: McpCaller | undefined,
  ): Promise<CallToolResult> {
    const names = loadArguments(args);
    if (!Array.isArray(names)) {
      return names;
    }
    const tools: Omit<McpTool, "_meta">[] = [];
    const unknown: string[] = [];
    for (const name of new Set(names)) {
      const entry = await lookup(name, signal);
      if (entry && (caller === undefined || grantsTool(entry.definition, caller.scopes))) {
        tools.push(loadedTool(entry.tool));
      } else {
        unknown.push(name);
      }
    }
    if (tools.length === 0) {
      return argumentError(`no tool has these names: ${unknown.join(", ")}. ${SEARCH_TOOL.name} gives the names.`);
    }
    return metaResult(unknown.length === 0 ? { tools } : { tools, unknown });
  }

  /**
   * tools/list's tools: with `toolSearch` the meta-tools first, then every bridged tool, or for a caller those its
   * token grants (in the same order).
   */
  const listed = (read: Catalog, caller?: McpCaller): McpTool[] => {
    // A caller's list is kept with the catalog read: each answer gets its own array, never the one kept.
    const granted = grantedTools(read, caller);
    const tools = granted ? [...granted] : [...read.entries.values()].map((entry) => entry.tool);
    return toolSearch ? [...META_TOOLS, ...tools] : tools;
  };

  return {
    client,
    async listTools() {
      return listed(await readCatalog());
    },
    async ready(signal) {
      if (!toolSearch) {
        return;
      }
      let extensions: string[];
      try {
        ({ extensions } = await client.discover(signal ? { signal } : {}));
      } catch (error) {
        if (signal?.aborted) {
          throw error;
        }
        // Not readable now: the bridge starts as it always does, and search-tools answers what it finds when called.
        return;
      }
      if (!extensions.includes("search")) {
        throw new Error(
          `toolSearch needs an OXP server that offers the search extension (docs/protocol.md 9.5); ${new URL(options.url).origin} offers ${extensions.length > 0 ? extensions.join(", ") : "no extension"}`,
        );
      }
    },
    async callScopes(name, signal) {
      if (toolSearch && (name === SEARCH_TOOL.name || name === LOAD_TOOL.name)) {
        return readScopes();
      }
      return callScopes((await lookup(name, signal))?.definition);
    },
    async catalogScopes() {
      return [...(await fresh()).scopes];
    },
    createServer(caller) {
      const server = new Server(serverInfo, {
        // `logging`: hosts may set a level (logging/setLevel answers {}); the bridge itself sends no log
        // messages, since OXP calls report progress, not logs.
        capabilities: { tools: {}, logging: {} },
        instructions: toolSearch
          ? `Tools of an OXP (Open eXecution Protocol) tool server. ${SEARCH_TOOL.name} finds the ones that fit a task.`
          : "Tools of an OXP (Open eXecution Protocol) tool server.",
      });
      server.setRequestHandler("tools/list", async (_request, extra) => {
        const modern = servesModern(server);
        let read: Catalog;
        try {
          read = await readCatalog(extra.mcpReq.signal, modern);
        } catch (error) {
          throw new ProtocolError(ProtocolErrorCode.InternalError, errorText(error));
        }
        const tools = listed(read, caller);
        return modern ? withCacheFields({ tools }, read.cache, caller) : { tools };
      });
      server.setRequestHandler("tools/call", async (request, extra) => {
        try {
          return await callTool(server, request.params, extra, caller);
        } catch (error) {
          if (error instanceof ProtocolError || extra.mcpReq.signal.aborted) {
            throw error;
          }
          throw new ProtocolError(ProtocolErrorCode.InternalError, errorText(error));
        }
      });
      return server;
    },
  };
}

/** Whether `server` serves a 2026-07-28 (or later) client: not one of the 2025-era revisions of the initialize handshake. */
function servesModern(server: Server): boolean {
  const version = server.getNegotiatedProtocolVersion();
  return version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version);
}

/**
 * A 2026-07-28 tools/list result with the OXP list's cache fields (docs/protocol.md 9.9) as that revision names them,
 * `ttlMs` and `cacheScope` (SEP-2549's CacheableResult; the SDK fills `0` and `private` for a result without them).
 * The 2025 revisions have no such fields: their results stay as they were. The scope is `private` for a signed-in
 * caller's list whatever the OXP server says of the bridge's own.
 */
function withCacheFields(
  result: { tools: McpTool[] },
  cache: ListCacheFields | undefined,
  caller: McpCaller | undefined,
): { tools: McpTool[] } {
  if (cache === undefined) {
    return result;
  }
  const fields: ListCacheFields = { ...cache };
  if (caller && fields.cacheScope !== undefined) {
    fields.cacheScope = "private";
  }
  // Fields the SDK's neutral result type leaves to its 2026-07-28 encoder, which keeps a handler's valid values.
  return { ...result, ...fields };
}

/** What a failure to reach or read the OXP server says to the MCP client: no URL, no credentials. */
function errorText(error: unknown): string {
  if (error instanceof OxpAuthenticationError) {
    return "The tool server refused the bridge's credentials";
  }
  if (error instanceof OxpServerError) {
    return `The tool server refused: ${error.message}`;
  }
  if (error instanceof OxpConnectionError || error instanceof OxpTimeoutError) {
    return "The tool server could not be reached or did not answer in time";
  }
  if (error instanceof OxpResponseTooLargeError) {
    return "The tool server's answer was too large";
  }
  if (error instanceof OxpCrossOriginError) {
    return "The tool server sent the bridge to another server";
  }
  if (error instanceof OxpProtocolError) {
    return "The tool server's answer did not follow the protocol";
  }
  return "The bridge failed";
}
