/** The protocol core: lists tools and runs calls (resolution, requirements, input, idempotency, timeout, output). */
import {
  AUTHORIZATION_CHALLENGES_PATH_TEMPLATE,
  type CallProgress,
  type CallStatus,
  type CallToolRequest,
  type CallToolResponse,
  formatSchemaErrors,
  requestedToolVersion,
  type ToolError,
  type ToolListResponse,
} from "@otc/types";
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  MemoryTokenStore,
  type TokenStore,
} from "./authorization.js";
import { type Clock, type ClockTimer, everyOn, sleepOn, systemClock, unrefTimer } from "./clock.js";
import { ServerConfigError, shorten, WireError } from "./errors.js";
import { canonicalJson, sha256Base64url } from "./fingerprint.js";
import {
  type IdempotencyEntry,
  type IdempotencyKey,
  type IdempotencyStore,
  IdempotencyStoreFullError,
  MemoryIdempotencyStore,
} from "./idempotency-store.js";
import { type InputValidatorChoice, type SchemaIssue, toParameterErrors } from "./input-validation.js";
import { type ResolvedRequirements, resolveRequirements, sentCredentials } from "./requirements.js";
import type { InputCheck } from "./standard-schema.js";
import { LocalTask, type TaskEnd } from "./tasks.js";
import { OxpToolError, type Tool, type ToolContext, type ToolLogger } from "./tool.js";
import { type RegisteredTool, ToolRegistry } from "./tool-registry.js";

/** A logger the core writes one line per call to (pino's shape): a pino logger, or {@link consoleLogger}'s. */
export interface CoreLogger extends ToolLogger {
  child(bindings: Record<string, unknown>): CoreLogger;
  /** Whether lines of `level` are written; the call line is not even built when `info` is off. Default: all are. */
  isLevelEnabled?(level: string): boolean;
}

/** Options of {@link OxpCore}. */
export interface OxpCoreOptions {
  tools: readonly Tool[];
  /**
   * What validates tool inputs and outputs: `ajv` (compiles each schema to code: the fastest), `cfworker`
   * (@cfworker/json-schema interprets schemas: for runtimes that refuse code generated at run time, such as
   * Cloudflare workerd), or `auto`: Ajv where `new Function` works when the core is built, else cfworker (on
   * workerd: Ajv for a core built at the module's top level, cfworker for one built in `fetch`). Both answer
   * invalid input with the same `parameter_errors`. Default `auto`.
   */
  inputValidator?: InputValidatorChoice;
  /** Time limit for a tool that sets none, in milliseconds. Default 30,000. */
  defaultTimeoutMs?: number;
  /** Where call_id records live. Default: a {@link MemoryIdempotencyStore} with its default bounds. */
  idempotencyStore?: IdempotencyStore;
  /** How long a finished call's response is kept for its call_id, in milliseconds. Default 24 h. */
  idempotencyRetentionMs?: number;
  /** Providers that can start authorization challenges, by their id. */
  authorizationProviders?: readonly AuthorizationProvider[];
  /** Tokens the server holds for (user, provider). Default: in memory. */
  tokenStore?: TokenStore;
  /** Secret values the server holds, by id; given to tools that require them when a call sends none. */
  secrets?: Readonly<Record<string, string>>;
  logger?: CoreLogger;
  /** Told of every call's start and end and of every challenge started, e.g. to count them as metrics. */
  observer?: CallObserver;
  /**
   * The most tool runs in progress at once, those of clients that went away but whose call_id keeps them going
   * included. Past it a call is answered 503 with `Retry-After`. Default 1,024.
   */
  maxRunningCalls?: number;
  /**
   * The most tool runs in progress at once for one client ({@link CallMeta.client}: the principal, or the
   * address of an anonymous caller). Past it a call is answered 429 with `Retry-After`. Default 128.
   */
  maxRunningCallsPerClient?: number;
  /**
   * Time limit of an asynchronous call (the tasks extension, docs/protocol.md 9.3) whose tool sets no
   * `asyncTimeoutMs`, in milliseconds. Default 900,000 (15 minutes).
   */
  asyncTimeoutMs?: number;
  /** The most asynchronous calls running at once, all clients together; past it a new one is answered 503. Default 10,000. */
  maxAsyncCalls?: number;
  /** The most asynchronous calls one client runs at once; past it a new one is answered 429. Default 100. */
  maxAsyncCallsPerClient?: number;
  /** The most progress updates a call's status keeps per second; the latest of each interval wins. Default 4. */
  progressPerSecond?: number;
  /**
   * With a store shared by several instances: how long an instance vouches for an asynchronous call it runs before
   * renewing (a third of it later). Past it without renewal, the call is taken for dead: it ends as a retryable
   * failure. Default 30,000 ms.
   */
  taskLeaseMs?: number;
  /**
   * The clock every time rule of the core follows: time limits, long polls, leases and their renewal, the hold on an
   * abandoned run's call_id, and the default idempotency store's retention. Default {@link systemClock}; tests move
   * a clock of their own by hand.
   */
  clock?: Clock;
}

/** How a call ended, for logs and metrics: the tool's outcome, or `rejected` when it was answered 4xx/5xx before running. */
export type CallOutcome =
  | "success"
  | "tool_error"
  | "error"
  | "timeout"
  | "shutdown"
  | "invalid_output"
  | "replayed"
  | "still_running"
  | "disconnected"
  | "cancelled"
  | "rejected";

/** One finished call, as a {@link CallObserver} sees it. */
export interface CallEvent {
  /** The resolved tool id; undefined when the request named no tool served here (never the requested string). */
  toolId: string | undefined;
  outcome: CallOutcome;
  /** The HTTP status the call is answered with (200, or the rejection's). */
  status: number;
  durationMs: number;
  /** The call's trace id (the request's, or its `traceparent`'s), as sent: request-controlled, never a metric label. */
  traceId: string | undefined;
}

/**
 * Hooks the core calls on the way; each must be cheap and must not throw. Metrics (prom-client) plug in
 * here without the core knowing them.
 */
export interface CallObserver {
  /** A call reached the core; it is in flight until {@link callEnded}. */
  callStarted?(): void;
  callEnded?(event: CallEvent): void;
  /** A provider started an authorization challenge for a call. */
  challengeStarted?(providerId: string): void;
}

/** What the adapter knows about a call besides its body. */
export interface CallMeta {
  /** Who the server authenticated (`anonymous` when authentication is off). Part of the idempotency key. */
  principal: string;
  /** A trace id from a W3C `traceparent` header; the request's `trace_id` wins. */
  traceId?: string;
  /** The server's public base URL (no trailing slash), for challenge URLs. */
  baseUrl: string;
  /** Told how this call ended, after the core's observer (e.g. to annotate the call's trace span). */
  onEnd?: (event: CallEvent) => void;
  /**
   * Who the limits on running calls count this call against. Default: the principal. The HTTP adapters give an
   * anonymous caller's address, so that with authentication off one client cannot take every other's share.
   */
  client?: string;
  /**
   * How many values the body held (`scanJson`'s count). Above {@link ALL_ERRORS_MAX_VALUES} an invalid input is
   * explained by its first error only: explaining every error of a hostile input costs more than it tells.
   */
  bodyValues?: number;
  /**
   * Told of the milliseconds the core spends on this call where the adapter cannot measure them, for the
   * adapter's per-client budget: work done after a wait (a run once its call_id is claimed, checking an
   * asynchronous tool's value, storing the answer). The adapter measures what `call` does before its first wait.
   */
  charge?(ms: number): void;
  /**
   * Calls `onGone` when the client goes away before its answer is sent; returns a function that stops watching.
   * A run without a call_id is then aborted through its AbortSignal: nobody could collect its answer. A run with
   * a call_id goes on, and its answer is kept for a retry.
   */
  watchClient?(onGone: () => void): () => void;
}

