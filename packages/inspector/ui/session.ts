/** The page's link to a server: clients of @otc/client with a fetch that records each exchange, masked, for the history. */
import { type AccessTokenProvider, type ClientOptions, createClient, type OxpClient, sameOrigin } from "@otc/client";
import { type DiscoveryDocument, OXP_VERSION } from "@otc/types";

/** What the user typed to reach a server. Kept in React state only: never stored, never sent elsewhere. */
export interface Credentials {
  serverUrl: string;
  apiKey: string;
  jwtSecret: string;
  jwtAudience: string;
  /** The JWT's `sub`: servers key a caller's stored results and held tokens by it, and refuse JWTs without one. */
  jwtSubject: string;
  /** An OAuth access token, pasted; sent in place of a JWT when both are there. */
  accessToken: string;
  /**
   * The page's Sign in to this server (its SignInSession's `accessTokens`): asked for the access token before each
   * request and after a 401, so that it renews the token. Used when no token was pasted, in place of a JWT.
   */
  signIn?: AccessTokenProvider;
}

/** The JWT subject the form starts with. */
export const DEFAULT_JWT_SUBJECT = "oxp-inspector";

/** One HTTP exchange as the history shows it, with every credential masked. */
export interface Exchange {
  method: string;
  url: string;
  requestHeaders: [string, string][];
  requestBody: string;
  /** 0 when no answer came (network error, CORS refusal). */
  status: number;
  responseHeaders: [string, string][];
  responseBody: string;
  durationMs: number;
}

export const MASK = "••••••";

/** Where the page connects when its URL has no `?url=`: the configured server, else the server it is served by. */
export function defaultServerUrl(config: PageConfig, location: Location): string {
  const preset = new URLSearchParams(location.search).get("url");
  if (preset) {
    return preset;
  }
  if (config.serverUrl) {
    return config.serverUrl;
  }
  return `${location.origin}${location.pathname.replace(/\/inspector\/?$/, "")}`;
}

/** What the server put in the page (`<script id="inspector-config">`). */
export interface PageConfig {
  serverUrl: string | null;
  /** Origins besides the page's own that the page's Content-Security-Policy lets it call. */
  connectOrigins: string[];
}

export function readPageConfig(): PageConfig {
  const element = document.getElementById("inspector-config");
  try {
    const parsed = JSON.parse(element?.textContent ?? "{}") as Partial<PageConfig>;
    return { serverUrl: parsed.serverUrl ?? null, connectOrigins: parsed.connectOrigins ?? [] };
  } catch {
    return { serverUrl: null, connectOrigins: [] };
  }
}

/** True when the page's policy lets it call `url`; otherwise the page must reload with `?url=` first. */
export function canConnect(url: string, config: PageConfig, location: Location): boolean {
  try {
    const origin = new URL(url).origin;
    return origin === location.origin || config.connectOrigins.includes(origin);
  } catch {
    return false;
  }
}

/**
 * True when the client may poll this check_url: it resolves (as the client resolves it) to the origin
 * of the server the user named. Polling sends that server's API key or JWT, and a server must not be
 * able to have them sent anywhere else.
 */
export function canPoll(checkUrl: string, serverUrl: string): boolean {
  // The client's own check: it refuses to poll anywhere else too.
  return sameOrigin(checkUrl, serverUrl);
}

