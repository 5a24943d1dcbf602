/** What a call tells as it ends: its one log line (through a {@link CallLineSink}) and the observer's hooks (metrics, traces). */
import type { CallToolRequest, CallToolResponse } from "@otc/types";
import { shorten, WireError } from "./errors.js";
import type { ToolLogger } from "./tool.js";

/** A logger the core writes one line per call to (pino's shape): a pino logger, or {@link consoleLogger}'s. */
export interface CoreLogger extends ToolLogger {
  child(bindings: Record<string, unknown>): CoreLogger;
  /** Whether lines of `level` are written; the call line is not even built when `info` is off. Default: all are. */
  isLevelEnabled?(level: string): boolean;
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
 * Where each call's info line goes. By default the logger's `info(line, "tool call")`; the HTTP adapters pass the
 * sink of the pino logger they made (`callLineSink` in http/logger.ts), which writes the same line field by field:
 * the line is a server's hottest write, and that costs ~3.5 us less CPU per call under load (bench/results/notes.md).
 */
export interface CallLineSink {
  /** Whether lines are written at all: the line is not even built otherwise. Read once per call. */
  enabled(): boolean;
  write(line: CallLogLine): void;
}

/** The sink that writes call lines through `logger.info`, when its info level is on. */
export function loggerCallLineSink(logger: CoreLogger): CallLineSink {
  return {
    enabled: () => logger !== silentLogger && logger.isLevelEnabled?.("info") !== false,
    write: (line) => logger.info(line, "tool call"),
  };
}

/** Request-controlled strings are cut to this in log lines, so a client cannot inflate the log. */
export const LOGGED_FIELD_MAX = 128;

/** A thrown value as a log field: its name and message, never its stack's frames of request data. */
export const describeCause = (error: unknown) =>
  error instanceof Error ? { name: error.name, message: error.message } : { message: String(error) };

/** A duration in milliseconds to the microsecond, as answers and lines carry it. */
export const roundMs = (ms: number) => Math.round(ms * 1000) / 1000;

/** What {@link CallReport} reads of a call. */
export interface ReportedCall {
  readonly request: CallToolRequest;
  /** The call's own hook, told after the observer (e.g. to annotate its trace span). */
  readonly meta: { readonly onEnd?: ((event: CallEvent) => void) | undefined };
  /** When the core took the call (performance.now()). */
  readonly started: number;
  readonly traceId: string | undefined;
}

/** Tells each call's start and end, once: to the observer, the call's own `onEnd`, and the call line's sink. */
export class CallReport {
  constructor(
    private readonly logger: CoreLogger,
    private readonly observer: CallObserver | undefined,
    private readonly sink: CallLineSink,
  ) {}

  started(): void {
    if (this.observer?.callStarted) {
      this.notify(this.observer.callStarted, this.observer);
    }
  }

  /** A provider started an authorization challenge: the observer learns the provider, a bounded set. */
  challengeStarted(providerId: string): void {
    if (this.observer?.challengeStarted) {
      this.notify(this.observer.challengeStarted, this.observer, providerId);
    }
  }

  /** A call refused before or instead of its run (`toolId` once resolved): one line, one event. */
  refused(call: ReportedCall, toolId: string | undefined, error: unknown): void {
    const { request, traceId } = call;
    // Store and provider faults arrive as 503s; anything else here is a bug of the server's: a 500, never a 503.
    const status = error instanceof WireError ? error.status : 500;
    const durationMs = performance.now() - call.started;
    this.ended({ toolId, outcome: "rejected", status, durationMs, traceId }, call.meta.onEnd);
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
      if (this.sink.enabled()) {
        this.sink.write(line);
      }
    } else {
      const cause = error instanceof WireError ? error.details.cause : error;
      this.logger.error({ ...line, err: describeCause(cause) }, "tool call");
    }
  }

  /** A call that ran (or was replayed): one line, one event. */
  finished(call: ReportedCall, toolId: string, response: CallToolResponse, outcome: CallOutcome): void {
    const { request, traceId } = call;
    const durationMs = performance.now() - call.started;
    const { onEnd } = call.meta;
    if (this.observer?.callEnded || onEnd) {
      this.ended({ toolId, outcome, status: 200, durationMs, traceId }, onEnd);
    }
    if (this.sink.enabled()) {
      this.sink.write({
        tool_id: toolId,
        requested_tool_id: shorten(request.tool_id, LOGGED_FIELD_MAX),
        call_id: shorten(response.call_id, LOGGED_FIELD_MAX),
        trace_id: traceId === undefined ? undefined : shorten(traceId, LOGGED_FIELD_MAX),
        outcome,
        duration_ms: roundMs(durationMs),
      });
    }
  }

  private ended(event: CallEvent, onEnd: ((event: CallEvent) => void) | undefined): void {
    if (this.observer?.callEnded) {
      this.notify(this.observer.callEnded, this.observer, event);
    }
    if (onEnd) {
      this.notify(onEnd, undefined, event);
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
}
