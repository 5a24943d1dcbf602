/** The fetch adapter: `(request) => Promise<Response>` for Bun, Deno, Cloudflare Workers and any fetch-based host; the pipeline does the rest. */
import { consoleLogger } from "../core/console-logger.js";
import { ServerConfigError } from "../core/errors.js";
import { EXTENSIONS, type ExtensionId } from "../core/extensions.js";
import type { OrPromise } from "../core/fast-path.js";
import type { Answer, Exchange } from "./exchange.js";
import { isIPv4, isIPv6 } from "./ip.js";
import type { AdapterOptions, OxpRuntime } from "./options.js";
import { configuredExtension, createPipeline } from "./pipeline.js";
import { bodyLimitBytes, bodyTooLarge } from "./request-body.js";
import { pathOf, queryOf } from "./url.js";

/** Options of {@link createFetchHandler}: those of every adapter. */
export type FetchHandlerOptions = AdapterOptions;

/** What a host may tell of a request's connection, when it knows: the explicit form of a {@link FetchHandler}'s second argument. */
export interface ClientInfo {
  /** The client's address: the per-client limits of anonymous callers count by it, and the default Host check reads it. */
  remoteAddress?: string;
  /** The address the request arrived on. */
  localAddress?: string;
  /** Where the server was reached (`http://127.0.0.1:8080`): the base of challenge links when `publicUrl` is not set. */
  origin?: string;
}

/** Deno's `ServeHandlerInfo`, the second argument of `Deno.serve`'s handler, as far as a {@link FetchHandler} reads it. */
export interface DenoServeHandlerInfo {
  /** The client's address: read when `transport` is `"tcp"` (a Unix socket's has no `hostname`). */
  readonly remoteAddr: { readonly transport: string; readonly hostname?: string };
}

/** Bun's `Server`, the second argument of `Bun.serve`'s `fetch`, as far as a {@link FetchHandler} reads it. */
export interface BunServer {
  /** The client's address, or null when Bun no longer knows it (the socket is closed). */
  requestIP(request: Request): { readonly address: string } | null;
}

/**
 * The second argument of a {@link FetchHandler}: a {@link ClientInfo}, or what Deno (`Deno.serve(handler)`) and Bun
 * (`Bun.serve({ fetch: handler })`) pass there themselves, read for the client's address. Anything else a host
 * passes (Cloudflare Workers' `env`, a Node bridge's own object) is ignored.
 */
export type FetchHandlerInfo = ClientInfo | DenoServeHandlerInfo | BunServer | object;

/** A fetch handler serving OXP, with its runtime (lifecycle, drain, abortAll) for a host's own shutdown. */
export type FetchHandler = ((request: Request, info?: FetchHandlerInfo) => Promise<Response>) & {
  readonly oxp: OxpRuntime;
};

/**
 * Creates a fetch handler that serves the given tools over OXP, with the same options and the same contract as
 * `createHandler` (node:http) and `createServer` (Express). It imports no Node module: it runs on Bun
 * (`Bun.serve({ fetch: handler })`), Deno (`Deno.serve(handler)`), Cloudflare Workers
 * (`export default { fetch: handler }`) and Node through any fetch bridge.
 *
 * On Bun and Deno the handler reads the client's address from the runtime's own second argument (Bun's `Server`,
 * Deno's `ServeHandlerInfo`); elsewhere pass it as `{ remoteAddress }`. Anonymous callers' fair share and the
 * default Host check count by it.
 *
 * State kept in memory (call_id answers, challenges, tokens, the fair-share budget) is per process, and on
 * Workers per isolate: give the stores options a shared store (e.g. Redis, or one of your own) where instances
 * must agree.
 *
 * @example
 * const handler = createFetchHandler({ tools: [add] });
 * Deno.serve(handler); // or Bun.serve({ fetch: handler }), or export default { fetch: handler }
 */
export function createFetchHandler(options: FetchHandlerOptions): FetchHandler {
  const onWorkers = options.extensions === undefined && isWorkers();
  const workers = () => WORKERS_EXTENSIONS.filter(configuredExtension(options));
  const pipeline = createPipeline(onWorkers ? { ...options, extensions: workers() } : options, {
    defaultLogger: consoleLogger,
  });
  const discardMax = Math.max(DISCARD_MAX_BYTES, 2 * bodyLimitBytes(options.bodyLimit));
  const respond = (exchange: FetchExchange, answer: Answer, method: string): OrPromise<Response> => {
    if (answer.headers.Connection === "close" && exchange.bodyLeft()) {
      return exchange.discardBody(discardMax).then(() => toResponse(answer, method));
    }
    // An answer that keeps the connection leaves an unread body to the host, which reads past it.
    exchange.cancelUnfinished();
    return toResponse(answer, method);
  };
  const handler = (request: Request, info?: FetchHandlerInfo): Promise<Response> => {
    const exchange = new FetchExchange(request, info);
    return pipeline.handle(exchange).then(
      // Only a host page answers without an answer here, and a fetch exchange offers none.
      (answer) => respond(exchange, answer ?? pipeline.fail(exchange, new Error("no answer")), request.method),
      (error: unknown) => respond(exchange, pipeline.fail(exchange, error), request.method),
    );
  };
  return Object.assign(handler, { oxp: pipeline.runtime });
}