/** True for an http(s) URL: the only kind the page opens for a challenge (never `javascript:` or `data:`). */
export function canOpen(url: string): boolean {
  try {
    const { protocol } = new URL(url);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

/** A v4 UUID from getRandomValues, which (unlike `crypto.randomUUID`) also works on plain-http pages. */
export function newCallId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const SECRET_HEADERS = new Set(["oxp-api-key", "authorization", "cookie", "set-cookie", "proxy-authorization"]);

function maskHeaders(headers: Headers): [string, string][] {
  return [...headers.entries()].map(([name, value]) => {
    if (!SECRET_HEADERS.has(name.toLowerCase())) {
      return [name, value];
    }
    const scheme = /^(\w+)\s/.exec(value)?.[1];
    return [name, scheme ? `${scheme} ${MASK}` : MASK];
  });
}

/** A request body with `context.secrets[].value` and `context.authorization[].token` masked. */
export function maskBody(text: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return text;
  }
  const mask = (request: unknown) => {
    const context = (request as { context?: Record<string, unknown> } | null)?.context;
    if (!context || typeof context !== "object") {
      return;
    }
    for (const [list, field] of [
      ["secrets", "value"],
      ["authorization", "token"],
    ] as const) {
      const items = context[list];
      if (!Array.isArray(items)) {
        continue;
      }
      for (const item of items) {
        if (item && typeof item === "object" && field in item) {
          item[field] = MASK;
        }
      }
    }
  };
  mask(body);
  // The older envelope form carries the request one level down.
  mask((body as { request?: unknown } | null)?.request);
  return JSON.stringify(body, null, 2);
}

function pretty(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

/** The most of an answer's body the history keeps: a hostile server's 100 MB answer must not fill the page. */
export const HISTORY_BODY_BYTES = 256 * 1024;

/** The first `max` bytes of a body as text, with a marker when there was more; the rest is never read. */
async function headOf(response: Response, max: number): Promise<string> {
  if (!response.body) {
    return "";
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) {
      break;
    }
    chunks.push(value);
    size += value.byteLength;
    if (size > max) {
      cut = true;
      await reader.cancel().catch(() => {});
      break;
    }
  }
  const bytes = new Uint8Array(Math.min(size, max));
  let at = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, Math.min(chunk.byteLength, bytes.byteLength - at));
    bytes.set(part, at);
    at += part.byteLength;
  }
  const text = new TextDecoder().decode(bytes);
  return cut ? `${text}\n... (the history keeps the first ${max} bytes of this answer)` : text;
}

/** True for an answer that is an event stream: it lasts as long as its call, so it is recorded once it ends. */
function isEventStream(response: Response): boolean {
  return /^text\/event-stream\b/i.test(response.headers.get("content-type") ?? "");
}

/**
 * An event stream handed on as it comes, its first {@link HISTORY_BODY_BYTES} characters kept: `done` gets them
 * once the stream ends, however it ends (read to its end, cancelled, broken, or its request aborted).
 */
function recordedStream(
  response: Response,
  signal: AbortSignal,
  done: (kept: string, why: string | undefined) => void,
): Response {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let kept = "";
  let cut = false;
  let ended = false;
  const end = (why?: string) => {
    if (ended) {
      return;
    }
    ended = true;
    signal.removeEventListener("abort", onAbort);
    const note = cut ? `\n... (the history keeps the first ${HISTORY_BODY_BYTES} characters of this stream)` : "";
    done(`${kept}${note}`, why);
  };
  // The client closes a stream by aborting its request once it has the result: nothing reads it after that.
  const onAbort = () => end();
  signal.addEventListener("abort", onAbort, { once: true });
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        end(`the stream broke: ${error instanceof Error ? error.message : String(error)}`);
        controller.error(error);
        return;
      }
      if (chunk.done) {
        end();
        controller.close();
        return;
      }
      const room = HISTORY_BODY_BYTES - kept.length;
      if (room > 0) {
        const text = decoder.decode(chunk.value, { stream: true });
        kept += text.slice(0, room);
        cut ||= text.length > room;
      } else {
        // Past the head the stream is handed on, not kept.
        cut = true;
      }
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * A fetch that hands every exchange, masked, to `record`: before the client reads the answer, or, for an event
 * stream, once the stream ends (the client reads it as it comes).
 */