/** Above this many values in a body, an invalid input is explained by its first error only (see {@link CallMeta.bodyValues}). */
export const ALL_ERRORS_MAX_VALUES = 1_000;

/** The path, below the base URL, of a challenge's check_url (the id follows): the spec's path without `/{challenge_id}`. */
export const CHALLENGE_CHECK_PATH = AUTHORIZATION_CHALLENGES_PATH_TEMPLATE.replace("/{challenge_id}", "");

const DAY_MS = 24 * 60 * 60 * 1000;
/** Request-controlled strings are cut to this in log lines, so a client cannot inflate the log. */
const LOGGED_FIELD_MAX = 128;

const roundMs = (ms: number) => Math.round(ms * 1000) / 1000;

function positiveInteger(name: string, value: number): number {
  if (!(Number.isSafeInteger(value) && value > 0)) {
    throw new ServerConfigError(`${name} must be a positive integer`);
  }
  return value;
}
type Timer = ClockTimer;

/** Why a call that got past its checks ended as it did. */
type Outcome = Exclude<CallOutcome, "rejected">;

/** A call's response, why it ended so, and the tool's own promise when it was given up on before settling. */
interface RunResult {
  response: CallToolResponse;
  outcome: Outcome;
  unsettled?: Promise<unknown>;
}

/** A tool run in progress, as shutdown sees it. */
interface ActiveRun {
  /** Aborts the run; it answers with a retryable "shutting down" failure. */
  shutDown(): void;
  /** The race between the tool and its time limit (or shutdown): once it settles, the answer follows at once. */
  raced: Promise<unknown>;
}

class ToolTimeout extends Error {
  override name = "ToolTimeout";
}

class ShuttingDown extends Error {
  override name = "ShuttingDown";
}

class ClientGone extends Error {
  override name = "ClientGone";
}

class CallCancelled extends Error {
  override name = "CallCancelled";
}

/** How long an abandoned run's hold on its call_id lasts unless renewed (it is, while this process runs it). */
const ABANDONED_HOLD_MS = 60_000;

const recordKey = (key: IdempotencyKey) => JSON.stringify([key.principal, key.callId]);

/** The status of a call whose run failed inside the server (its call_id was released): it may run again. */
function lostRun(callId: string): CallToolResponse {
  return {
    call_id: callId,
    duration: 0,
    success: false,
    error: { message: "The tool failed to run", developer_message: "The server lost the run.", can_retry: true },
  };
}

/** The result of an asynchronous call whose instance stopped vouching for it (it died): it may run again. */
function deadRun(callId: string): CallToolResponse {
  return {
    call_id: callId,
    duration: 0,
    success: false,
    error: {
      message: "The server running the call stopped before it finished",
      developer_message: "Its lease ran out: the instance running it went away. Call again with the same call_id.",
      can_retry: true,
    },
  };
}

/** The answer to a retry of a call whose abandoned run has not settled: try again later. */
function stillRunning(callId: string, timeoutMs: number): CallToolResponse {
  return {
    call_id: callId,
    duration: 0,
    success: false,
    error: {
      message: "An earlier run of this call has not finished yet",
      developer_message:
        "The run was abandoned at its time limit but its tool has not stopped; this call_id stays held until it does.",
      can_retry: true,
      retry_after_ms: Math.min(timeoutMs, 5_000),
    },
  };
}

/** A fault of shared state (a store or provider that cannot answer) as the 503 the client gets. */
function sharedStateUnavailable(cause: unknown): WireError {
  return new WireError("unavailable", "The server's shared state is unavailable", {
    developerMessage: "A store or authorization provider did not answer; retry shortly.",
    headers: { "Retry-After": "1" },
    cause,
  });
}

/** Runs `step`, turning any failure other than a wire error into {@link sharedStateUnavailable}. */
/** What `step` returns or throws, as a promise. */
function settledAsPromise<T>(step: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(step());
  } catch (error) {
    return Promise.reject(error);
  }
}

async function orUnavailable<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    // A configuration fault (no base URL to build a link from) is the server's: a 500, not a store to retry.
    throw error instanceof WireError || error instanceof ServerConfigError ? error : sharedStateUnavailable(error);
  }
}

const describeCause = (error: unknown) =>
  error instanceof Error ? { name: error.name, message: error.message } : { message: String(error) };

/** A run that ended in a failure: its response, why, and the tool's promise if it was given up on unsettled. */
function failedWith(
  call: { callId: string; started: number },
  error: ToolError,
  outcome: Outcome,
  unsettled?: Promise<unknown>,
): RunResult {
  return {
    response: { call_id: call.callId, duration: roundMs(performance.now() - call.started), success: false, error },
    outcome,
    ...(unsettled ? { unsettled } : {}),
  };
}

/** The 422 of docs/protocol.md 3.3 step 6. */
function invalidInput(issues: readonly SchemaIssue[]): WireError {
  return new WireError("invalid_input", "Some input parameters are invalid", {
    parameterErrors: toParameterErrors(issues),
  });
}

/** What a tool's throw (or its time limit, or shutdown) answers (docs/protocol.md 3.6). */
function failedRun(call: { callId: string; started: number }, error: unknown, unsettled?: Promise<unknown>): RunResult {
  if (error instanceof ToolTimeout) {
    const toolError = { message: "The tool did not finish in time", developer_message: error.message, can_retry: true };
    return failedWith(call, toolError, "timeout", unsettled);
  }
  if (error instanceof ShuttingDown) {
    const toolError = { message: "The server is shutting down", developer_message: error.message, can_retry: true };
    return failedWith(call, toolError, "shutdown", unsettled);
  }
  if (error instanceof CallCancelled) {
    const toolError = { message: "The call was cancelled", developer_message: error.message, can_retry: false };
    return failedWith(call, toolError, "cancelled", unsettled);
  }
  if (error instanceof ClientGone) {
    // Nobody reads this answer: it is for the log line and the metrics.
    const toolError = { message: "The client went away", developer_message: error.message, can_retry: true };
    return failedWith(call, toolError, "disconnected", unsettled);
  }
  if (error instanceof OxpToolError) {
    return failedWith(call, error.toToolError(), "tool_error");
  }
  return failedWith(
    call,
    {
      message: "The tool failed to run",
      developer_message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      can_retry: false,
    },
    "error",
  );
}

/**
 * The fields of the line logged for each call (and `msg: "tool call"`), in this order. A call that ran names its
 * resolved `tool_id` and the `requested_tool_id`; a call refused before running (`outcome: "rejected"`) names the
 * requested id as `tool_id`, with the answer's `status` and `reason`.
 */
export type CallLogLine = {
  tool_id: string;
  requested_tool_id?: string;
  call_id?: string | undefined;
  trace_id?: string | undefined;
  outcome: CallOutcome;
  status?: number;
  reason?: string;
  duration_ms: number;
};

/**
 * Where a logger may offer to write a call's line itself, at info level, exactly as its `info` would, dropping it
 * when info is off (`createLogger`'s does): that line is the hottest write of a server, and a line of known shape costs
 * less than pino's generic path (bench/results/notes.md).
 */
export const WRITE_CALL_LINE: unique symbol = Symbol.for("@otc/server.writeCallLine");

