/** The protocol core, free of HTTP: a facade over its parts (catalog, call runner, idempotency gate, task board, run limits, call report). */
import type { CallStatus, CallToolRequest, CallToolResponse, ToolListResponse } from "@otc/types";
import {
  type AuthorizationProvider,
  type ChallengeStatus,
  MemoryTokenStore,
  type TokenStore,
} from "./authorization.js";
import {
  type CallLineSink,
  type CallObserver,
  CallReport,
  type CoreLogger,
  loggerCallLineSink,
  silentLogger,
} from "./call-log.js";
import type { CallMeta } from "./call-meta.js";
import { CallRunner } from "./call-runner.js";
import type { ToolkitDescriptions } from "./catalog-search.js";
import { type Clock, type ClockTimer, systemClock } from "./clock.js";
import { ServerConfigError, WireError } from "./errors.js";
import { type OrPromise, settledAsPromise } from "./fast-path.js";
import { IdempotencyGate } from "./idempotency-gate.js";
import { type IdempotencyStore, isTaskStore, MemoryIdempotencyStore, type TaskStore } from "./idempotency-store.js";
import type { InputValidatorChoice } from "./input-validation.js";
import { positiveInteger, RunLimits } from "./run-limits.js";
import { orUnavailable } from "./shared-state.js";
import { type CallState, TaskBoard } from "./task-board.js";
import type { Tool } from "./tool.js";
import { ToolCatalog, type ToolList } from "./tool-catalog.js";
import type { ListForm } from "./tool-definitions.js";
import { ToolRegistry } from "./tool-registry.js";
import { ToolRunner } from "./tool-run.js";

export {
  type CallEvent,
  type CallLineSink,
  type CallLogLine,
  type CallObserver,
  type CallOutcome,
  type CoreLogger,
  silentLogger,
} from "./call-log.js";
export type { CallMeta } from "./call-meta.js";
export { CHALLENGE_CHECK_PATH } from "./call-runner.js";
export { InProcessTaskStore } from "./task-board.js";
export type { ToolList } from "./tool-catalog.js";