/**
 * The extensions offered on Cloudflare Workers unless the options name them: all but `tasks`. workerd ends a
 * request's timers and promises once its response is sent, so a call answered 202 would never run to its end and
 * would read `running` until its record expired; a discovery document does not list what the server cannot serve.
 */
const WORKERS_EXTENSIONS: readonly ExtensionId[] = EXTENSIONS.filter((id) => id !== "tasks");

/** True on Cloudflare Workers (workerd), which names itself in `navigator.userAgent`. */
function isWorkers(): boolean {
  return (globalThis as { navigator?: { userAgent?: unknown } }).navigator?.userAgent === "Cloudflare-Workers";
}

/** The pipeline's answer as a `Response` (no body for HEAD). */
function toResponse(answer: Answer, method: string): Response {
  if (answer.response) {
    return answer.response;
  }
  const body = method === "HEAD" || answer.body === undefined ? null : answer.body;
  return new Response(body as ConstructorParameters<typeof Response>[0], {
    status: answer.status,
    headers: answer.headers,
  });
}

/** The answer of {@link clientInfoOf} when the second argument tells nothing: one object, made once. */
const NOTHING_KNOWN: ClientInfo = Object.freeze({});

/**
 * What a {@link FetchHandler}'s second argument tells of the request's connection: a {@link ClientInfo}'s string
 * fields; the client's address from Deno's `ServeHandlerInfo` (a TCP `remoteAddr`) or Bun's `Server`
 * (`requestIP(request)`); nothing from anything else, Workers' `env` among them. Never throws: a host's object may
 * have getters of its own, and an odd argument only leaves the address unknown.
 */
function clientInfoOf(request: Request, info: FetchHandlerInfo | undefined): ClientInfo {
  if (typeof info !== "object" || info === null) {
    return NOTHING_KNOWN;
  }
  try {
    const { remoteAddress, localAddress, origin } = info as ClientInfo;
    if (typeof remoteAddress === "string" || typeof localAddress === "string" || typeof origin === "string") {
      return {
        remoteAddress: typeof remoteAddress === "string" ? remoteAddress : undefined,
        localAddress: typeof localAddress === "string" ? localAddress : undefined,
        origin: typeof origin === "string" ? origin : undefined,
      };
    }
    const { remoteAddr } = info as Partial<DenoServeHandlerInfo>;
    if (typeof remoteAddr === "object" && remoteAddr !== null) {
      return remoteAddr.transport === "tcp" && typeof remoteAddr.hostname === "string"
        ? { remoteAddress: remoteAddr.hostname }
        : NOTHING_KNOWN;
    }
    const { requestIP } = info as Partial<BunServer>;
    if (typeof requestIP === "function") {
      const address = requestIP.call(info, request)?.address;
      return typeof address === "string" ? { remoteAddress: address } : NOTHING_KNOWN;
    }
  } catch {
    // A getter or requestIP that throws tells nothing.
  }
  return NOTHING_KNOWN;
}

/**
 * Bodies declared at most this long are read whole ({@link FetchExchange.readWhole}), larger or undeclared ones as
 * a stream: 64 KiB, one read of a socket on most hosts.
 */
const WHOLE_BODY_MAX_BYTES = 64 * 1024;

/**
 * How much of a refused body the handler reads and drops before its answer (at least; twice the body limit when
 * that is more). An answer that closes the connection while the client is still sending loses itself: Bun and
 * workerd close at once, the client's next write fails (EPIPE) and it never reads the 413 or 429 that was sent. So
 * a body up to this size is read to its end first, then answered; a larger one is answered at once.
 */
const DISCARD_MAX_BYTES = 8 * 1024 * 1024;

/**
 * A fetch `Request`, seen by the pipeline. It has no connection to tell of, nor a count of `Host` headers: the host
 * parsed the request and kept one Host, a repeated one being its own to refuse.
 */