/** A logger with the optional fast path for call lines. */
type CallLineLogger = CoreLogger & { [WRITE_CALL_LINE]?: (line: CallLogLine) => void };

/** A call resolved and checked, ready to run once per (principal, call_id). */
interface PreparedCall {
  request: CallToolRequest;
  registered: RegisteredTool;
  meta: CallMeta;
  input: Record<string, unknown>;
  run: (callId: string, task?: LocalTask) => RunResult | Promise<RunResult>;
  /** Set for an asynchronous call (the tasks extension): told once the call is accepted. */
  async?: AsyncCall;
}

/** What the core is told of an asynchronous call: when it is accepted (its checks passed, its run started or joined). */
interface AsyncCall {
  accepted(): void;
}

/** A call the core is executing: what each of its steps reads. */
interface CallInProgress {
  readonly request: CallToolRequest;
  readonly meta: CallMeta;
  readonly asyncCall: AsyncCall | undefined;
  /** When the core took the call (performance.now()). */
  readonly started: number;
  readonly traceId: string | undefined;
  /** The tool, once its id resolved. */
  registered: RegisteredTool | undefined;
}

/** A logger that drops everything. */
export const silentLogger: CoreLogger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};

/** The GET /tools body as JSON text and its strong ETag (quoted), as {@link OxpCore.toolList} makes them. */
export interface ToolList {
  readonly body: string;
  readonly etag: string;
}

/** The protocol core, free of HTTP: plain data in, plain data (or a thrown {@link WireError}) out. */
export class OxpCore {
  readonly registry: ToolRegistry;
  /** The clock the core's time rules follow (see {@link OxpCoreOptions.clock}). */
  readonly clock: Clock;
  private readonly defaultTimeoutMs: number;
  private readonly store: IdempotencyStore;
  private readonly retentionMs: number;
  private readonly providers: ReadonlyMap<string, AuthorizationProvider>;
  private readonly tokens: TokenStore;
  private readonly secrets: Readonly<Record<string, string>>;
  private readonly logger: CoreLogger;
  private readonly writeCallLine: ((line: CallLogLine) => void) | undefined;
  private readonly observer: CallObserver | undefined;
  /** The GET /tools bodies and their ETags (OXP 1.0's, then the annotated one), each made once: the catalog never changes. */
  private readonly toolListCache: [Promise<ToolList> | undefined, Promise<ToolList> | undefined] = [
    undefined,
    undefined,
  ];
  /** Calls running in this process, by (principal, call_id), so a duplicate can wait for the first. */
  private readonly running = new Map<string, Promise<CallToolResponse>>();
  /** Tool runs in progress, for {@link abortAll}. */
  private readonly active = new Set<ActiveRun>();
  /** Set by {@link abortAll}: a run that starts afterwards (its call was accepted, then waited) is stopped at once. */
  private shutDown = false;
  private readonly maxRunning: number;
  private readonly maxRunningPerClient: number;
  /** Runs in progress by client, for the per-client bound (an entry only while it is above 0). */
  private readonly runningByClient = new Map<string, number>();
  /** Calls with a call_id this process runs, by record key: their progress, watchers and cancel (docs/protocol.md 9.3). */
  private readonly tasks = new Map<string, LocalTask>();
  private readonly asyncTimeoutMs: number;
  private readonly maxAsync: number;
  private readonly maxAsyncPerClient: number;
  private readonly progressPerSecond: number;
  private readonly taskLeaseMs: number;
  /** Asynchronous runs in progress, all together and by client (they count against their own bounds only). */
  private asyncRunning = 0;
  private readonly asyncByClient = new Map<string, number>();

  constructor(options: OxpCoreOptions) {
    this.registry = new ToolRegistry(options.tools, options.inputValidator);
    this.clock = options.clock ?? systemClock;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
    if (!(this.defaultTimeoutMs > 0)) {
      throw new ServerConfigError("defaultTimeoutMs must be a positive number");
    }
    this.store = options.idempotencyStore ?? new MemoryIdempotencyStore({ now: () => this.clock.now() });
    this.retentionMs = options.idempotencyRetentionMs ?? DAY_MS;
    const providers = new Map<string, AuthorizationProvider>();
    for (const provider of options.authorizationProviders ?? []) {
      if (!/^[A-Za-z0-9_-]+$/.test(provider.id)) {
        throw new ServerConfigError(`Authorization provider id '${provider.id}' must be letters, digits, '_' or '-'`);
      }
      if (providers.has(provider.id)) {
        throw new ServerConfigError(`Two authorization providers have the id '${provider.id}'`);
      }
      providers.set(provider.id, provider);
    }
    this.providers = providers;
    this.tokens = options.tokenStore ?? new MemoryTokenStore();
    this.secrets = options.secrets ?? {};
    this.logger = options.logger ?? silentLogger;
    // The logger's own fast path, not one a child logger inherits from its parent (the child's bindings and level
    // are its own).
    this.writeCallLine = Object.hasOwn(this.logger, WRITE_CALL_LINE)
      ? (this.logger as CallLineLogger)[WRITE_CALL_LINE]
      : undefined;
    this.observer = options.observer;
    this.maxRunning = positiveInteger("maxRunningCalls", options.maxRunningCalls ?? 1_024);
    this.maxRunningPerClient = positiveInteger("maxRunningCallsPerClient", options.maxRunningCallsPerClient ?? 128);
    this.asyncTimeoutMs = options.asyncTimeoutMs ?? 15 * 60_000;
    if (!(this.asyncTimeoutMs > 0)) {
      throw new ServerConfigError("asyncTimeoutMs must be a positive number");
    }
    this.maxAsync = positiveInteger("maxAsyncCalls", options.maxAsyncCalls ?? 10_000);
    this.maxAsyncPerClient = positiveInteger("maxAsyncCallsPerClient", options.maxAsyncCallsPerClient ?? 100);
    this.taskLeaseMs = positiveInteger("taskLeaseMs", options.taskLeaseMs ?? 30_000);
    this.progressPerSecond = options.progressPerSecond ?? 4;
    if (!(this.progressPerSecond > 0)) {
      throw new ServerConfigError("progressPerSecond must be a positive number");
    }
  }

  /** The GET /tools body: OXP 1.0's, or with the annotations extension's fields (docs/protocol.md 9.2). */
  listTools(options: { annotations?: boolean } = {}): ToolListResponse {
    return { items: [...this.registry.list(options)] };
  }

  /**
   * The GET /tools body as JSON text, with a strong ETag for `If-None-Match` (the body's SHA-256), in OXP 1.0's
   * form or with the annotations. Each is made once, since the catalog is fixed when the core is built: every call
   * resolves to the same object, which a caller may key its own caches on. A promise, as it was when the digest
   * came from Web Crypto: callers written for that keep working.
   *
   * @example
   * const { body, etag } = await core.toolList();
   */
  toolList(options: { annotations?: boolean } = {}): Promise<ToolList> {
    const slot = options.annotations ? 1 : 0;
    let cached = this.toolListCache[slot];
    if (!cached) {
      const body = JSON.stringify(this.listTools(options));
      cached = Promise.resolve(Object.freeze({ body, etag: `"${sha256Base64url(body)}"` }));
      this.toolListCache[slot] = cached;
    }
    return cached;
  }

