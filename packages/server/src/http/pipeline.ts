/**
 * The one request pipeline every adapter runs (node:http, Express, fetch). Every protocol step lives here, in the
 * order of docs/protocol.md 3.3 (see {@link Pipeline.handle}); an adapter only translates its host's request
 * into an {@link Exchange} and writes the {@link Answer} back. Runtime-neutral: no `node:` module.
 */
import { type CallStatus, OXP_VERSION, TOOLS_CALLS_PATH_TEMPLATE, type Validator } from "@otc/types";
import bytes from "bytes";
import corsMiddleware from "cors";
import Negotiator from "negotiator";
import vary from "vary";
import {
  type CallBody,
  checkCallBody,
  SPEC_MISMATCH_MESSAGE,
  unwrapCallBody,
  wrapResponse,
} from "../core/call-body.js";
import { everyOn } from "../core/clock.js";
import { ServerConfigError, shorten, WireError } from "../core/errors.js";
import {
  appliedHeader,
  EXTENSIONS,
  type ExtensionId,
  type ExtensionSet,
  pageOf,
  requestedExtensions,
} from "../core/extensions.js";
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_VALUES, type JsonLimits, JsonScanner } from "../core/json-limits.js";
import { type CallMeta, type CallObserver, type CoreLogger, OxpCore } from "../core/oxp-core.js";
import { checkOxpVersionHeader } from "../core/protocol-version.js";
import { MAX_WAIT_SECONDS, parsePrefer } from "../core/tasks.js";
import { parseTraceparent } from "../core/traceparent.js";
import { createHostCheck } from "./allowed-hosts.js";
import { createAuthenticator } from "./authentication.js";
import { callEventStream } from "./call-events.js";
import { ANONYMOUS_CLIENT_PREFIX, ClientBudget } from "./client-budget.js";
import { addressGroup } from "./ip.js";
import type { AdapterOptions, CorsOptions, OxpLifecycle, OxpRuntime } from "./options.js";
import { responseValidator } from "./response-validators.js";
import { type ProtocolRoute, protocolRouteOf, type RouteName, TASK_ROUTES } from "./routes.js";

/** One request as an adapter hands it to the pipeline. */
export interface Exchange {
  /** The method, upper case as sent. */
  readonly method: string;
  /** The target's path below the mount point, query dropped; undefined when the target names no path. */
  readonly path: string | undefined;
  /** The target's query, without its `?` (and without a fragment): empty when there is none. */
  query(): string;
  /** A header's value (the name in lower case), the first of several. */
  header(name: string): string | undefined;
  /** Every header, names in lower case: what a trace propagator may read. Asked only when tracing. */
  headers(): Readonly<Record<string, string | undefined>>;
  /** How many `Host` headers the request carried (RFC 9112 3.2 wants exactly one; HTTP/1.0's missing one counts as one). */
  hostHeaders(): number;
  /** The address the request arrived on, when the host knows it. */
  readonly localAddress: string | undefined;
  /** The client's address, when the host knows it. */
  readonly remoteAddress: string | undefined;
  /** An object living as long as the connection (where the Host check remembers its verdict), when there is one. */
  readonly connection: object | undefined;
  /** Where the server was reached, scheme to port plus any mount path: the base of check URLs without `publicUrl`. */
  baseUrl(): string;
  /**
   * Reads the body as UTF-8 text, handing each decoded piece to `inspect` as it comes (which throws to refuse the
   * rest), `whole` when the piece is the entire body; rejects with {@link bodyTooLarge} past `limit` bytes, leaving
   * the rest unread. `declared` is the request's Content-Length as the pipeline read it (NaN without one).
   */
  readText(limit: number, declared: number, inspect: (piece: string, whole: boolean) => void): Promise<string>;
  /** Calls `onGone` if the client goes away before the answer is written; returns the function that stops watching. */
  watchClient(onGone: () => void): () => void;
  /** The request as a fetch `Request`, for the fetch pages (made only for a path no protocol route serves). */
  toRequest(): Request;
  /** The host's own pages (node-style handlers), tried before the fetch pages; true once one answered. `headers` go on its answer. */
  hostPages?(headers: Record<string, string>): Promise<boolean>;
}

/** What the pipeline answers: a JSON answer (`body` text, or bytes of the gzipped tool list), or a page's `Response`. */
export interface Answer {
  status: number;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** A page's answer; `headers` are to be added to it. */
  response?: Response;
}

/**
 * A host's own contract check of a request (Express: express-openapi-validator), run where the pipeline would
 * check `OXP-Version` and the call body itself: throws what it finds wrong. The pipeline then does not check
 * them again: one validator per path.
 */
export type ContractCheck = (exchange: Exchange, route: RouteName, body: unknown) => void | Promise<void>;

/** What an adapter adds to the options. */
export interface PipelineHost {
  /** The logger when the options name none (the adapter's default). */
  defaultLogger?: () => CoreLogger;
  /** The host's contract check, replacing the pipeline's own version and body checks. */
  contract?: ContractCheck;
}

/** What an answer is, for `validateResponses`: the route that gave it, and for a call whether in the envelope. */
interface AnswerKind {
  readonly route: RouteName;
  readonly envelope: boolean;
}

/** Every kind of answer, made once. */
const ANSWER_KIND = {
  health: { route: "health", envelope: false },
  discovery: { route: "discovery", envelope: false },
  status: { route: "status", envelope: false },
  tools: { route: "tools", envelope: false },
  check: { route: "check", envelope: false },
  call: { route: "call", envelope: false },
  callEnvelope: { route: "call", envelope: true },
} as const satisfies Record<string, AnswerKind>;