export function recordingFetch(record: (exchange: Exchange) => void): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const requestBody = request.body ? await request.clone().text() : "";
    const start = performance.now();
    const base = {
      method: request.method,
      url: request.url,
      requestHeaders: maskHeaders(request.headers),
      requestBody: maskBody(requestBody),
    };
    let response: Response;
    try {
      response = await fetch(request);
    } catch (error) {
      record({
        ...base,
        status: 0,
        responseHeaders: [],
        responseBody: error instanceof Error ? error.message : String(error),
        durationMs: performance.now() - start,
      });
      throw error;
    }
    if (isEventStream(response) && response.body) {
      return recordedStream(response, request.signal, (kept, why) =>
        record({
          ...base,
          status: response.status,
          responseHeaders: maskHeaders(response.headers),
          responseBody: why ? `${kept}\n(${why})` : kept,
          durationMs: performance.now() - start,
        }),
      );
    }
    const responseBody = await headOf(response.clone(), HISTORY_BODY_BYTES);
    record({
      ...base,
      status: response.status,
      responseHeaders: maskHeaders(response.headers),
      responseBody: pretty(responseBody),
      durationMs: performance.now() - start,
    });
    return response;
  };
}

/** The client's options for the named server: one attempt per call, and the page's fetch. */
function clientOptions(credentials: Credentials, doFetch: typeof fetch): ClientOptions {
  const options: ClientOptions = {
    baseUrl: credentials.serverUrl,
    fetch: doFetch,
    retry: { maxAttempts: 1 },
    timeoutMs: 120_000,
  };
  if (credentials.apiKey) {
    options.apiKey = credentials.apiKey;
  }
  if (credentials.accessToken) {
    // The client sends one bearer token: the access token, when there is one, rather than a JWT.
    options.accessToken = credentials.accessToken;
  } else if (credentials.signIn) {
    options.accessToken = credentials.signIn;
  } else if (credentials.jwtSecret) {
    options.jwt = {
      secret: credentials.jwtSecret,
      // An emptied field falls back to the default: a JWT without a sub is refused.
      subject: credentials.jwtSubject || DEFAULT_JWT_SUBJECT,
      ...(credentials.jwtAudience ? { audience: credentials.jwtAudience } : {}),
    };
  }
  return options;
}

/**
 * A client for the named server. One attempt per call: the page shows what the server answered, retry hints
 * included, instead of retrying on the user's behalf. `extensions`, when given, are those the page uses with the
 * server (from the discovery document it read on connecting, less any the server's CORS policy refuses): the
 * client takes them for the server's, so it asks for no discovery document of its own, and none shows in a call's
 * history.
 *
 * @example
 * const client = clientFor(credentials, (exchange) => exchanges.push(exchange), ["tasks"]);
 * const call = await client.callToolAsync(request);
 */
export function clientFor(
  credentials: Credentials,
  record: (exchange: Exchange) => void = () => {},
  extensions?: readonly string[],
): OxpClient {
  const options = clientOptions(credentials, recordingFetch(record));
  if (extensions) {
    options.discovery = { oxp_versions: [OXP_VERSION], extensions: [...extensions] };
  }
  return createClient(options);
}

/** The settings the discovery document gives for the extensions the page uses beyond the header (9.6, 9.7). */
export type ExtensionInfo = NonNullable<DiscoveryDocument["extension_info"]>;

/** The most bytes of a discovery document the page reads: a few ids and settings. */
const MAX_DISCOVERY_BYTES = 64 * 1024;

/**
 * The `extension_info` of the server's discovery document (`GET /.well-known/oxp`, never authenticated), or undefined
 * when it has none or cannot be read. The client's `discover()` answers the versions and extensions only; the page
 * needs the oauth extension's resource metadata URL and the connections extension's providers too.
 */
export async function readExtensionInfo(
  serverUrl: string,
  doFetch: typeof fetch = fetch,
): Promise<ExtensionInfo | undefined> {
  try {
    const base = serverUrl.endsWith("/") ? serverUrl : `${serverUrl}/`;
    const response = await doFetch(new URL(".well-known/oxp", base), { headers: { accept: "application/json" } });
    const text = response.ok ? await headOf(response, MAX_DISCOVERY_BYTES) : "";
    const info = (JSON.parse(text || "{}") as { extension_info?: unknown }).extension_info;
    return info && typeof info === "object" && !Array.isArray(info) ? (info as ExtensionInfo) : undefined;
  } catch {
    return undefined;
  }
}