  /** A challenge's status for its check_url; a 404 when no provider knows it, a 503 when the provider fails. */
  async checkChallenge(challengeId: string): Promise<{ status: ChallengeStatus }> {
    const provider = this.providers.get(challengeId.split(".")[0] ?? "");
    const status = provider ? await orUnavailable(() => provider.checkChallenge(challengeId)) : undefined;
    if (!status) {
      throw new WireError("not_found", "No such authorization challenge", {
        developerMessage: "The challenge id is unknown, or the challenge has expired.",
      });
    }
    return { status };
  }

  /**
   * Runs a call (docs/protocol.md 3.3 steps 4-7) and returns its CallToolResponse. Throws a {@link WireError}
   * (400 or 422) when the call fails before its tool runs. Tool failures are responses, never throws.
   * `request` is what `parseCallBody` returned: the body's shape and depth are checked there, once.
   */
  call(request: CallToolRequest, meta: CallMeta): Promise<CallToolResponse> {
    return settledAsPromise(() => this.execute(request, meta, undefined));
  }

  /**
   * {@link call}, answering without a promise where nothing waits (no requirement looked up, an input checked at
   * once, a synchronous tool without a call_id): what the adapters call, one microtask hop fewer on their common
   * path. Throws what `call` would reject with.
   */
  callNow(request: CallToolRequest, meta: CallMeta): CallToolResponse | Promise<CallToolResponse> {
    return this.execute(request, meta, undefined);
  }

  /**
   * Runs a call asynchronously (the tasks extension, docs/protocol.md 9.3): checks it as {@link call} does
   * (a failure rejects as there), starts or joins its run under its call_id (one is made when the request has
   * none), and answers with its response if the run ends within `waitMs`, else with its running status.
   */
  async callAsync(
    request: CallToolRequest,
    meta: CallMeta,
    waitMs: number,
  ): Promise<{ response: CallToolResponse } | { status: CallStatus }> {
    const callId = request.call_id ?? crypto.randomUUID();
    let accept = () => {};
    const accepted = new Promise<undefined>((resolve) => {
      accept = () => resolve(undefined);
    });
    const outcome = settledAsPromise(() =>
      this.execute({ ...request, call_id: callId }, meta, { accepted: accept }),
    ).then((response) => ({ response }));
    const checked = await Promise.race([outcome, accepted]);
    if (checked) {
      return checked;
    }
    let timer: Timer | undefined;
    const waited = await Promise.race([
      outcome,
      new Promise<undefined>((resolve) => {
        timer = this.clock.setTimeout(() => resolve(undefined), waitMs);
      }),
    ]).finally(() => this.clock.clearTimeout(timer));
    if (waited) {
      return waited;
    }
    // Whatever happens later is logged by the run: nobody awaits it here.
    outcome.catch(() => {});
    return { status: (await this.callStatus(meta.principal, callId)) ?? { call_id: callId, status: "running" } };
  }

  /**
   * Where a call stands, for the principal that made it (the tasks extension): running (with its progress) while
   * a run holds its call_id, else its kept response; undefined for a call_id unknown to this principal.
   */
  async callStatus(principal: string, callId: string): Promise<CallStatus | undefined> {
    return (await this.callState(principal, callId))?.status;
  }

  /**
   * {@link callStatus} with the number of its progress (the id of its latest `progress` event): from this
   * process's own task, else from the store, where another instance's run records it. With a shared store, this
   * process's task answers only what the store has kept, and once the store has answered the progress on its way
   * (no more than one round trip, only while one is): then no answer from here is behind one another instance gave
   * before, nor ahead of the store's, and a client reading through several instances never sees progress go back.
   */
  async callState(principal: string, callId: string): Promise<{ status: CallStatus; seq: number } | undefined> {
    const key: IdempotencyKey = { principal, callId };
    const task = this.tasks.get(recordKey(key));
    if (task) {
      const recording = task.recorded();
      if (recording) {
        await recording;
      }
      return { status: task.status(), seq: task.seq };
    }
    const entry = await orUnavailable(() => this.store.get(key));
    if (!entry) {
      return undefined;
    }
    if (entry.response) {
      const status = entry.cancelled ? "cancelled" : "completed";
      return { status: { call_id: callId, status, result: entry.response }, seq: entry.progressSeq ?? 0 };
    }
    const status: CallStatus = { call_id: callId, status: "running" };
    if (entry.progress) {
      status.progress = entry.progress;
    }
    if (entry.leaseUntil !== undefined && entry.leaseUntil < this.clock.now()) {
      // Nobody vouches for the run any more: its instance died. It never stays "running".
      return { status: { ...status, status: "completed", result: deadRun(callId) }, seq: entry.progressSeq ?? 0 };
    }
    return { status, seq: entry.progressSeq ?? 0 };
  }

  /** {@link callState} of a call this process runs, at once; undefined for any other. */
  localCallState(principal: string, callId: string): { status: CallStatus; seq: number } | undefined {
    const local = this.tasks.get(recordKey({ principal, callId }));
    return local ? { status: local.status(), seq: local.seq } : undefined;
  }

  /**
   * Calls `listener` on each change of a call this process runs (a progress kept, its end); returns the function
   * that stops it, or undefined when this process runs no such call.
   */
  watchCall(principal: string, callId: string, listener: () => void): (() => void) | undefined {
    const key: IdempotencyKey = { principal, callId };
    const local = this.tasks.get(recordKey(key));
    if (local) {
      return local.watch(listener);
    }
    // A call another instance runs, followed through a shared store.
    return this.store.watch?.(key, (event) => {
      if (event !== "cancel") {
        listener();
      }
    });
  }

  /**
   * Cancels a running call (the tasks extension): its tool's AbortSignal fires and the call ends `cancelled`.
   * A call that has ended is left as it is. Resolves with the call's status once the cancel has taken effect (at
   * most `maxWaitMs` later), or undefined for a call_id unknown to this principal.
   */
  async cancelCall(principal: string, callId: string, maxWaitMs = 5_000): Promise<CallStatus | undefined> {
    const key: IdempotencyKey = { principal, callId };
    const task = this.tasks.get(recordKey(key));
    if (!task && this.store.cancel) {
      return this.cancelElsewhere(key, maxWaitMs);
    }
    if (task?.cancel()) {
      let timer: Timer | undefined;
      let unwatch = () => {};
      await new Promise<void>((resolve) => {
        if (task.end) {
          resolve();
          return;
        }
        unwatch = task.watch(() => {
          if (task.end) {
            resolve();
          }
        });
        timer = this.clock.setTimeout(resolve, maxWaitMs);
      });
      this.clock.clearTimeout(timer);
      unwatch();
      if (task.end) {
        return task.status();
      }
    }
    return this.callStatus(principal, callId);
  }

  /** Cancels a call another instance runs, through the shared store; waits (at most `maxWaitMs`) until it has ended. */
  private async cancelElsewhere(key: IdempotencyKey, maxWaitMs: number): Promise<CallStatus | undefined> {
    const before = await this.callStatus(key.principal, key.callId);
    if (before?.status !== "running" || !this.store.cancel) {
      return before;
    }
    let unwatch = () => {};
    let timer: Timer | undefined;
    const settled = new Promise<void>((resolve) => {
      unwatch = this.store.watch?.(key, (event) => event === "settled" && resolve()) ?? (() => {});
      timer = this.clock.setTimeout(resolve, maxWaitMs);
    });
    try {
      await orUnavailable(() => (this.store.cancel as (key: IdempotencyKey) => Promise<void>)(key));
      await settled;
    } finally {
      this.clock.clearTimeout(timer);
      unwatch();
    }
    return this.callStatus(key.principal, key.callId);
  }