/** The media type of every JSON answer. */
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/** The pipeline of one server: its runtime for `listen`, and the function that answers a request. */
export interface Pipeline {
  readonly runtime: OxpRuntime;
  readonly logger: CoreLogger | undefined;
  /**
   * Answers one request; undefined when a host page answered it itself. The steps, in order:
   * 1. admission: exactly one Host, a Host the server answers to, not draining (400, 400, 503);
   * 2. CORS: a preflight is answered, other requests get their headers;
   * 3. routing: a path that names no protocol route goes to the pages, then (authenticated) a 404;
   * 4. `/health`: method (405), `OXP-Version`, readiness;
   * 5. authentication (401), then the method (405 with `Allow`; HEAD wherever GET);
   * 6. `POST /tools/call`: media type (415), framing and declared size (413, 415), the client's share (429),
   *    the body read and bounded as it comes (413, 400), parsed (400), `OXP-Version` and the body's shape
   *    (400), the core's call (its own steps: docs/protocol.md 3.3 from the tool's resolution on), the answer;
   * 7. `GET /tools`: `OXP-Version`, the list with its ETag (304) and gzip;
   * 8. a check_url: `OXP-Version`, the challenge id decoded (400), its status.
   * Anything thrown becomes its wire error in {@link Pipeline.fail}, the one place a fault is logged.
   */
  handle(exchange: Exchange): Promise<Answer | undefined>;
  /** The answer to an error: its status and JSON body, logged when it is the server's fault (5xx but 503). */
  fail(exchange: Pick<Exchange, "method" | "path">, error: unknown, headers?: Record<string, string>): Answer;
}