class FetchExchange implements Exchange {
  readonly method: string;
  readonly path: string | undefined;
  readonly localAddress: string | undefined;
  readonly remoteAddress: string | undefined;
  private readonly origin: string | undefined;
  constructor(
    private readonly request: Request,
    info: FetchHandlerInfo | undefined,
  ) {
    this.method = request.method;
    this.path = pathOf(request.url);
    const client = clientInfoOf(request, info);
    this.localAddress = client.localAddress;
    this.remoteAddress = client.remoteAddress;
    this.origin = client.origin;
  }
  query(): string {
    return queryOf(this.request.url);
  }
  header(name: string): string | undefined {
    const value = this.request.headers.get(name);
    if (value !== null) {
      return value;
    }
    // A host that keeps Host in the URL only (the request was made in code): the URL's is the one sent.
    return name === "host" ? new URL(this.request.url).host : undefined;
  }
  headers(): Readonly<Record<string, string | undefined>> {
    const all: Record<string, string> = {};
    this.request.headers.forEach((value, name) => {
      all[name] = value;
    });
    return all;
  }
  baseUrl(): string {
    if (this.origin) {
      return this.origin;
    }
    // The URL's host is the request's Host: a link is built from it only when it names an address (or localhost),
    // which is then where the server was reached, never from a name a client chose.
    const url = new URL(this.request.url);
    const name = url.hostname.replace(/^\[|\]$/g, "");
    if (isIPv4(name) || isIPv6(name) || name === "localhost") {
      return url.origin;
    }
    throw new ServerConfigError(
      "A challenge link needs the server's public URL: set publicUrl (a fetch host does not tell the handler its address, and links are never built from Host)",
    );
  }
  /** The reader of a body whose reading stopped before its end (refused as it came): the rest is for {@link discardBody}. */
  private unfinished: ReadableStreamDefaultReader<Uint8Array> | undefined;
  readText(limit: number, declared: number, inspect: (piece: string, whole: boolean) => void): Promise<string> {
    return declared <= WHOLE_BODY_MAX_BYTES ? this.readWhole(limit, inspect) : this.readStream(limit, inspect);
  }
  /** Whether part of the request's body is still unread: never read, or refused before its end. */
  bodyLeft(): boolean {
    return this.unfinished !== undefined || (this.request.body !== null && !this.request.bodyUsed);
  }
  /**
   * Reads what is left of the body and drops it, so that the host can close the connection cleanly once it has
   * sent the answer: up to `max` bytes (a body declared longer is not read at all); past that the rest is cancelled.
   * Never rejects: a client that goes away has no answer to read.
   */
  async discardBody(max: number): Promise<void> {
    const reader = this.unfinished ?? this.unreadBody(max);
    this.unfinished = undefined;
    if (!reader) {
      return;
    }
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          return;
        }
        size += value.length;
        if (size > max) {
          break;
        }
      }
    } catch {
      return;
    }
    reader.cancel().catch(() => {});
  }
  /** Cancels the rest of a body refused before its end, if any. */
  cancelUnfinished(): void {
    this.unfinished?.cancel().catch(() => {});
    this.unfinished = undefined;
  }
  /** A reader of the body, when none was made and it is not declared longer than `max`. */
  private unreadBody(max: number): ReadableStreamDefaultReader<Uint8Array> | undefined {
    const { body } = this.request;
    if (!body || this.request.bodyUsed || Number(this.request.headers.get("content-length")) > max) {
      return undefined;
    }
    return body.getReader();
  }
  /**
   * A small body, read at once as text: the host's framing bounds it to its declared length (checked against the
   * limit before reading), and it comes in one piece from most sockets anyway. No stream is made for it, nor bytes:
   * on Node's bridges a body stream is most of a call's cost, and an `ArrayBuffer` per call costs more than the
   * decoding (bench/results/notes.md).
   */
  private readWhole(limit: number, inspect: (piece: string, whole: boolean) => void): Promise<string> {
    return this.request.text().then((text) => {
      // A text longer than `limit` is more than `limit` bytes; the declared length was checked against it already.
      if (text.length > limit) {
        throw bodyTooLarge(limit);
      }
      if (text.length > 0) {
        inspect(text, true);
      }
      return text;
    });
  }
  /** A body of unknown or larger size, bounded and inspected chunk by chunk as it comes. */
  private async readStream(limit: number, inspect: (piece: string, whole: boolean) => void): Promise<string> {
    const body = this.request.body;
    if (!body) {
      return "";
    }
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          break;
        }
        size += value.length;
        if (size > limit) {
          throw bodyTooLarge(limit);
        }
        const piece = decoder.decode(value, { stream: true });
        inspect(piece, false);
        text += piece;
      }
    } catch (error) {
      // What is left is read and dropped before the answer (discardBody), or cancelled when the answer keeps the
      // connection open.
      this.unfinished = reader;
      throw error;
    }
    return text + decoder.decode();
  }
  watchClient(onGone: () => void): () => void {
    const signal = this.request.signal;
    if (signal.aborted) {
      queueMicrotask(onGone);
      return () => {};
    }
    signal.addEventListener("abort", onGone, { once: true });
    return () => signal.removeEventListener("abort", onGone);
  }
  toRequest(): Request {
    return this.request;
  }
}