  /**
   * Runs a call: resolves it, checks it, runs it once per (principal, call_id), and logs its line. Answers without a
   * promise when nothing waits (no requirement looked up, an input checked at once, a synchronous tool without a
   * call_id): the adapters' common case then takes no microtask hop. Throws (or rejects with) a refusal.
   */
  private execute(
    request: CallToolRequest,
    meta: CallMeta,
    asyncCall: AsyncCall | undefined,
  ): CallToolResponse | Promise<CallToolResponse> {
    const call: CallInProgress = {
      request,
      meta,
      asyncCall,
      started: performance.now(),
      traceId: request.trace_id ?? meta.traceId,
      registered: undefined,
    };
    if (this.observer?.callStarted) {
      this.notify(this.observer.callStarted, this.observer);
    }
    let ran: RunResult | Promise<RunResult>;
    try {
      ran = this.start(call);
    } catch (error) {
      throw this.refused(call, error);
    }
    if (ran instanceof Promise) {
      return ran.then(
        (answer) => this.finished(call, answer),
        (error: unknown) => {
          throw this.refused(call, error);
        },
      );
    }
    return this.finished(call, ran);
  }

  /** {@link execute}'s steps up to the run: the tool, its requirements, its input. */
  private start(call: CallInProgress): RunResult | Promise<RunResult> {
    const { request, meta } = call;
    const registered = this.resolve(request.tool_id);
    call.registered = registered;
    const requirements = registered.definition.requirements;
    // Without requirements nothing is looked up: no store, no wait.
    if (!requirements) {
      return this.checkInput(call, registered, sentCredentials(request.context));
    }
    return orUnavailable(() =>
      resolveRequirements(requirements, request.context, {
        providers: this.providers,
        tokens: this.tokens,
        serverSecrets: this.secrets,
        // Read only when a challenge is started: an adapter may have to work it out, or refuse to.
        get baseUrl() {
          return meta.baseUrl;
        },
        checkPath: CHALLENGE_CHECK_PATH,
        principal: meta.principal,
      }),
    ).then(
      (resolved) => this.checkInput(call, registered, resolved),
      (error: unknown) => {
        if (error instanceof WireError && error.details.missingRequirements?.authorization) {
          for (const challenge of error.details.missingRequirements.authorization) {
            // A challenge id is `<provider id>.<random>`: the observer learns the provider, a bounded set.
            const providerId = challenge.id.split(".")[0] ?? challenge.id;
            if (challenge.url && this.observer?.challengeStarted) {
              this.notify(this.observer.challengeStarted, this.observer, providerId);
            }
          }
        }
        throw error;
      },
    );
  }

  /**
   * The input check: Ajv's (or the configured validator's) on the input as sent, or, for a tool whose schema library
   * validates it, the library's, whose value (defaults filled in, transforms applied) is what the tool runs with.
   */
  private checkInput(
    call: CallInProgress,
    registered: RegisteredTool,
    resolved: ResolvedRequirements,
  ): RunResult | Promise<RunResult> {
    const input = call.request.input ?? {};
    const allErrors = call.meta.bodyValues === undefined || call.meta.bodyValues <= ALL_ERRORS_MAX_VALUES;
    if (registered.parse === undefined) {
      const errors = registered.input.errors(input, allErrors);
      if (errors) {
        throw invalidInput(errors);
      }
      return this.runChecked(call, registered, resolved, { input, runInput: input });
    }
    const parsed = registered.parse(input, allErrors);
    const toRun = (checked: InputCheck): RunResult | Promise<RunResult> => {
      if ("issues" in checked) {
        throw invalidInput(checked.issues);
      }
      // The call_id record keeps the input as sent.
      return "failure" in checked
        ? this.runChecked(call, registered, resolved, { input, runInput: input, inputFailure: checked })
        : this.runChecked(call, registered, resolved, { input, runInput: checked.value as Record<string, unknown> });
    };
    return parsed instanceof Promise
      ? this.checkedInTime(registered, parsed, call.asyncCall).then(toRun)
      : toRun(parsed);
  }

  /** Runs a checked call once per (principal, call_id). */
  private runChecked(
    call: CallInProgress,
    registered: RegisteredTool,
    resolved: ResolvedRequirements,
    inputs: { input: Record<string, unknown>; runInput: Record<string, unknown>; inputFailure?: { error: unknown } },
  ): RunResult | Promise<RunResult> {
    const { request, meta, asyncCall, started, traceId } = call;
    const { input, runInput, inputFailure } = inputs;
    const client = meta.client ?? meta.principal;
    // Without a call_id nobody can collect the answer of a client that went away: its run is stopped.
    const abortOnHangUp = request.call_id === undefined && !asyncCall;
    const run = (callId: string, task?: LocalTask) =>
      this.run(registered, runInput, {
        callId,
        inputFailure,
        traceId,
        userId: request.context?.user_id || undefined,
        tokens: resolved.tokens,
        secrets: resolved.secrets,
        extra: request.context ?? {},
        started,
        client,
        meta,
        abortOnHangUp,
        task,
      });
    // A sync tool without a call_id answers without a promise: no microtask hops on the common path.
    return this.idempotent({ request, registered, meta, input, run, async: asyncCall });
  }

  /** A call refused before or instead of its run: told to the observer and logged once; returns the error to throw. */
  private refused(call: CallInProgress, error: unknown): unknown {
    const { request, meta, traceId, registered } = call;
    // Store and provider faults arrive as 503s; anything else here is a bug of the server's: a 500, never a 503.
    const status = error instanceof WireError ? error.status : 500;
    const durationMs = performance.now() - call.started;
    this.ended({ toolId: registered?.definition.id, outcome: "rejected", status, durationMs, traceId }, meta);
    // One line per call, each field once: the requested id, as the call never ran.
    const line: CallLogLine = {
      tool_id: shorten(request.tool_id, LOGGED_FIELD_MAX),
      call_id: request.call_id === undefined ? undefined : shorten(request.call_id, LOGGED_FIELD_MAX),
      trace_id: traceId === undefined ? undefined : shorten(traceId, LOGGED_FIELD_MAX),
      outcome: "rejected",
      status,
      reason: error instanceof WireError ? error.message : "internal error",
      duration_ms: roundMs(durationMs),
    };
    if (error instanceof WireError && !(error.kind === "unavailable" && error.details.cause !== undefined)) {
      this.logCall(line);
    } else {
      const cause = error instanceof WireError ? error.details.cause : error;
      this.logger.error({ ...line, err: describeCause(cause) }, "tool call");
    }
    return error;
  }

  /** A call that ran (or was replayed): told to the observer and logged once; returns its response. */
  private finished(call: CallInProgress, answer: RunResult): CallToolResponse {
    const { request, meta, traceId } = call;
    const registered = call.registered as RegisteredTool;
    const { response, outcome } = answer;
    const durationMs = performance.now() - call.started;
    if (this.observer?.callEnded || meta.onEnd) {
      this.ended({ toolId: registered.definition.id, outcome, status: 200, durationMs, traceId }, meta);
    }
    if (this.infoEnabled()) {
      this.logCall({
        tool_id: registered.definition.id,
        requested_tool_id: shorten(request.tool_id, LOGGED_FIELD_MAX),
        call_id: shorten(response.call_id, LOGGED_FIELD_MAX),
        trace_id: traceId === undefined ? undefined : shorten(traceId, LOGGED_FIELD_MAX),
        outcome,
        duration_ms: roundMs(durationMs),
      });
    }
    return response;
  }