/** Creates the pipeline for an adapter's options. */
export function createPipeline(options: AdapterOptions, host: PipelineHost = {}): Pipeline {
  const logger = options.logger === false ? undefined : (options.logger ?? host.defaultLogger?.());
  const { logger: _logger, telemetry, pages: _pages, ...coreOptions } = options;
  const observer = combinedObserver(options.observer, telemetry?.observer);
  const core = new OxpCore({ ...coreOptions, ...(logger ? { logger } : {}), ...(observer ? { observer } : {}) });
  const authenticate = createAuthenticator(options.auth, logger, core.clock);
  const lifecycle: OxpLifecycle = { ready: true, draining: false, inFlight: 0 };
  const tracing = options.tracing ?? true;
  const limits = jsonLimits(options);
  const budget = options.fairness === false ? undefined : new ClientBudget(options.fairness);
  const publicUrl = options.publicUrl?.replace(/\/+$/, "");
  const limit = bodyLimitBytes(options.bodyLimit);
  const cors = createCors(options.cors);
  const hostAllowed = createHostCheck(options.allowedHosts, options.publicUrl);
  const pages = [...(telemetry?.pages ?? []), ...(options.pages ?? [])];
  const validateResponses = options.validateResponses ?? false;
  const contract = host.contract;
  const offered = offeredExtensions(options.extensions);
  const maxStreamsPerClient = options.eventStreams?.maxPerClient ?? 16;
  const streamKeepAliveMs = options.eventStreams?.keepAliveMs ?? 15_000;
  /** Open event streams by client, for their bound (an entry only while above 0). */
  const openStreams = new Map<string, number>();
  const maxPollsPerClient = options.longPolls?.maxPerClient ?? 100;
  if (!(Number.isSafeInteger(maxPollsPerClient) && maxPollsPerClient > 0)) {
    throw new ServerConfigError("longPolls.maxPerClient must be a positive integer");
  }
  /** Long polls waiting, by client, for their bound (an entry only while above 0). */
  const openPolls = new Map<string, number>();
  const discovery = JSON.stringify({ oxp_versions: [OXP_VERSION], extensions: [...offered] });

  const fail: Pipeline["fail"] = (exchange, error, headers) => {
    const wire = toWireError(error);
    if (wire.status >= 500 && wire.kind !== "unavailable") {
      const cause = wire.details.cause ?? error;
      logger?.error(
        {
          err:
            cause instanceof Error ? { name: cause.name, message: cause.message, stack: cause.stack } : String(cause),
          method: exchange.method,
          path: exchange.path === undefined ? undefined : shorten(exchange.path, 256),
        },
        wire.message,
      );
    }
    return jsonAnswer(wire.status, JSON.stringify(wire.toBody()), { ...headers, ...wire.details.headers });
  };

  /** A JSON answer; with `validateResponses`, one off the spec becomes a 500. */
  const answer = (status: number, text: string, kind: AnswerKind, headers?: Record<string, string>): Answer => {
    if (validateResponses) {
      const validate = responseValidator(kind.route, status, kind.envelope);
      if (validate && !validate(JSON.parse(text))) {
        return offSpec(status, validate);
      }
    }
    return jsonAnswer(status, text, headers);
  };
  const offSpec = (status: number, validate: Validator<unknown>): Answer => {
    logger?.error({ status, errors: validate.errors }, "response does not match the OXP specification");
    const message = "The server produced a response that does not match the OXP specification";
    return jsonAnswer(500, JSON.stringify({ message }));
  };

  /** Who sent the request: at once for an API key or a remembered JWT, through a promise otherwise. */
  const principalOf = (exchange: Exchange): string | Promise<string> => {
    if (!authenticate) {
      return "anonymous";
    }
    const refused = (error: unknown) => {
      if (error instanceof WireError && error.kind === "unauthorized") {
        // Who tried and why, never what they sent.
        logger?.warn(
          { reason: error.details.developerMessage, remote_address: exchange.remoteAddress, method: exchange.method },
          "authentication failed",
        );
      }
      throw error;
    };
    try {
      const principal = authenticate({
        apiKey: exchange.header("oxp-api-key"),
        authorization: exchange.header("authorization"),
      });
      return typeof principal === "string" ? principal : principal.catch(refused);
    } catch (error) {
      return refused(error);
    }
  };

  /** Where the Host check keeps its verdict for requests that come without a connection. */
  const hostVerdicts = {};

  /** Step 1: the check every request passes first. */
  const admission = (exchange: Exchange): WireError | undefined => {
    const hosts = exchange.hostHeaders();
    if (hosts !== 1) {
      return new WireError("bad_request", "The request must carry exactly one Host header", {
        developerMessage: `It carried ${hosts}.`,
      });
    }
    const host = exchange.header("host");
    const { localAddress, remoteAddress } = exchange;
    // Without a connection (a fetch host), the check remembers the last Host it let in on the pipeline's behalf: it
    // remembers only a Host its name rules accept, whoever sent it, so the verdict is the same.
    const connection = exchange.connection ?? hostVerdicts;
    if (hostAllowed && !hostAllowed({ host, localAddress, remoteAddress, connection })) {
      // A 400, which the spec declares on every route: the request names a server this is not.
      return new WireError("bad_request", "The request's Host does not name this server", {
        developerMessage: `Host '${shorten(host ?? "")}' is not among the server's allowedHosts.`,
      });
    }
    if (lifecycle.draining) {
      return new WireError("unavailable", "The server is shutting down", {
        developerMessage: "Retry on another instance.",
        headers: { Connection: "close" },
      });
    }
    return undefined;
  };

  /** Step 3, for a path no protocol route serves: the host's pages, the fetch pages, then (authenticated) a 404. */
  const servePages = async (exchange: Exchange, headers: Record<string, string>): Promise<Answer | undefined> => {
    if (exchange.hostPages && (await exchange.hostPages(headers))) {
      return undefined;
    }
    const request = pages.length > 0 && exchange.path !== undefined ? requestOf(exchange) : undefined;
    // A page matches on the URL's path, which resolves dot segments: `/a/../tools` would reach it as `/tools`, a
    // protocol route it must never answer. Such a target is no page's.
    if (request && pathOf(request.url) === exchange.path) {
      for (const page of pages) {
        const response = await page(request);
        if (response) {
          return { status: response.status, headers: {}, response: withHeaders(response, headers) };
        }
      }
    }
    await principalOf(exchange);
    const target = exchange.path === undefined ? "this target" : shorten(exchange.path);
    throw new WireError("not_found", "Not found", {
      developerMessage: `Nothing is served at ${exchange.method} ${target}.`,
    });
  };

  /** The client key of the last anonymous request that came without a connection, by its address. */
  let lastAnonymous = { address: undefined as string | undefined, client: clientOf("anonymous", undefined) };

  /**
   * {@link clientOf} an anonymous request, worked out once per connection where the host has one (the same string
   * each time, so the budget's map finds it without hashing a new key per call), else once per run of requests
   * from one address.
   */
  const anonymousClient = (exchange: Exchange): string => {
    const connection = exchange.connection as { [ANONYMOUS_CLIENT]?: string } | undefined;
    if (connection !== undefined) {
      connection[ANONYMOUS_CLIENT] ??= clientOf("anonymous", exchange.remoteAddress);
      return connection[ANONYMOUS_CLIENT];
    }
    const address = exchange.remoteAddress;
    if (address !== lastAnonymous.address) {
      lastAnonymous = { address, client: clientOf("anonymous", address) };
    }
    return lastAnonymous.client;
  };

  /**
   * Step 6: `POST /tools/call`. The fair-share clock is read only where work is charged, each reading shared by
   * the charge it ends and the measure it starts.
   */
  const serveCall = async (exchange: Exchange, principal: string, headers: Record<string, string>): Promise<Answer> => {
    const contentType = exchange.header("content-type");
    if (!isJsonType(contentType)) {
      throw new WireError("unsupported_media_type", "The request body must be JSON", {
        developerMessage: "Send the body with Content-Type: application/json.",
      });
    }
    const declared = checkBodyFraming(exchange, limit, contentType);
    // Before the body is read: a client over its share of the server's time waits its turn (429).
    const client = principal === "anonymous" ? anonymousClient(exchange) : principal;
    budget?.admit(client);
    // Shape bounds on the text as it comes: a hostile shape is refused before JSON.parse builds it.
    const scanner = new JsonScanner(limits);
    // A body that comes whole in one piece (most do) is scanned just before it is parsed, within the same measure
    // of the client's work; the pieces of a body that comes in chunks are scanned, and measured, as they come.
    let whole = false;
    let spent = 0;
    // When parsing began, as the budget's clock read it: the measure that ends once the core has the call.
    let checking = 0;
    let parsed: ReturnType<typeof checkCallBody>;
    try {
      const text = await exchange.readText(limit, declared, (piece, isWhole) => {
        if (isWhole) {
          whole = true;
          return;
        }
        const started = budget ? performance.now() : 0;
        try {
          scanner.push(piece);
        } catch (error) {
          // What is left of the body is not read: the connection cannot carry another request.
          if (error instanceof WireError) {
            error.details.headers = { ...error.details.headers, Connection: "close" };
          }
          throw error;
        } finally {
          if (budget) {
            spent += performance.now() - started;
          }
        }
      });
      checking = budget ? performance.now() : 0;
      if (whole) {
        scanner.push(text);
      }
      const body = parseJson(text);
      if (contract) {
        const hostCheck = contract(exchange, "call", body);
        if (hostCheck) {
          await hostCheck;
        }
        parsed = unwrapCallBody(body as CallBody);
      } else {
        checkOxpVersionHeader(exchange.header("oxp-version"));
        parsed = checkCallBody(body);
      }
    } catch (error) {
      budget?.charge(client, checking === 0 ? spent : spent + performance.now() - checking);
      throw error;
    }
    const { request, envelope } = parsed;
    const meta = new ExchangeCallMeta({
      exchange,
      principal,
      client,
      tracing,
      publicUrl,
      budget,
      bodyValues: scanner.values,
    });
    const preferences = asksFor(exchange, "tasks") ? parsePrefer(exchange.header("prefer")) : undefined;
    if (preferences?.respondAsync) {
      budget?.charge(client, spent + performance.now() - checking);
      const waitMs = (preferences.waitSeconds ?? 0) * 1000;
      return serveAsyncCall(exchange, { request, envelope, meta, waitMs }, headers);
    }
    // What the core does before its first wait (resolving, checking, and the whole run of a synchronous tool
    // without a call_id) is charged with the body's parsing and checks, in one measure; what it does after a wait,
    // it charges through the meta. A call answered without a wait has the answer's writing in that measure too.
    let response: Awaited<ReturnType<typeof core.call>>;
    // The measure the answer's writing closes: where it began, and what of it was charged already.
    let from = checking;
    let carried = spent;
    // False while the core's promise is awaited: a wait is not work.
    let measuring = true;
    try {
      const pending = telemetry?.traceCall
        ? telemetry.traceCall(exchange.headers(), headers, (onEnd) => {
            meta.onEnd = onEnd;
            return core.call(request, meta);
          })
        : core.callNow(request, meta);
      if (pending instanceof Promise) {
        if (budget) {
          const called = performance.now();
          budget.charge(client, carried + called - from, called);
        }
        measuring = false;
        response = await pending;
        from = budget ? performance.now() : 0;
        carried = 0;
      } else {
        response = pending;
      }
    } catch (error) {
      // Refused by the core at once (unknown tool, invalid input): the work up to the refusal is the client's.
      if (measuring) {
        budget?.charge(client, carried + performance.now() - from);
      }
      throw error;
    } finally {
      meta.answered();
    }
    const text = JSON.stringify(wrapResponse(response, envelope));
    const done = answer(200, text, envelope ? ANSWER_KIND.callEnvelope : ANSWER_KIND.call, headers);
    // Serializing a large answer is the client's cost too.
    if (budget) {
      const answered = performance.now();
      budget.charge(client, carried + answered - from, answered);
    }
    return done;
  };

  /**
   * Step 6 for `Prefer: respond-async` with the tasks extension (docs/protocol.md 9.3): the call's checks answer
   * as without it; a call still running after `waitMs` is answered 202 with its status and where to follow it.
   */
  const serveAsyncCall = async (
    exchange: Exchange,
    call: { request: Parameters<typeof core.call>[0]; envelope: boolean; meta: ExchangeCallMeta; waitMs: number },
    headers: Record<string, string>,
  ): Promise<Answer> => {
    const { request, envelope, meta, waitMs } = call;
    let result: Awaited<ReturnType<typeof core.callAsync>>;
    try {
      result = await core.callAsync(request, meta, waitMs);
    } finally {
      meta.answered();
    }
    if ("response" in result) {
      const text = JSON.stringify(wrapResponse(result.response, envelope));
      return answer(200, text, envelope ? ANSWER_KIND.callEnvelope : ANSWER_KIND.call, headers);
    }
    return answer(202, JSON.stringify(result.status), ANSWER_KIND.status, {
      ...headers,
      "OXP-Extensions": "tasks",
      "Preference-Applied": "respond-async",
      Location: callLocation(exchange, result.status.call_id),
    });
  };

  /** Where a call's status is read: from `publicUrl` when set, else the URL the request reached, else a path. */
  const callLocation = (exchange: Exchange, callId: string): string => {
    const path = `${CALLS_PATH}/${encodeURIComponent(callId)}`;
    if (publicUrl !== undefined) {
      return `${publicUrl}${path}`;
    }
    try {
      return `${exchange.baseUrl()}${path}`;
    } catch {
      // A fetch host that tells neither its origin nor an address: a path, which RFC 9110 allows.
      return path;
    }
  };

  /** The tasks extension's routes: a call's status (GET, with long poll), its cancel (DELETE), its events. */
  const serveTask = async (
    exchange: Exchange,
    route: ProtocolRoute,
    principal: string,
    headers: Record<string, string>,
  ): Promise<Answer> => {
    await checkVersion(exchange, route.name);
    let callId: string;
    try {
      callId = decodeURIComponent(route.segment ?? "");
    } catch (error) {
      throw toWireError(error);
    }
    const taskHeaders = { ...headers, "OXP-Extensions": "tasks" };
    if (exchange.method === "DELETE") {
      return statusAnswer(await core.cancelCall(principal, callId), taskHeaders);
    }
    const state = await core.callState(principal, callId);
    let status = state?.status;
    const target: CallTarget = { exchange, principal, callId };
    if (route.name === "events") {
      if (!status) {
        throw noSuchCall();
      }
      return eventsAnswer(target, status, taskHeaders);
    }
    const waitSeconds = parsePrefer(exchange.header("prefer")).waitSeconds ?? 0;
    if (state && status?.status === "running" && waitSeconds > 0) {
      // Held polls are bounded per client, as event streams are: one principal's thousand polls from a few addresses
      // would otherwise hold the server's connections, and each progress would wake all of them.
      const client = principal === "anonymous" ? anonymousClient(exchange) : principal;
      const polls = openPolls.get(client) ?? 0;
      if (polls >= maxPollsPerClient) {
        throw new WireError("too_many_requests", "Too many of your long polls are waiting", {
          developerMessage: `At most ${maxPollsPerClient} long polls of one client wait at once; wait for one to be answered, or follow the call's events.`,
          headers: { "Retry-After": "5" },
        });
      }
      openPolls.set(client, polls + 1);
      try {
        await changeOf(target, state, Math.min(waitSeconds, MAX_WAIT_SECONDS) * 1000);
      } finally {
        const left = (openPolls.get(client) ?? 1) - 1;
        if (left > 0) {
          openPolls.set(client, left);
        } else {
          openPolls.delete(client);
        }
      }
      // A record that expired meanwhile is gone: a 404, as for any call_id the principal does not have.
      status = await core.callStatus(principal, callId);
    }
    return statusAnswer(status, taskHeaders);
  };

  const statusAnswer = (status: CallStatus | undefined, headers: Record<string, string>): Answer => {
    if (!status) {
      throw noSuchCall();
    }
    return answer(200, JSON.stringify(status), ANSWER_KIND.status, headers);
  };

  /**
   * Waits until a running call's status or progress changes, `maxMs` pass, or the client goes away: on every change
   * for a call this process runs, else by looking it up again now and then.
   */
  const changeOf = (
    { exchange, principal, callId }: CallTarget,
    { status: seen, seq }: { status: CallStatus; seq: number },
    maxMs: number,
  ) =>
    new Promise<void>((resolve) => {
      let stopPolling: (() => void) | undefined;
      const done = () => {
        core.clock.clearTimeout(timer);
        stopPolling?.();
        unwatch?.();
        unwatchClient();
        resolve();
      };
      const timer = core.clock.setTimeout(done, maxMs);
      const unwatchClient = exchange.watchClient(done);
      const unwatch = core.watchCall(principal, callId, () => {
        // A change this poll has seen already (its status was read after it) wakes nothing: the poll answers news.
        const local = core.localCallState(principal, callId);
        if (local?.status.status !== "running" || local.seq !== seq) {
          done();
        }
      });
      const before = JSON.stringify(seen);
      // A change between the status read and the watch (another instance's call ending then) is seen here.
      core.callStatus(principal, callId).then(
        (now) => {
          if (JSON.stringify(now) !== before) {
            done();
          }
        },
        () => {},
      );
      if (!unwatch) {
        stopPolling = everyOn(core.clock, 500, () => {
          core.callStatus(principal, callId).then(
            (now) => {
              if (JSON.stringify(now) !== before) {
                done();
              }
            },
            () => {},
          );
        });
      }
    });

  /** The event stream of a call, within the principal's allowance of open streams. */
  const eventsAnswer = (
    { exchange, principal, callId }: CallTarget,
    status: CallStatus,
    headers: Record<string, string>,
  ): Answer => {
    const streamHeaders = {
      ...headers,
      "OXP-Version": OXP_VERSION,
      "Content-Type": "text/event-stream; charset=utf-8",
      "Cache-Control": "no-store",
    };
    if (exchange.method === "HEAD") {
      return { status: 200, headers: streamHeaders };
    }
    const client = principal === "anonymous" ? anonymousClient(exchange) : principal;
    const open = openStreams.get(client) ?? 0;
    if (open >= maxStreamsPerClient) {
      throw new WireError("too_many_requests", "Too many of your event streams are open", {
        developerMessage: `At most ${maxStreamsPerClient} event streams of one client are open at once; close one, or poll the call's status.`,
        headers: { "Retry-After": "5" },
      });
    }
    openStreams.set(client, open + 1);
    const stream = callEventStream({
      core,
      principal,
      callId,
      status,
      lastEventId: exchange.header("last-event-id"),
      keepAliveMs: streamKeepAliveMs,
      onClose: () => {
        const left = (openStreams.get(client) ?? 1) - 1;
        if (left > 0) {
          openStreams.set(client, left);
        } else {
          openStreams.delete(client);
        }
      },
    });
    return { status: 200, headers: {}, response: new Response(stream, { status: 200, headers: streamHeaders }) };
  };

  /** The version check of a GET route: the host's contract check, or the pipeline's. */
  const checkVersion = async (exchange: Exchange, route: RouteName) => {
    if (contract) {
      await contract(exchange, route, undefined);
    } else {
      checkOxpVersionHeader(exchange.header("oxp-version"));
    }
  };

  /**
   * Steps 4-8 for a protocol route: `/health` before authentication, the others after it. Not itself async: a
   * call authenticated at once (no credentials, an API key, a remembered JWT) reaches serveCall without a wait.
   */
  const serveRoute = (
    exchange: Exchange,
    route: ProtocolRoute,
    headers: Record<string, string>,
  ): Answer | Promise<Answer> => {
    if (route.name === "health" || route.name === "discovery") {
      return serveHealth(exchange, route, headers);
    }
    const found = principalOf(exchange);
    return typeof found === "string"
      ? serveAuthenticated(exchange, route, found, headers)
      : found.then((principal) => serveAuthenticated(exchange, route, principal, headers));
  };

  /** Step 4: `/health`, and discovery (docs/protocol.md 9.1), served at any time. */
  const serveHealth = async (exchange: Exchange, route: ProtocolRoute, headers: Record<string, string>) => {
    if (!route.methods.includes(exchange.method)) {
      throw methodNotAllowed(route.methods);
    }
    await checkVersion(exchange, route.name);
    if (route.name === "discovery") {
      return answer(200, discovery, ANSWER_KIND.discovery, headers);
    }
    const [status, body] = lifecycle.ready ? [200, { status: "ok" }] : [503, { message: "The server is starting" }];
    return answer(status, JSON.stringify(body), ANSWER_KIND.health, headers);
  };

  /** Steps 5-8 once the principal is known: the method, then the route. */
  const serveAuthenticated = (
    exchange: Exchange,
    route: ProtocolRoute,
    principal: string,
    headers: Record<string, string>,
  ): Promise<Answer> => {
    if (!route.methods.includes(exchange.method)) {
      throw methodNotAllowed(route.methods);
    }
    if (route.name === "call") {
      return serveCall(exchange, principal, headers);
    }
    return TASK_ROUTES.has(route.name)
      ? serveTask(exchange, route, principal, headers)
      : serveRead(exchange, route, headers);
  };

  /** Steps 7 and 8: `GET /tools` and a check_url. */
  const serveRead = async (exchange: Exchange, route: ProtocolRoute, headers: Record<string, string>) => {
    await checkVersion(exchange, route.name);
    if (route.name === "tools") {
      return toolListAnswer(exchange, headers);
    }
    let challengeId: string;
    try {
      challengeId = decodeURIComponent(route.segment ?? "");
    } catch (error) {
      throw toWireError(error);
    }
    return answer(200, JSON.stringify(await core.checkChallenge(challengeId)), ANSWER_KIND.check, headers);
  };

  /**
   * Step 7: the tool list, serialized once per catalog and gzipped once too, or 304 when `If-None-Match` names it;
   * with the annotations extension, its annotated form; with pagination, one page of it (docs/protocol.md 9).
   */
  const toolListAnswer = async (exchange: Exchange, base: Record<string, string>): Promise<Answer> => {
    // Always: a cache must keep the forms apart, also the one a request without the header got.
    const headers: Record<string, string> = {
      ...base,
      Vary: vary.append(base.Vary ?? "", "Accept-Encoding, OXP-Extensions"),
    };
    const asked = requestedExtensions(exchange.header("oxp-extensions"), offered);
    const annotations = asked.has("annotations");
    // Most requests ask for nothing: no header to name then.
    const applied = asked.size === 0 ? undefined : appliedHeader([...asked].filter((id) => id !== "tasks"));
    if (applied) {
      headers["OXP-Extensions"] = applied;
    }
    if (asked.has("pagination")) {
      const catalog = await core.toolList();
      const query = new URLSearchParams(exchange.query());
      const page = pageOf(core.registry.list({ annotations }), catalog.etag, {
        limit: query.get("limit"),
        cursor: query.get("cursor"),
        toolkit: query.get("toolkit"),
      });
      return answer(200, JSON.stringify(page), ANSWER_KIND.tools, headers);
    }
    const list = await core.toolList({ annotations });
    let gzipped = gzippedLists.get(list);
    if (gzipped === undefined) {
      gzipped = gzipList(list);
      gzippedLists.set(list, gzipped);
    }
    const small = await gzipped;
    const condition = exchange.header("if-none-match");
    for (const etag of small ? [list.etag, small.etag] : [list.etag]) {
      if (ifNoneMatch(condition, etag)) {
        return { status: 304, headers: { ...headers, "OXP-Version": OXP_VERSION, ETag: etag } };
      }
    }
    const checked = answer(200, list.body, ANSWER_KIND.tools, { ...headers, ETag: list.etag });
    if (checked.status !== 200) {
      return checked;
    }
    const encoding = exchange.header("accept-encoding");
    if (
      small &&
      encoding &&
      new Negotiator({ headers: { "accept-encoding": encoding } }).encoding(["gzip", "identity"]) === "gzip"
    ) {
      return jsonAnswer(200, small.body, { ...headers, ETag: small.etag, "Content-Encoding": "gzip" });
    }
    return checked;
  };

  const asksFor = (exchange: Exchange, id: ExtensionId) =>
    requestedExtensions(exchange.header("oxp-extensions"), offered).has(id);

  const handle = async (exchange: Exchange): Promise<Answer | undefined> => {
    lifecycle.inFlight++;
    // A tracing telemetry adds `traceparent` to the answer's headers, error answers included: it gets an object of
    // this request's own.
    let headers = telemetry?.traceCall ? {} : NO_HEADERS;
    try {
      const refused = admission(exchange);
      if (refused) {
        throw refused;
      }
      if (cors) {
        const verdict = cors(exchange);
        if (verdict.preflight) {
          return { status: 204, headers: { ...verdict.headers, "OXP-Version": OXP_VERSION } };
        }
        headers = verdict.headers;
      }
      const path = exchange.path;
      let route = path === undefined ? undefined : protocolRouteOf(path);
      // The tasks extension's paths exist only for a request that asks for it: for any other, they are unknown.
      if (route && TASK_ROUTES.has(route.name) && !asksFor(exchange, "tasks")) {
        route = undefined;
      }
      if (!route) {
        return await servePages(exchange, { ...headers, "OXP-Version": OXP_VERSION });
      }
      const served = serveRoute(exchange, route, headers);
      return served instanceof Promise ? await served : served;
    } catch (error) {
      return fail(exchange, error, headers);
    } finally {
      lifecycle.inFlight--;
    }
  };

  return { runtime: { lifecycle, core }, logger, handle, fail };
}