/** Options of {@link OxpCore}. */
export interface OxpCoreOptions {
  tools: readonly Tool[];
  /**
   * What each toolkit is for, by toolkit name, as the search extension's `GET /toolkits` lists it (docs/protocol.md
   * 9.5). A toolkit described here must have tools.
   */
  toolkits?: ToolkitDescriptions;
  /**
   * What validates tool inputs and outputs: `ajvValidators()` from `@otc/server/validation/ajv` (compiles each schema
   * to code: the fastest) or `cfworkerValidators()` from `@otc/server/validation/cfworker` (@cfworker/json-schema
   * interprets schemas: for runtimes that refuse code generated at run time). Default: the runtime's, chosen by
   * export condition (cfworker under `workerd`, `worker`, `edge-light` and `browser`; Ajv elsewhere), so that a
   * runtime loads only its own. Both answer invalid input with the same `parameter_errors` keys and kinds.
   */
  inputValidator?: InputValidatorChoice;
  /** Time limit for a tool that sets none, in milliseconds. Default 30,000. */
  defaultTimeoutMs?: number;
  /** Where call_id records live. Default: a {@link MemoryIdempotencyStore} with its default bounds. */
  idempotencyStore?: IdempotencyStore;
  /**
   * Where the tasks extension's shared state lives (progress, leases, cancels, changes: docs/protocol.md 9.3), for
   * calls run on one instance to be read, followed and cancelled through another. Default: the `idempotencyStore`,
   * which must then be a {@link TaskStore} too (the memory and Redis stores are); beside a store of your own that no
   * other instance shares, an {@link InProcessTaskStore}.
   */
  taskStore?: TaskStore;
  /** How long a finished call's response is kept for its call_id, in milliseconds. Default 24 h. */
  idempotencyRetentionMs?: number;
  /** Providers that can start authorization challenges, by their id. */
  authorizationProviders?: readonly AuthorizationProvider[];
  /** Tokens the server holds for (user, provider). Default: in memory. */
  tokenStore?: TokenStore;
  /** Secret values the server holds, by id; given to tools that require them when a call sends none. */
  secrets?: Readonly<Record<string, string>>;
  logger?: CoreLogger;
  /** Where each call's info line goes (see {@link CallLineSink}). Default: the logger's `info`. */
  callLine?: CallLineSink;
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

const DAY_MS = 24 * 60 * 60 * 1000;

/** A positive number option, or a {@link ServerConfigError} naming it. */
function positive(name: string, value: number): number {
  if (!(value > 0)) {
    throw new ServerConfigError(`${name} must be a positive number`);
  }
  return value;
}

/** The providers by id, each id checked: it starts every challenge id, and names the provider of a check_url. */
function providerMap(providers: readonly AuthorizationProvider[]): ReadonlyMap<string, AuthorizationProvider> {
  const byId = new Map<string, AuthorizationProvider>();
  for (const provider of providers) {
    if (!/^[A-Za-z0-9_-]+$/.test(provider.id)) {
      throw new ServerConfigError(`Authorization provider id '${provider.id}' must be letters, digits, '_' or '-'`);
    }
    if (byId.has(provider.id)) {
      throw new ServerConfigError(`Two authorization providers have the id '${provider.id}'`);
    }
    byId.set(provider.id, provider);
  }
  return byId;
}

/**
 * The protocol core, free of HTTP: plain data in, plain data (or a thrown {@link WireError}) out. Each job is a part
 * of its own (ARCHITECTURE.md): the {@link CallRunner} takes a call through its steps, the {@link IdempotencyGate}
 * runs it once per call_id, the {@link TaskBoard} answers for calls with a call_id on any instance, {@link RunLimits}
 * bounds the runs, the {@link CallReport} logs and observes each call once.
 */
export class OxpCore {
  readonly registry: ToolRegistry;
  /** The catalog routes' answers: the lists and their ETags, the lists a token's scopes allow, the search. */
  readonly catalog: ToolCatalog;
  /** The clock the core's time rules follow (see {@link OxpCoreOptions.clock}). */
  readonly clock: Clock;
  private readonly providers: ReadonlyMap<string, AuthorizationProvider>;
  private readonly runner: ToolRunner;
  private readonly calls: CallRunner;
  private readonly board: TaskBoard;
  constructor(options: OxpCoreOptions) {
    this.registry = new ToolRegistry(options.tools, options.inputValidator);
    this.catalog = new ToolCatalog(this.registry, options.toolkits);
    const clock = options.clock ?? systemClock;
    this.clock = clock;
    const logger = options.logger ?? silentLogger;
    const records = options.idempotencyStore ?? new MemoryIdempotencyStore({ clock });
    if (typeof records.waitFor !== "function") {
      throw new ServerConfigError("idempotencyStore must implement waitFor (see IdempotencyStore)");
    }
    const tasks = options.taskStore ?? (options.idempotencyStore ? options.idempotencyStore : records);
    if (!isTaskStore(tasks)) {
      // Refused rather than guessed: tasks followed through another instance would silently never hear of a change.
      throw new ServerConfigError(
        "idempotencyStore is not a TaskStore: give taskStore too (for a store no other instance shares: new InProcessTaskStore())",
      );
    }
    this.providers = providerMap(options.authorizationProviders ?? []);
    const progressPerSecond = positive("progressPerSecond", options.progressPerSecond ?? 4);
    this.board = new TaskBoard({
      records,
      store: tasks,
      clock,
      logger,
      leaseMs: positiveInteger("taskLeaseMs", options.taskLeaseMs ?? 30_000),
      progressPerSecond,
    });
    const limits = new RunLimits({
      maxRunning: positiveInteger("maxRunningCalls", options.maxRunningCalls ?? 1_024),
      maxRunningPerClient: positiveInteger("maxRunningCallsPerClient", options.maxRunningCallsPerClient ?? 128),
      maxAsync: positiveInteger("maxAsyncCalls", options.maxAsyncCalls ?? 10_000),
      maxAsyncPerClient: positiveInteger("maxAsyncCallsPerClient", options.maxAsyncCallsPerClient ?? 100),
    });
    this.runner = new ToolRunner({
      clock,
      logger,
      limits,
      defaultTimeoutMs: positive("defaultTimeoutMs", options.defaultTimeoutMs ?? 30_000),
      asyncTimeoutMs: positive("asyncTimeoutMs", options.asyncTimeoutMs ?? 15 * 60_000),
    });
    const gate = new IdempotencyGate({
      store: records,
      board: this.board,
      clock,
      logger,
      retentionMs: options.idempotencyRetentionMs ?? DAY_MS,
      timeLimitOf: (registered, async) => this.runner.timeLimitOf(registered, async),
    });
    this.calls = new CallRunner({
      registry: this.registry,
      providers: this.providers,
      tokens: options.tokenStore ?? new MemoryTokenStore(),
      secrets: options.secrets ?? {},
      report: new CallReport(logger, options.observer, options.callLine ?? loggerCallLineSink(logger)),
      gate,
      runner: this.runner,
      clock,
    });
  }