  /**
   * An asynchronous input check (a schema library's async refinement, the tool author's code) within the tool's
   * time limit: one that never settles would otherwise hold the request and its client's share for ever. Past the
   * limit the call fails as a tool that ran past it does (`can_retry: true`), without running the tool.
   */
  private checkedInTime(
    registered: RegisteredTool,
    checking: Promise<InputCheck>,
    asyncCall: AsyncCall | undefined,
  ): Promise<InputCheck> {
    const timeoutMs = this.timeLimitOf(registered, asyncCall !== undefined);
    let timer: Timer | undefined;
    const late = new Promise<InputCheck>((resolve) => {
      timer = this.clock.setTimeout(() => {
        const error = new ToolTimeout(
          `${registered.definition.id}'s input check ran past the tool's time limit of ${timeoutMs} ms`,
        );
        resolve({ failure: true, error });
      }, timeoutMs);
    });
    return Promise.race([checking, late]).finally(() => this.clock.clearTimeout(timer));
  }

  /**
   * Whether a call's info line is read at all: it is built only then (pino's isLevelEnabled; the silent logger
   * never). A fast path checks the level itself, without a call into the logger per call.
   */
  private infoEnabled(): boolean {
    return (
      this.writeCallLine !== undefined ||
      (this.logger !== silentLogger && this.logger.isLevelEnabled?.("info") !== false)
    );
  }

  /** Writes a call's info line, through the logger's own fast path when it has one. */
  private logCall(line: CallLogLine): void {
    if (this.writeCallLine) {
      this.writeCallLine(line);
    } else {
      this.logger.info(line, "tool call");
    }
  }

  /** Tells the observer and the call's own hook how a call ended, once. */
  private ended(event: CallEvent, meta: CallMeta): void {
    if (this.observer?.callEnded) {
      this.notify(this.observer.callEnded, this.observer, event);
    }
    if (meta.onEnd) {
      this.notify(meta.onEnd, undefined, event);
    }
  }

  /** Runs an observer hook: a hook that throws is logged, and never changes a call's answer. */
  private notify<A extends unknown[]>(hook: (...args: A) => void, self: unknown, ...args: A): void {
    try {
      hook.apply(self, args);
    } catch (error) {
      this.logger.error({ err: describeCause(error) }, "a call observer failed");
    }
  }

  private resolve(toolId: string): RegisteredTool {
    const lookup = this.registry.lookup(toolId);
    if (lookup.found) {
      return lookup.registered;
    }
    if (lookup.reason === "invalid_id") {
      throw new WireError("bad_request", `Tool id '${shorten(toolId)}' is not valid`, {
        developerMessage: "A tool id looks like Toolkit.Tool, Toolkit.Tool@x or Toolkit.Tool@x.y.z.",
      });
    }
    const name = shorten(lookup.request.qualifiedName);
    throw new WireError("bad_request", `Tool '${name}' was not found`, {
      developerMessage:
        lookup.reason === "unknown_tool"
          ? `No tool named ${name} is served here.`
          : `${name} version ${requestedToolVersion(lookup.request)} is not available; available versions: ${lookup.available.join(", ")}.`,
    });
  }

  /** Runs the call once per (principal, call_id) (protocol 3.7): replays, waits for, or refuses duplicates. */
  private idempotent(call: PreparedCall): RunResult | Promise<RunResult> {
    const callId = call.request.call_id;
    if (callId === undefined) {
      return call.run(crypto.randomUUID());
    }
    return this.keyed(call, callId);
  }

  /** {@link idempotent} for a call that carries a call_id. */
  private async keyed(call: PreparedCall, callId: string): Promise<RunResult> {
    const { request, registered, meta, run } = call;
    const key: IdempotencyKey = { principal: meta.principal, callId };
    const fingerprint = sha256Base64url(
      canonicalJson([registered.definition.id, call.input, request.context?.user_id || null]),
    );
    const timeoutMs = this.timeLimitOf(registered, call.async !== undefined);
    let held: IdempotencyEntry | undefined;
    try {
      // A pending claim lapses if this instance dies, so a retry elsewhere is not blocked for a day.
      held = await this.store.claim(key, fingerprint, timeoutMs + 5_000);
    } catch (error) {
      if (!(error instanceof IdempotencyStoreFullError)) {
        throw sharedStateUnavailable(error);
      }
      throw new WireError("unavailable", "The server cannot take new call_ids right now", {
        developerMessage:
          "Its idempotency store is full of records it must keep. Retry later, or call without a call_id.",
        headers: { "Retry-After": String(Math.ceil(error.retryAfterMs / 1000)) },
      });
    }
    if (held) {
      if (held.fingerprint !== fingerprint) {
        throw new WireError("bad_request", "This call_id was already used for a different call", {
          developerMessage: "A call_id is an idempotency key: reuse it only to retry the same tool, input and user_id.",
        });
      }
      if (!held.response && !held.abandoned) {
        // Joining a run in progress: an asynchronous call is accepted, and its status is the run's.
        call.async?.accepted();
      }
      const found =
        held.response || held.abandoned
          ? held
          : await orUnavailable(() => this.waitFor(key, fingerprint, timeoutMs + 5_000));
      if (found?.response) {
        return { response: found.response, outcome: "replayed" };
      }
      if (found?.abandoned) {
        return { response: stillRunning(callId, timeoutMs), outcome: "still_running" };
      }
      // The first call was released (a retryable failure) or its claim lapsed: run it again.
      return this.idempotent(call);
    }
    const id = recordKey(key);
    const task = new LocalTask(callId, {
      async: call.async !== undefined,
      perSecond: this.progressPerSecond,
      clock: this.clock,
      // With a shared store, other instances read the progress there; this one answers it once it is kept there.
      record: this.store.progress
        ? (progress, seq) => this.store.progress?.(key, fingerprint, { progress, seq })
        : undefined,
    });
    this.tasks.set(id, task);
    const stopSharing = this.shareTask(key, fingerprint, task);
    // Through the Promise constructor: a run that throws at once still releases its claim (below).
    // After the store's answer the adapter no longer measures: the run's synchronous work is charged here.
    const pending = new Promise<RunResult>((resolve) => {
      const running = meta.charge ? performance.now() : 0;
      try {
        resolve(run(callId, task));
        // Accepted only once the run started: a bound on running calls (429, 503) is answered as such, never 202.
        call.async?.accepted();
      } finally {
        meta.charge?.(performance.now() - running);
      }
    }).then(async (result) => {
      const { response, unsettled } = result;
      const cancelled = result.outcome === "cancelled";
      try {
        if (unsettled && !cancelled) {
          this.holdWhileUnsettled(key, fingerprint, unsettled);
        } else if (response.success || response.error.can_retry !== true || task.async) {
          const storing = meta.charge ? performance.now() : 0;
          // An asynchronous call's retryable failure is kept for its status, but a new call with its key runs again.
          const rerunnable = !response.success && response.error.can_retry === true;
          const stored = this.store.complete(
            key,
            { fingerprint, response, ...(cancelled ? { cancelled } : {}), ...(rerunnable ? { rerunnable } : {}) },
            this.retentionMs,
          );
          meta.charge?.(performance.now() - storing);
          await stored;
        } else {
          // Not kept (a retry must run again), but duplicates waiting on other instances share it.
          await this.store.release(key, response);
        }
      } catch (error) {
        // The tool ran: its answer goes out. Unrecorded, the claim lapses and a retry runs the call again.
        this.logger.error(
          { call_id: shorten(callId, LOGGED_FIELD_MAX), err: describeCause(error) },
          "could not record the call's response in the idempotency store",
        );
      }
      stopSharing();
      this.endTask(id, task, { response, cancelled });
      return result;
    });
    const shared = pending.then((result) => result.response);
    this.running.set(id, shared);
    shared
      .catch(() => {
        stopSharing();
        this.store.release(key).catch(() => {});
        this.endTask(id, task, { response: lostRun(callId), cancelled: false });
      })
      .finally(() => this.running.delete(id));
    return pending;
  }