/**
 * Who the per-client limits (the fairness budget, running calls) count a request against: its principal, or
 * its address (an IPv6 /64) when the principal is `anonymous`, so that with authentication off one caller has its
 * own share.
 */
export function clientOf(principal: string, remoteAddress: string | undefined): string {
  return principal === "anonymous" ? `${ANONYMOUS_CLIENT_PREFIX}${addressGroup(remoteAddress)}` : principal;
}

/** Where a connection keeps the client key of its anonymous requests: its address never changes. */
const ANONYMOUS_CLIENT = Symbol("oxp.anonymousClient");

/** The exchange as a `Request` for the pages, or undefined when its target makes no URL (`*`, a bad authority): no page's. */
function requestOf(exchange: Exchange): Request | undefined {
  try {
    return exchange.toRequest();
  } catch {
    return undefined;
  }
}

/** The path of an absolute URL, query and fragment dropped, as written (not re-encoded). */
/** The extensions a server offers for its `extensions` option: those implemented, or none for `false`. */
function offeredExtensions(option: AdapterOptions["extensions"]): ExtensionSet {
  if (option === false) {
    return new Set();
  }
  const implemented: readonly ExtensionId[] = EXTENSIONS;
  if (option === undefined) {
    return new Set(implemented);
  }
  for (const id of option) {
    if (!implemented.includes(id)) {
      throw new ServerConfigError(
        `The extension '${String(id)}' is not one this server implements: ${implemented.join(", ")}`,
      );
    }
  }
  return new Set(EXTENSIONS.filter((id) => option.includes(id)));
}

