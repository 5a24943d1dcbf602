/** A call runs once per (principal, call_id) (docs/protocol.md 3.7): the claim, the wait for a duplicate, the replay, the hold on an abandoned run. */
import type { CallToolRequest, CallToolResponse } from "@otc/types";
import { type CoreLogger, describeCause, LOGGED_FIELD_MAX } from "./call-log.js";
import type { CallMeta } from "./call-meta.js";
import { type Clock, type ClockTimer, unrefTimer } from "./clock.js";
import { shorten, WireError } from "./errors.js";
import type { OrPromise } from "./fast-path.js";
import { canonicalJson, sha256Base64url } from "./fingerprint.js";
import {
  type IdempotencyEntry,
  type IdempotencyKey,
  type IdempotencyStore,
  IdempotencyStoreFullError,
} from "./idempotency-store.js";
import { orUnavailable, sharedStateUnavailable } from "./shared-state.js";
import { recordKey, type TaskBoard } from "./task-board.js";
import type { LocalTask } from "./tasks.js";
import type { RegisteredTool } from "./tool-registry.js";
import type { RunResult } from "./tool-run.js";

/** A call resolved and checked, ready to run once per (principal, call_id). */
export interface PreparedCall {
  request: CallToolRequest;
  registered: RegisteredTool;
  meta: CallMeta;
  input: Record<string, unknown>;
  run: (callId: string, task?: LocalTask) => OrPromise<RunResult>;
  /** Set for an asynchronous call (the tasks extension): told once the call is accepted. */
  async?: AsyncCall;
}

/** What the core is told of an asynchronous call: when it is accepted (its checks passed, its run started or joined). */
export interface AsyncCall {
  accepted(): void;
}

/** How long an abandoned run's hold on its call_id lasts unless renewed (it is, while this process runs it). */
const ABANDONED_HOLD_MS = 60_000;

/** The status of a call whose run failed inside the server (its call_id was released): it may run again. */
function lostRun(callId: string): CallToolResponse {
  return {
    call_id: callId,
    duration: 0,
    success: false,
    error: { message: "The tool failed to run", developer_message: "The server lost the run.", can_retry: true },
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

/** Runs each call once per (principal, call_id): replays, waits for, or refuses duplicates. */
export class IdempotencyGate {
  /** Calls running in this process, by (principal, call_id), so a duplicate can wait for the first. */
  private readonly running = new Map<string, Promise<CallToolResponse>>();

  constructor(
    private readonly options: {
      store: IdempotencyStore;
      board: TaskBoard;
      clock: Clock;
      logger: CoreLogger;
      retentionMs: number;
      timeLimitOf: (registered: RegisteredTool, async: boolean) => number;
    },
  ) {}

  /** Runs the call: at once without a call_id (a synchronous tool then answers without a promise), else once per key. */
  once(call: PreparedCall): OrPromise<RunResult> {
    const callId = call.request.call_id;
    if (callId === undefined) {
      return call.run(crypto.randomUUID());
    }
    return this.keyed(call, callId);
  }

  /** {@link once} for a call that carries a call_id. */
  private async keyed(call: PreparedCall, callId: string): Promise<RunResult> {
    const { request, registered, meta, run } = call;
    const { store, board, retentionMs } = this.options;
    const key: IdempotencyKey = { principal: meta.principal, callId };
    const fingerprint = sha256Base64url(
      canonicalJson([registered.definition.id, call.input, request.context?.user_id || null]),
    );
    const timeoutMs = this.options.timeLimitOf(registered, call.async !== undefined);
    let held: IdempotencyEntry | undefined;
    try {
      // A pending claim lapses if this instance dies, so a retry elsewhere is not blocked for a day.
      held = await store.claim(key, fingerprint, timeoutMs + 5_000);
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
      return this.once(call);
    }
    const { task, end } = board.open(key, fingerprint, call.async !== undefined);
    // Through the Promise constructor: a run that throws at once still releases its claim (below). After the store's
    // answer, the run's synchronous work goes through the adapter's afterWait.
    const pending = new Promise<RunResult>((resolve) => {
      const start = () => {
        resolve(run(callId, task));
        // Accepted only once the run started: a bound on running calls (429, 503) is answered as such, never 202.
        call.async?.accepted();
      };
      if (meta.afterWait) {
        meta.afterWait(start);
      } else {
        start();
      }
    }).then(async (result) => {
      const { response, unsettled } = result;
      const cancelled = result.outcome === "cancelled";
      try {
        if (unsettled && !cancelled) {
          this.holdWhileUnsettled(key, fingerprint, unsettled);
        } else if (response.success || response.error.can_retry !== true || task.async) {
          // An asynchronous call's retryable failure is kept for its status, but a new call with its key runs again.
          const rerunnable = !response.success && response.error.can_retry === true;
          const complete = () =>
            store.complete(
              key,
              { fingerprint, response, ...(cancelled ? { cancelled } : {}), ...(rerunnable ? { rerunnable } : {}) },
              retentionMs,
            );
          await (meta.afterWait ? meta.afterWait(complete) : complete());
        } else {
          // Not kept (a retry must run again), but duplicates waiting on other instances share it.
          await store.release(key, response);
        }
      } catch (error) {
        // The tool ran: its answer goes out. Unrecorded, the claim lapses and a retry runs the call again.
        this.options.logger.error(
          { call_id: shorten(callId, LOGGED_FIELD_MAX), err: describeCause(error) },
          "could not record the call's response in the idempotency store",
        );
      }
      end({ response, cancelled });
      return result;
    });
    const id = recordKey(key);
    const shared = pending.then((result) => result.response);
    this.running.set(id, shared);
    shared
      .catch(() => {
        store.release(key).catch(() => {});
        end({ response: lostRun(callId), cancelled: false });
      })
      .finally(() => this.running.delete(id));
    return pending;
  }

  /**
   * Keeps `key` held while a run abandoned at its time limit goes on (its tool ignored the signal), so a
   * retry is told to wait instead of starting a second concurrent run; frees it once the run settles.
   */
  private holdWhileUnsettled(key: IdempotencyKey, fingerprint: string, unsettled: Promise<unknown>): void {
    const { store, clock, logger } = this.options;
    let settled = false;
    let timer: ClockTimer | undefined;
    const later = (ms: number) => {
      if (settled) {
        return;
      }
      timer = clock.setTimeout(hold, ms);
      unrefTimer(timer);
    };
    // The claim's own lifetime is nearly spent by now: a failed hold is retried within a second, not at the next renewal.
    const hold = () => {
      store.abandon(key, fingerprint, ABANDONED_HOLD_MS).then(
        () => later(ABANDONED_HOLD_MS / 3),
        (error: unknown) => {
          logger.error(
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
        clock.clearTimeout(timer);
        store.release(key).catch(() => {});
      });
    hold();
  }

  /** Waits for the first call holding `key`: in this process directly, elsewhere through the store's own wait. */
  private waitFor(key: IdempotencyKey, fingerprint: string, maxMs: number): Promise<IdempotencyEntry | undefined> {
    const local = this.running.get(recordKey(key));
    if (local) {
      return local.then(
        (response) => ({ fingerprint, response }),
        () => undefined,
      );
    }
    return this.options.store.waitFor(key, fingerprint, maxMs);
  }
}