  /**
   * Makes a run's task reachable through a shared store: a cancel asked on another instance reaches it, and an
   * asynchronous run is vouched for (its lease renewed) while it goes on. Returns the function that stops both.
   */
  private shareTask(key: IdempotencyKey, fingerprint: string, task: LocalTask): () => void {
    const unwatch = this.store.watch?.(key, (event) => {
      if (event === "cancel") {
        task.cancel();
      }
    });
    let stopVouching: (() => void) | undefined;
    const renew = this.store.renew;
    if (renew && task.async) {
      const vouch = () => {
        renew.call(this.store, key, fingerprint, this.taskLeaseMs).catch((error: unknown) => {
          this.logger.error(
            { call_id: shorten(key.callId, LOGGED_FIELD_MAX), err: describeCause(error) },
            "could not renew an asynchronous call's lease; retrying",
          );
        });
      };
      vouch();
      stopVouching = everyOn(this.clock, this.taskLeaseMs / 3, vouch);
    }
    return () => {
      unwatch?.();
      stopVouching?.();
    };
  }

  /** Ends a call's task: its watchers learn how, and its status is read from the store from now on. */
  private endTask(id: string, task: LocalTask, end: TaskEnd): void {
    task.settle(end);
    if (this.tasks.get(id) === task) {
      this.tasks.delete(id);
    }
  }

  /** A call's time limit: its tool's, else the server's; asynchronous calls have their own (docs/protocol.md 9.3). */
  private timeLimitOf(registered: RegisteredTool, async: boolean): number {
    const { tool } = registered;
    return async ? (tool.asyncTimeoutMs ?? this.asyncTimeoutMs) : (tool.timeoutMs ?? this.defaultTimeoutMs);
  }

  /**
   * Keeps `key` held while a run abandoned at its time limit goes on (its tool ignored the signal), so a
   * retry is told to wait instead of starting a second concurrent run; frees it once the run settles.
   */
  private holdWhileUnsettled(key: IdempotencyKey, fingerprint: string, unsettled: Promise<unknown>): void {
    let settled = false;
    let timer: Timer | undefined;
    const later = (ms: number) => {
      if (settled) {
        return;
      }
      timer = this.clock.setTimeout(hold, ms);
      unrefTimer(timer);
    };
    // The claim's own lifetime is nearly spent by now: a failed hold is retried within a second, not at the next renewal.
    const hold = () => {
      this.store.abandon(key, fingerprint, ABANDONED_HOLD_MS).then(
        () => later(ABANDONED_HOLD_MS / 3),
        (error: unknown) => {
          this.logger.error(
            { call_id: shorten(key.callId, LOGGED_FIELD_MAX), err: describeCause(error) },
            "could not hold the call_id of an abandoned run; retrying",
          );
          later(1_000);
        },
      );
    };
    unsettled
      .catch(() => {})
      .finally(() => {
        settled = true;
        this.clock.clearTimeout(timer);
        this.store.release(key).catch(() => {});
      });
    hold();
  }

  /**
   * Waits for the first call holding `key`: in this process directly; elsewhere through the store's own
   * wait (a shared store can wake waiters at once), else by polling it.
   */
  private async waitFor(
    key: IdempotencyKey,
    fingerprint: string,
    maxMs: number,
  ): Promise<IdempotencyEntry | undefined> {
    const local = this.running.get(recordKey(key));
    if (local) {
      return local.then(
        (response) => ({ fingerprint, response }),
        () => undefined,
      );
    }
    if (this.store.waitFor) {
      return this.store.waitFor(key, fingerprint, maxMs);
    }
    const deadline = this.clock.now() + maxMs;
    while (this.clock.now() < deadline) {
      await sleepOn(this.clock, 25);
      const entry = await this.store.get(key);
      if (!entry || entry.fingerprint !== fingerprint) {
        return undefined;
      }
      if (entry.response || entry.abandoned) {
        return entry;
      }
      // Nobody vouches for the run any more: the caller claims the key (the store hands a dead run's key over).
      if (entry.leaseUntil !== undefined && entry.leaseUntil < this.clock.now()) {
        return undefined;
      }
    }
    return undefined;
  }

  /**
   * Aborts every running call through its AbortSignal and answers each with a retryable failure saying
   * the server is shutting down; resolves once those answers exist. For the end of a graceful drain.
   */
  async abortAll(): Promise<void> {
    this.shutDown = true;
    const runs = [...this.active];
    for (const active of runs) {
      active.shutDown();
    }
    const ignore = () => {};
    await Promise.all(runs.map((active) => active.raced.then(ignore, ignore)));
  }

  /**
   * Runs the tool with its time limit and turns whatever happens into a CallToolResponse: at once for a
   * tool that answers synchronously, through a promise for one that returns a promise.
   */
  private run(
    registered: RegisteredTool,
    input: Record<string, unknown>,
    call: {
      callId: string;
      traceId: string | undefined;
      userId: string | undefined;
      tokens: Record<string, string>;
      secrets: Record<string, string>;
      extra: Record<string, unknown>;
      started: number;
      client: string;
      meta: CallMeta;
      /** Abort the run when its client goes away (a call without a call_id: nobody could collect its answer). */
      abortOnHangUp: boolean;
      /** The call's task, when it has a call_id: where its progress goes and its cancel comes from. */
      task: LocalTask | undefined;
      /** Set when the tool's schema library threw while checking the input: the run fails with that, as a tool would. */
      inputFailure?: { error: unknown } | undefined;
    },
  ): RunResult | Promise<RunResult> {
    const { tool, definition } = registered;
    const async = call.task?.async === true;
    if (async) {
      this.checkAsyncBounds(call.client);
    } else {
      this.checkRunningBounds(call.client);
    }
    const timeoutMs = this.timeLimitOf(registered, async);
    const context = new RunContext(call, this.logger, definition.id);
    let returned: unknown;
    try {
      if (call.inputFailure) {
        throw call.inputFailure.error;
      }
      returned = tool.run(input, context);
    } catch (error) {
      return failedRun(call, error);
    }
    // A tool that answered at once needs no time limit, nor a race: only a pending one is raced against it.
    if (typeof (returned as PromiseLike<unknown> | null)?.then !== "function") {
      return this.settle(registered, call, returned);
    }
    return (async () => {
      let result: unknown;
      const running = Promise.resolve(returned);
      let timer: Timer | undefined;
      let stop: (error: Error) => void = () => {};
      const stopped = new Promise<never>((_, reject) => {
        stop = (error) => {
          // Settled before the abort: a tool that rejects on its signal must not win the race with its own error.
          reject(error);
          context.stop(error);
        };
        timer = this.clock.setTimeout(
          () => stop(new ToolTimeout(`${definition.id} ran past its time limit of ${timeoutMs} ms`)),
          timeoutMs,
        );
      });
      let settled = false;
      // Attached before the race, so it runs first; it also keeps a late rejection of an abandoned tool handled.
      const markSettled = () => {
        settled = true;
      };
      running.then(markSettled, markSettled);
      const raced = Promise.race([running, stopped]);
      const active: ActiveRun = {
        shutDown: () => stop(new ShuttingDown("The server shut down before the tool finished")),
        raced,
      };
      this.active.add(active);
      if (this.shutDown) {
        active.shutDown();
      }
      call.task?.cancelWith(() => stop(new CallCancelled("A client cancelled the call.")));
      const byClient = async ? this.asyncByClient : this.runningByClient;
      byClient.set(call.client, (byClient.get(call.client) ?? 0) + 1);
      if (async) {
        this.asyncRunning++;
      }
      let unwatch: (() => void) | undefined;
      try {
        if (call.abortOnHangUp) {
          unwatch = call.meta.watchClient?.(() =>
            stop(new ClientGone("The client closed its connection before the tool finished")),
          );
        }
        result = await raced;
      } catch (error) {
        // A run that has not settled when given up on still holds its call_id until it does.
        return failedRun(call, error, settled ? undefined : running);
      } finally {
        this.clock.clearTimeout(timer);
        unwatch?.();
        this.active.delete(active);
        const left = (byClient.get(call.client) ?? 1) - 1;
        if (left > 0) {
          byClient.set(call.client, left);
        } else {
          byClient.delete(call.client);
        }
        if (async) {
          this.asyncRunning--;
        }
      }
      // After an asynchronous tool the adapter no longer measures: checking and copying the value is charged here.
      if (!call.meta.charge) {
        return this.settle(registered, call, result);
      }
      const settling = performance.now();
      try {
        return this.settle(registered, call, result);
      } finally {
        call.meta.charge(performance.now() - settling);
      }
    })();
  }