/** Where the calls' status paths start: the spec's `/tools/calls/{call_id}` without its parameter. */
const CALLS_PATH = TOOLS_CALLS_PATH_TEMPLATE.replace("/{call_id}", "");

/** A call a task route names: the request, who sent it, and the call_id it names. */
interface CallTarget {
  exchange: Exchange;
  principal: string;
  callId: string;
}

/** The 404 of a call_id this principal does not have (unknown, another principal's, or expired). */
function noSuchCall(): WireError {
  return new WireError("not_found", "No such call", {
    developerMessage: "This call_id is unknown for your credentials, or its record has expired.",
  });
}

/** The query of a request target or URL, without its `?` and any fragment; empty when there is none. */
export function queryOf(url: string): string {
  const start = url.indexOf("?");
  if (start === -1) {
    return "";
  }
  const fragment = url.indexOf("#", start);
  return fragment === -1 ? url.slice(start + 1) : url.slice(start + 1, fragment);
}

export function pathOf(url: string): string {
  const scheme = url.indexOf("://");
  const start = url.indexOf("/", scheme === -1 ? 0 : scheme + 3);
  if (start === -1) {
    return "/";
  }
  // The query, else the fragment, ends the path: a `?` after a `#` is the fragment's.
  const query = url.indexOf("?", start);
  const fragment = url.indexOf("#", start);
  const end = fragment !== -1 && (query === -1 || fragment < query) ? fragment : query;
  return end === -1 ? url.slice(start) : url.slice(start, end);
}