  /** The GET /tools body: OXP 1.0's, or with the fields of the extensions asked for (docs/protocol.md 9.2, 9.6). */
  listTools(form: ListForm = {}): ToolListResponse {
    return this.catalog.listTools(form);
  }

  /**
   * The GET /tools body as JSON text with its strong ETag, made once per form ({@link ToolCatalog.toolList}).
   *
   * @example
   * const { body, etag } = await core.toolList();
   */
  toolList(form: ListForm = {}): Promise<ToolList> {
    return this.catalog.toolList(form);
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
    return settledAsPromise(() => this.calls.execute(request, meta, undefined));
  }

  /**
   * {@link call} on the synchronous fast path (fast-path.ts): answers without a promise where nothing waits. What
   * the adapters call. Throws what `call` would reject with.
   */
  callNow(request: CallToolRequest, meta: CallMeta): OrPromise<CallToolResponse> {
    return this.calls.execute(request, meta, undefined);
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
      this.calls.execute({ ...request, call_id: callId }, meta, { accepted: accept }),
    ).then((response) => ({ response }));
    const checked = await Promise.race([outcome, accepted]);
    if (checked) {
      return checked;
    }
    let timer: ClockTimer | undefined;
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
    return (await this.board.state({ principal, callId }))?.status;
  }

  /** {@link callStatus} with the number of its progress (the id of its latest `progress` event): see {@link TaskBoard.state}. */
  callState(principal: string, callId: string): Promise<CallState | undefined> {
    return this.board.state({ principal, callId });
  }

  /** {@link callState} of a call this process runs, at once; undefined for any other. */
  localCallState(principal: string, callId: string): CallState | undefined {
    return this.board.local({ principal, callId });
  }

  /**
   * Calls `listener` on each change of a call (a progress kept, its end), whichever instance runs it; returns the
   * function that stops it.
   */
  watchCall(principal: string, callId: string, listener: () => void): () => void {
    return this.board.watch({ principal, callId }, listener);
  }

  /**
   * Cancels a running call (the tasks extension): its tool's AbortSignal fires and the call ends `cancelled`.
   * A call that has ended is left as it is. Resolves with the call's status once the cancel has taken effect (at
   * most `maxWaitMs` later), or undefined for a call_id unknown to this principal.
   */
  async cancelCall(principal: string, callId: string, maxWaitMs = 5_000): Promise<CallStatus | undefined> {
    return (await this.board.cancel({ principal, callId }, maxWaitMs)) ?? this.callStatus(principal, callId);
  }

  /**
   * Aborts every running call through its AbortSignal and answers each with a retryable failure saying
   * the server is shutting down; resolves once those answers exist. For the end of a graceful drain.
   */
  abortAll(): Promise<void> {
    return this.runner.abortAll();
  }
}