  /**
   * Refuses a new run when the runs in progress are at a bound: the client's own (429) or the server's (503).
   * Only runs still pending count (a synchronous tool finishes before another call is read), those of clients
   * that went away but whose call_id keeps them going included.
   */
  private checkRunningBounds(client: string): void {
    const running = this.active.size - this.asyncRunning;
    if (running === 0) {
      return;
    }
    if ((this.runningByClient.get(client) ?? 0) >= this.maxRunningPerClient) {
      throw new WireError("too_many_requests", "Too many of your calls are running", {
        developerMessage: `At most ${this.maxRunningPerClient} calls of one client run at once; retry when one has finished.`,
        headers: { "Retry-After": "1" },
      });
    }
    if (running >= this.maxRunning) {
      throw new WireError("unavailable", "The server is running as many calls as it can", {
        developerMessage: `At most ${this.maxRunning} calls run at once; retry shortly.`,
        headers: { "Retry-After": "1" },
      });
    }
  }

  /**
   * Refuses a new asynchronous run at its bounds (docs/protocol.md 9.3): the client's own (429) or the server's
   * (503). They are apart from the bounds of calls answered in their request, and far larger.
   */
  private checkAsyncBounds(client: string): void {
    if ((this.asyncByClient.get(client) ?? 0) >= this.maxAsyncPerClient) {
      throw new WireError("too_many_requests", "Too many of your asynchronous calls are running", {
        developerMessage: `At most ${this.maxAsyncPerClient} asynchronous calls of one client run at once; retry when one has finished.`,
        headers: { "Retry-After": "5" },
      });
    }
    if (this.asyncRunning >= this.maxAsync) {
      throw new WireError("unavailable", "The server is running as many asynchronous calls as it can", {
        developerMessage: `At most ${this.maxAsync} asynchronous calls run at once; retry later.`,
        headers: { "Retry-After": "5" },
      });
    }
  }

  /** The response for what a tool returned: its value as JSON, checked against the tool's output_schema. */
  private settle(registered: RegisteredTool, call: { callId: string; started: number }, result: unknown): RunResult {
    const { definition } = registered;
    let value: unknown = null;
    if (definition.output_schema !== null && result !== undefined) {
      try {
        // A copy that is JSON: what the client will read (a string or a finite number already is).
        value =
          typeof result === "string" ||
          (typeof result === "number" && Number.isFinite(result)) ||
          typeof result === "boolean"
            ? result
            : JSON.parse(JSON.stringify(result) ?? "null");
      } catch (error) {
        return failedWith(
          call,
          {
            message: "The tool returned an invalid result",
            developer_message: `The result is not JSON: ${error instanceof Error ? error.message : String(error)}`,
            can_retry: false,
          },
          "invalid_output",
        );
      }
    }
    const errors = definition.output_schema === null ? undefined : registered.output?.errors(value);
    if (errors) {
      const details = formatSchemaErrors(errors, { root: "(value)", max: 10 });
      return failedWith(
        call,
        {
          message: "The tool returned an invalid result",
          developer_message: `The result does not match the tool's output_schema: ${details}`,
          can_retry: false,
        },
        "invalid_output",
      );
    }
    return {
      response: { call_id: call.callId, duration: roundMs(performance.now() - call.started), success: true, value },
      outcome: "success",
    };
  }
}

/** The progress function of a call nobody can follow (no call_id): reports go nowhere. */
const ignoreProgress = (_update: CallProgress): void => {};

/**
 * The context a tool's run receives. A class, not an object literal with getters: V8 keeps a literal's accessor
 * pair outside the young generation, so its closures (and the call they hold) survived every scavenge and were
 * promoted, a third of the node adapter's CPU per call (bench/results/notes.md, issue 21).
 */
class RunContext implements ToolContext {
  readonly callId: string;
  readonly traceId: string | undefined;
  readonly userId: string | undefined;
  readonly tokens: Record<string, string>;
  readonly secrets: Record<string, string>;
  readonly extra: Record<string, unknown>;
  // Made when the tool first reads its signal or logger: most tools never do, and each costs per call.
  #controller: AbortController | undefined;
  #stopReason: Error | undefined;
  #toolLogger: ToolLogger | undefined;
  readonly #logger: CoreLogger;
  readonly #toolId: string;
  readonly #task: LocalTask | undefined;
  #progress: ((update: CallProgress) => void) | undefined;

  constructor(
    call: {
      callId: string;
      traceId: string | undefined;
      userId: string | undefined;
      tokens: Record<string, string>;
      secrets: Record<string, string>;
      extra: Record<string, unknown>;
      task?: LocalTask | undefined;
    },
    logger: CoreLogger,
    toolId: string,
  ) {
    this.callId = call.callId;
    this.traceId = call.traceId;
    this.userId = call.userId;
    this.tokens = call.tokens;
    this.secrets = call.secrets;
    this.extra = call.extra;
    this.#logger = logger;
    this.#toolId = toolId;
    this.#task = call.task;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#stopReason) {
        this.#controller.abort(this.#stopReason);
      }
    }
    return this.#controller.signal;
  }

  get logger(): ToolLogger {
    if (!this.#toolLogger) {
      this.#toolLogger = this.#logger.child({ tool_id: this.#toolId, call_id: this.callId });
    }
    return this.#toolLogger;
  }

  /**
   * Reports how far the call has got (the tasks extension, docs/protocol.md 9.3). Kept for a call with a call_id
   * (every asynchronous one has one), a few times a second at most and only when `progress` increases; a no-op
   * for any other call.
   */
  get progress(): (update: CallProgress) => void {
    // A function of its own, made on first read: a tool may take it out of the context (`{ progress }`).
    if (!this.#progress) {
      const task = this.#task;
      this.#progress = task ? (update) => task.report(update) : ignoreProgress;
    }
    return this.#progress;
  }

  /** Aborts the signal (now, or when the tool first reads it) with the reason the run was given up. */
  stop(reason: Error): void {
    this.#stopReason = reason;
    this.#controller?.abort(reason);
  }
}