/**
 * The headers of a request's answer when neither CORS nor tracing adds any: shared, so never written to (answers
 * copy them).
 */
const NO_HEADERS: Record<string, string> = Object.freeze({});

/** A JSON answer with the protocol's headers, in a new object the adapter may add to. */
function jsonAnswer(status: number, body: string | Uint8Array, headers?: Record<string, string>): Answer {
  return {
    status,
    headers:
      headers && headers !== NO_HEADERS
        ? { ...headers, "OXP-Version": OXP_VERSION, "Content-Type": JSON_CONTENT_TYPE }
        : { "OXP-Version": OXP_VERSION, "Content-Type": JSON_CONTENT_TYPE },
    body,
  };
}

function jsonLimits(options: AdapterOptions): JsonLimits {
  const limits = {
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    maxValues: options.maxValues ?? DEFAULT_MAX_VALUES,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!(Number.isSafeInteger(value) && value > 0)) {
      throw new ServerConfigError(`${name} must be a positive integer`);
    }
  }
  return limits;
}

/** The observer the core gets: the `observer` option and the telemetry's, both told of everything. */
export function combinedObserver(...observers: (CallObserver | undefined)[]): CallObserver | undefined {
  const present = observers.filter((observer): observer is CallObserver => observer !== undefined);
  if (present.length <= 1) {
    return present[0];
  }
  return {
    callStarted: () => {
      for (const observer of present) {
        observer.callStarted?.();
      }
    },
    callEnded: (event) => {
      for (const observer of present) {
        observer.callEnded?.(event);
      }
    },
    challengeStarted: (providerId) => {
      for (const observer of present) {
        observer.challengeStarted?.(providerId);
      }
    },
  };
}

/** The largest body an adapter reads, in bytes, from the `bodyLimit` option (a number or a size such as `"1mb"`). */
export function bodyLimitBytes(option: number | string | undefined): number {
  const limit = option === undefined ? DEFAULT_BODY_LIMIT : typeof option === "string" ? bytes.parse(option) : option;
  if (limit === null || !(Number.isFinite(limit) && limit >= 0)) {
    throw new ServerConfigError("bodyLimit must be a number of bytes or a size such as '1mb'");
  }
  return limit;
}

const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * The checks of a call body's framing before it is read: a declared length past the limit is a 413 at once
 * (nothing is read), and a body other than UTF-8 JSON without `Content-Encoding` is a 415. Returns the declared
 * length (NaN without one).
 */
function checkBodyFraming(exchange: Exchange, limit: number, contentType = ""): number {
  const declared = Number(exchange.header("content-length"));
  if (declared > limit) {
    throw bodyTooLarge(limit);
  }
  const encoding = exchange.header("content-encoding")?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    throw new WireError("unsupported_media_type", "The request body's encoding is not supported", {
      developerMessage: "Send the body without Content-Encoding.",
    });
  }
  // Parameters follow a semicolon: without one there is no charset to read.
  const charset = contentType.includes(";")
    ? /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1]?.toLowerCase()
    : undefined;
  if (charset !== undefined && charset !== "utf-8") {
    throw new WireError("unsupported_media_type", "The request body's encoding is not supported", {
      developerMessage: "Send the body as UTF-8 JSON (charset=utf-8, or no charset).",
    });
  }
  return declared;
}

/** The 413 for a body past `limit`; the connection closes, so what is left of the body is never read. */
export function bodyTooLarge(limit: number): WireError {
  return new WireError("payload_too_large", "The request body is too large", {
    developerMessage: `The limit is ${limit} bytes.`,
    headers: { Connection: "close" },
  });
}

/** The spec declares one media type for request bodies: application/json, parameters (charset) allowed. */
const isJsonType = (contentType: string | undefined) =>
  contentType === "application/json" ||
  (contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType.trim()));

/** Parses a JSON body (any JSON value; a leading BOM tolerated); 400 when it is empty or not JSON. */
function parseJson(text: string): unknown {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch (error) {
    if (/^\s*$/.test(body)) {
      throw new WireError("bad_request", "The request has no body", { developerMessage: "Send a CallToolRequest." });
    }
    throw new WireError("bad_request", "The request body is not valid JSON", { cause: error });
  }
}

function methodNotAllowed(methods: readonly string[]): WireError {
  return new WireError("method_not_allowed", "This method is not allowed here", {
    headers: { Allow: methods.join(", ") },
  });
}

/**
 * True when an `If-None-Match` header names `etag` (weak comparison, as for GET) or is `*`. Request
 * `Cache-Control` does not matter here: it speaks to caches, and fetch() sends `no-cache` with every
 * conditional request.
 */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) {
    return false;
  }
  if (header.trim() === "*") {
    return true;
  }
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

/** Below this many bytes the tool list is sent as is: gzip would save little on it. */
const GZIP_MIN_BYTES = 1024;

/** The gzipped tool list of each catalog (keyed by the core's list), made on first request. */
const gzippedLists = new WeakMap<object, Promise<{ body: Uint8Array; etag: string } | null>>();

/** The list gzipped with the runtime's own `CompressionStream`, with an ETag of its own; null for a list too small to be worth it. */
async function gzipList(list: { body: string; etag: string }): Promise<{ body: Uint8Array; etag: string } | null> {
  const plain = new TextEncoder().encode(list.body);
  if (plain.length < GZIP_MIN_BYTES) {
    return null;
  }
  const stream = new Blob([plain]).stream().pipeThrough(new CompressionStream("gzip"));
  const body = new Uint8Array(await new Response(stream).arrayBuffer());
  return { body, etag: `${list.etag.slice(0, -1)}-gzip"` };
}

/** The request headers a browser page may send, and the response headers it may read. */
const CORS_ALLOWED_HEADERS = [
  "Content-Type",
  "OXP-Version",
  "OXP-API-Key",
  "Authorization",
  "traceparent",
  "tracestate",
  // The extensions' (docs/protocol.md 9): a page elsewhere, such as the Inspector, asks for them too.
  "OXP-Extensions",
  "Prefer",
  "Last-Event-ID",
];
const CORS_EXPOSED_HEADERS = [
  "OXP-Version",
  "WWW-Authenticate",
  "Retry-After",
  "ETag",
  "traceparent",
  "OXP-Extensions",
  "Location",
  "Preference-Applied",
];

/**
 * The CORS decision (the `cors` package, run on a request and answer of its own shape): whether the request is a
 * preflight to answer at once, and the headers for its answer. Undefined when CORS is off.
 */
function createCors(options: CorsOptions | undefined) {
  if (!options) {
    return undefined;
  }
  const handler = corsMiddleware({
    origin: options.origins === "*" ? "*" : [...options.origins],
    // DELETE cancels a call (the tasks extension).
    methods: ["GET", "HEAD", "POST", "DELETE"],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: options.maxAgeSeconds ?? 600,
    optionsSuccessStatus: 204,
  });
  return (exchange: Exchange): { preflight: boolean; headers: Record<string, string> } => {
    const headers: Record<string, string> = {};
    let preflight = false;
    const req = {
      method: exchange.method,
      headers: {
        origin: exchange.header("origin"),
        "access-control-request-method": exchange.header("access-control-request-method"),
        "access-control-request-headers": exchange.header("access-control-request-headers"),
      },
    };
    const res = {
      statusCode: 200,
      getHeader: (name: string) => headers[name],
      setHeader: (name: string, value: string | number) => {
        headers[name] = String(value);
      },
      end: () => {
        preflight = true;
      },
    };
    // With fixed origins the package decides synchronously: `next` (or `end`, for a preflight) is called before it returns.
    handler(req as never, res as never, () => {});
    // The package sets the preflight's Content-Length itself; the adapters frame answers their own way.
    delete headers["Content-Length"];
    return { preflight, headers };
  };
}

/** A page's answer with the server's headers added (`OXP-Version`, CORS), a `Vary` of its own kept. */
function withHeaders(response: Response, added: Record<string, string>): Response {
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(added)) {
    const own = name === "Vary" ? headers.get("vary") : null;
    headers.set(name, own ? vary.append(own, value) : value);
  }
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** Turns anything thrown into its wire error: a JSON body with the right status, never HTML or a stack. */
export function toWireError(error: unknown): WireError {
  if (error instanceof WireError) {
    return error;
  }
  if (error instanceof URIError) {
    return new WireError("bad_request", "The request URL is malformed", {
      developerMessage: "A path segment is not valid percent-encoding.",
      cause: error,
    });
  }
  // Errors in the shape of the `http-errors` package, which node-style pages raise (body-parser's among them).
  const { status, type, headers } = (typeof error === "object" && error !== null ? error : {}) as {
    status?: unknown;
    type?: unknown;
    headers?: { Allow?: string };
  };
  if (type === "entity.too.large" || status === 413) {
    return new WireError("payload_too_large", "The request body is too large", { cause: error });
  }
  if (type === "entity.parse.failed") {
    return new WireError("bad_request", "The request body is not valid JSON", { cause: error });
  }
  if (type === "encoding.unsupported" || type === "charset.unsupported" || status === 415) {
    return new WireError("unsupported_media_type", "The request body's encoding is not supported", { cause: error });
  }
  if (status === 405) {
    return new WireError("method_not_allowed", "This method is not allowed here", {
      ...(headers?.Allow ? { headers: { Allow: headers.Allow } } : {}),
      cause: error,
    });
  }
  if (status === 404) {
    return new WireError("not_found", "Not found", { cause: error });
  }
  if (typeof status === "number" && status >= 400 && status < 500) {
    return new WireError("bad_request", "The request is not valid", { cause: error });
  }
  return new WireError("internal", "Internal server error", { cause: error });
}

/**
 * A call's meta from an exchange: its principal and client, `traceparent`'s trace id (when tracing is on), a base
 * URL looked up only when a challenge reads it, the fairness budget its work is charged to, and a watch on its client.
 */
class ExchangeCallMeta implements CallMeta {
  readonly principal: string;
  readonly client: string;
  readonly traceId: string | undefined;
  readonly bodyValues: number;
  onEnd?: CallMeta["onEnd"];
  /** The request, until its call is answered (see {@link answered}). */
  private exchange: Exchange | undefined;
  private readonly publicUrl: string | undefined;
  private readonly budget: ClientBudget | undefined;
  constructor(init: {
    exchange: Exchange;
    principal: string;
    client: string;
    tracing: boolean;
    publicUrl: string | undefined;
    budget: ClientBudget | undefined;
    bodyValues: number;
  }) {
    this.exchange = init.exchange;
    this.principal = init.principal;
    this.client = init.client;
    this.bodyValues = init.bodyValues;
    this.publicUrl = init.publicUrl;
    this.budget = init.budget;
    this.traceId = init.tracing ? parseTraceparent(init.exchange.header("traceparent"))?.traceId : undefined;
  }
  get baseUrl(): string {
    if (this.publicUrl !== undefined) {
      return this.publicUrl;
    }
    if (this.exchange === undefined) {
      throw new Error("The call was answered: its request is gone");
    }
    return this.exchange.baseUrl();
  }
  charge(ms: number): void {
    this.budget?.charge(this.client, ms);
  }
  watchClient(onGone: () => void): () => void {
    // Once the call is answered, its client has nothing left to wait for.
    return this.exchange ? this.exchange.watchClient(onGone) : () => {};
  }
  /**
   * Lets go of the request once the core has answered. The core may keep a call's meta past its answer (a tool's
   * context, an unsettled run), and the request holds its whole connection's objects: kept from a short-lived
   * object, they would all outlive the young generation, and every collection would copy them.
   */
  answered(): void {
    this.exchange = undefined;
  }
}

export { SPEC_MISMATCH_MESSAGE };
