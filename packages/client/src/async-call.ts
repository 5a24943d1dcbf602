/** A call the server runs as a task (docs/protocol.md 9.3), followed to its end: progress, the result, cancel. */
import type { CallProgress, CallStatus, CallToolResponse } from "@otc/types";
import { answers } from "./answers.js";
import { OxpProtocolError } from "./errors.js";
import { type ClientClock, sleepOn } from "./internal/clock.js";
import { EventStreamParser } from "./internal/event-stream.js";

/** Options of {@link OxpClient.callToolAsync}. */
export interface AsyncCallOptions {
  /**
   * Stops waiting here: the call's promises reject with the signal's reason, `progress` throws it, and an
   * open event stream is closed. The call runs on at the server unless `cancelOnAbort` is set.
   */
  signal?: AbortSignal;
  /** When `signal` aborts before the call ended, also cancel it at the server (a DELETE, best effort). Default false. */
  cancelOnAbort?: boolean;
  /**
   * `Prefer: wait=N`: how long the server may hold the first answer for the call to end, in whole seconds
   * (0 to 30). A call that ends in time is answered in full, and its handle is settled at once. Default 0.
   */
  waitSeconds?: number;
  /**
   * Where the handle follows the call by long polls of its status: how long each asks the server to hold its
   * answer (`Prefer: wait=N`), in whole seconds (0 to 30; 0 asks for an answer at once). Default 30, the most
   * the protocol allows.
   */
  pollWaitSeconds?: number;
  /**
   * Told how the handle follows the call, each time that changes: `"events"` as it starts reading the event
   * stream, `"polling"` (with why, in words) as long polls take over. A UI shows it; nothing depends on it.
   *
   * @example
   * const call = await client.callToolAsync(request, { onFollow: (mode, why) => console.log(mode, why ?? "") });
   */
  onFollow?: (mode: FollowMode, why?: string) => void;
}

/** How a handle follows its call: over the call's event stream, or by long polls of its status. */
export type FollowMode = "events" | "polling";

/** Options of {@link AsyncCall.status} and {@link OxpClient.callStatus}. */
export interface CallStatusOptions {
  /** Aborts the request. */
  signal?: AbortSignal;
  /**
   * `Prefer: wait=N` (a long poll): the server answers when the status or the progress of a running call changes,
   * or after this many whole seconds (0 to 30). Default: answered at once.
   */
  waitSeconds?: number;
}

/**
 * A call started with {@link OxpClient.callToolAsync} (or found again with {@link OxpClient.followCall}).
 *
 * @example
 * const call = await client.callToolAsync({ tool_id: "System.Sleep", input: { ms: 2000 } });
 * for await (const { progress, total } of call.progress) console.log(`${progress} of ${total}`);
 * const response = await call.result();
 */
export interface AsyncCall {
  /** The call's `call_id`. */
  readonly callId: string;
  /**
   * True when the server runs the call as a task (it answered 202); false when the call was answered in its
   * own request: it ended within `waitSeconds`, or the server does not offer the tasks extension. A handle that
   * is not a task is settled: `result()` resolves at once, `progress` yields nothing, and `status()` and
   * `cancel()` answer its completed status without asking the server.
   */
  readonly task: boolean;
  /** GET the call's status (with `waitSeconds`, a long poll). A status that has ended settles the handle too. */
  status(options?: CallStatusOptions): Promise<CallStatus>;
  /**
   * The call's progress, in order, until it ends: over its event stream (`GET /tools/calls/{id}/events`),
   * reopened after the last event seen when it drops, or by long polls of its status where the server does not
   * give a stream (429: too many open; an older server). Each iteration sees the latest progress known when it
   * starts, then each newer one; one that falls behind gets the latest, never a backlog. It ends when the call
   * ends and throws what `result()` rejects with.
   */
  readonly progress: AsyncIterable<CallProgress>;
  /**
   * The call's CallToolResponse, read from what is following the call (the event stream or the long polls,
   * started here if `progress` has not started them). A tool failure with `can_retry: true` is retried as
   * `callTool` retries it (the call posted again with its call_id, up to `retry.maxAttempts`).
   */
  result(): Promise<CallToolResponse>;
  /**
   * DELETE the call: the server fires its tool's AbortSignal and ends it `cancelled`. Resolves to the final
   * status (a call that had ended keeps its own), and settles the handle with its result. Works after the
   * handle's signal aborted; `options.signal` aborts this request only.
   */
  cancel(options?: { signal?: AbortSignal }): Promise<CallStatus>;
}

/** What a call's handle asks the server, each request made by the client with its headers, retries and limits. */
export interface TaskRequests {
  /** GET the status (a long poll with `waitSeconds`); retried as the client retries. */
  status(callId: string, options: CallStatusOptions): Promise<CallStatus>;
  /** DELETE the call; retried as the client retries. */
  cancel(callId: string, signal: AbortSignal | undefined): Promise<CallStatus>;
  /** GET the event stream after `lastEventId`: the answer whatever its status, its body not read. One attempt. */
  events(callId: string, lastEventId: string | undefined, signal: AbortSignal): Promise<Response>;
  /** POST the call again after a retryable failure: a 202's status or the response; absent for a call found by id. */
  repost?(signal: AbortSignal): Promise<{ accepted: CallStatus } | { response: CallToolResponse }>;
}

/** How a handle follows its call: the client's limits, retries and requests. */
export interface FollowOptions {
  requests: TaskRequests;
  /** The first answer about the call (the 202's status, or the status read by followCall). */
  initial: CallStatus;
  signal: AbortSignal | undefined;
  cancelOnAbort: boolean;
  /** Attempts in all for one thing (opening a stream, a retryable failure); the client's `retry.maxAttempts`. */
  maxAttempts: number;
  /** The wait before attempt n + 1, in milliseconds. */
  backoff(attempt: number): number;
  /** The longest wait between attempts, in milliseconds. */
  maxDelayMs: number;
  /** The clock of the waits between attempts and between polls (the client's `clock`). */
  clock: ClientClock;
  /** How long a stream may say nothing (not even the comments that keep it open) before it counts as dropped. */
  idleMs: number;
  /** The most characters of one event the client holds. */
  maxEventChars: number;
  /** How long each long poll asks the server to hold its answer, in seconds. */
  pollWaitSeconds: number;
  /** Told how the call is followed, each time that changes. */
  onFollow: ((mode: FollowMode, why?: string) => void) | undefined;
}

/** The least time between two long polls that brought nothing new (a server that does not hold them). */
const MIN_POLL_INTERVAL_MS = 1_000;

/** The response of a status that has ended; a status that says it ended without one breaks the spec. */
function resultOf(status: CallStatus): CallToolResponse {
  if (status.result === undefined) {
    throw new OxpProtocolError(`The call's status is ${status.status} but carries no result`, 200);
  }
  return status.result;
}

/** A JSON event's data, checked against its schema. */
function eventData<T>(event: { event: string; data: string }, check: (typeof answers)[keyof typeof answers]): T {
  let value: unknown;
  try {
    value = JSON.parse(event.data);
  } catch {
    throw new OxpProtocolError(`A ${event.event} event's data is not JSON`, 200, event.data.slice(0, 200));
  }
  if (!check(value)) {
    throw new OxpProtocolError(`A ${event.event} event's data breaks its schema`, 200, check.why());
  }
  return value as T;
}

/** A handle settled from the start: the call was answered in its own request. */
export function settledCall(callId: string, response: CallToolResponse): AsyncCall {
  const status: CallStatus = { call_id: callId, status: "completed", result: response };
  return {
    callId,
    task: false,
    status: async () => structuredClone(status),
    progress: {
      [Symbol.asyncIterator]: () => ({ next: async () => ({ done: true, value: undefined }) }),
    },
    result: async () => response,
    cancel: async () => structuredClone(status),
  };
}

/** One reader of `progress`: the progress it has not taken yet (only the latest), and how to wake it. */
interface Reader {
  pending: CallProgress | undefined;
  wake: (() => void) | undefined;
}

/** A handle that follows a running task, started by the first reader of `progress` or `result()`. */
export function followedCall(options: FollowOptions): AsyncCall {
  return new CallFollower(options).handle;
}

class CallFollower {
  readonly handle: AsyncCall;
  readonly #options: FollowOptions;
  readonly #callId: string;
  /** Stops the following (its requests, its stream) once the call is settled or the caller aborted. */
  readonly #stop = new AbortController();
  readonly #signal: AbortSignal;
  readonly #outcome: Promise<CallToolResponse>;
  #resolve!: (response: CallToolResponse) => void;
  #reject!: (error: unknown) => void;
  /** How the call ended, once it did (or why following it failed). */
  #settled: { response: CallToolResponse } | { error: unknown } | undefined;
  #started = false;
  #latest: CallProgress | undefined;
  readonly #readers = new Set<Reader>();
  #lastEventId: string | undefined;
  #useStream = true;
  readonly #onAbort: () => void;

  constructor(options: FollowOptions) {
    this.#options = options;
    this.#callId = options.initial.call_id;
    this.#signal = options.signal ? AbortSignal.any([options.signal, this.#stop.signal]) : this.#stop.signal;
    this.#outcome = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // Rejections reach whoever awaits result(); the handle itself never leaves one unhandled.
    this.#outcome.catch(() => undefined);
    this.#latest = options.initial.progress;
    this.#onAbort = () => {
      const settledBefore = this.#settled !== undefined;
      this.#settle({ error: options.signal?.reason });
      if (options.cancelOnAbort && !settledBefore) {
        // Best effort, on a signal of its own: the caller's has aborted.
        options.requests.cancel(this.#callId, AbortSignal.timeout(10_000)).catch(() => undefined);
      }
    };
    if (options.initial.status !== "running") {
      this.#settle({ response: resultOf(options.initial) });
    } else if (options.signal?.aborted) {
      this.#onAbort();
    } else {
      options.signal?.addEventListener("abort", this.#onAbort, { once: true });
    }
    this.handle = {
      callId: this.#callId,
      task: true,
      status: (statusOptions = {}) => this.#status(statusOptions),
      progress: { [Symbol.asyncIterator]: () => this.#iterate() },
      result: () => {
        this.#start();
        return this.#outcome;
      },
      cancel: (cancelOptions = {}) => this.#cancel(cancelOptions.signal),
    };
  }

  async #status(statusOptions: CallStatusOptions): Promise<CallStatus> {
    const status = await this.#options.requests.status(this.#callId, statusOptions);
    if (status.status !== "running") {
      this.#settle({ response: resultOf(status) });
    } else if (status.progress) {
      this.#emit(status.progress);
    }
    return status;
  }

  async #cancel(signal: AbortSignal | undefined): Promise<CallStatus> {
    const status = await this.#options.requests.cancel(this.#callId, signal);
    if (status.status !== "running") {
      this.#settle({ response: resultOf(status) });
    }
    return status;
  }

  /** Settles the handle once: the result for every waiter, the end (or the error) for every reader. */
  #settle(outcome: { response: CallToolResponse } | { error: unknown }) {
    if (this.#settled) {
      return;
    }
    this.#settled = outcome;
    this.#options.signal?.removeEventListener("abort", this.#onAbort);
    this.#stop.abort();
    if ("response" in outcome) {
      this.#resolve(outcome.response);
    } else {
      this.#reject(outcome.error);
    }
    for (const reader of this.#readers) {
      reader.wake?.();
    }
  }

  /** Tells the readers of a newer progress; an older or equal one (a repeat after a reconnect) is dropped. */
  #emit(progress: CallProgress) {
    if (this.#latest !== undefined && progress.progress <= this.#latest.progress) {
      return;
    }
    this.#latest = progress;
    for (const reader of this.#readers) {
      reader.pending = progress;
      reader.wake?.();
    }
  }

  #iterate(): AsyncIterator<CallProgress> {
    const reader: Reader = { pending: this.#settled ? undefined : this.#latest, wake: undefined };
    this.#readers.add(reader);
    this.#start();
    const done = (): IteratorReturnResult<undefined> => {
      this.#readers.delete(reader);
      return { done: true, value: undefined };
    };
    return {
      next: async () => {
        for (;;) {
          const pending = reader.pending;
          if (pending) {
            reader.pending = undefined;
            return { done: false, value: pending };
          }
          const settled = this.#settled;
          if (settled) {
            if ("error" in settled) {
              this.#readers.delete(reader);
              throw settled.error;
            }
            return done();
          }
          await new Promise<void>((resolve) => {
            reader.wake = resolve;
          });
          reader.wake = undefined;
        }
      },
      return: async () => done(),
    };
  }

  #start() {
    if (this.#started || this.#settled) {
      return;
    }
    this.#started = true;
    this.#run().then(
      (response) => this.#settle({ response }),
      (error: unknown) => this.#settle({ error: this.#options.signal?.aborted ? this.#options.signal.reason : error }),
    );
  }

  /** Follows the call to its response, posting it again after a retryable failure while attempts remain. */
  async #run(): Promise<CallToolResponse> {
    const { repost } = this.#options.requests;
    for (let attempt = 1; ; attempt++) {
      const response = await this.#follow();
      if (response.success || response.error.can_retry !== true || !repost || attempt >= this.#options.maxAttempts) {
        return response;
      }
      const waitMs = response.error.retry_after_ms ?? this.#options.backoff(attempt);
      await sleepOn(this.#options.clock, Math.min(this.#options.maxDelayMs, waitMs), this.#signal);
      const again = await repost(this.#signal);
      if ("response" in again) {
        return again.response;
      }
      if (again.accepted.status !== "running") {
        return resultOf(again.accepted);
      }
      // A new run: its progress and its events start again.
      this.#latest = again.accepted.progress;
      this.#lastEventId = undefined;
      this.#useStream = true;
    }
  }

  async #follow(): Promise<CallToolResponse> {
    if (this.#useStream) {
      this.#options.onFollow?.("events");
      const followed = await this.#followStream();
      if (typeof followed !== "string") {
        return followed.response;
      }
      this.#useStream = false;
      this.#options.onFollow?.("polling", followed);
    }
    return this.#followPolls();
  }

  /**
   * Reads the event stream to the result, reopening it after the last event seen when it drops or goes quiet.
   * Why it gave up instead, when the server gives no stream (any answer but a 200 text/event-stream), or when
   * it keeps failing to deliver one (`maxAttempts` openings in a row without an event): long polls take over,
   * and throw what the server answers.
   */
  async #followStream(): Promise<{ response: CallToolResponse } | string> {
    let failures = 0;
    for (;;) {
      if (failures > 0) {
        await sleepOn(
          this.#options.clock,
          Math.min(this.#options.maxDelayMs, this.#options.backoff(failures)),
          this.#signal,
        );
      }
      const outcome = await this.#readStream();
      if ("response" in outcome) {
        return outcome;
      }
      if ("refused" in outcome) {
        return outcome.refused;
      }
      failures = outcome.delivered ? 0 : failures + 1;
      if (failures >= this.#options.maxAttempts) {
        return failures === 1 ? outcome.why : `${outcome.why} (${failures} times in a row)`;
      }
    }
  }

  /**
   * Opens the stream once and reads it: the result; why it was refused; or, when it ended without the result,
   * whether it delivered an event first and why it ended.
   */
  async #readStream(): Promise<
    { response: CallToolResponse } | { refused: string } | { delivered: boolean; why: string }
  > {
    const { idleMs, maxEventChars, requests } = this.#options;
    const connection = new AbortController();
    const signal = AbortSignal.any([this.#signal, connection.signal]);
    let idle: ReturnType<typeof setTimeout> | undefined;
    // Until headers come and between chunks: a stream that says nothing for idleMs is dead, whatever TCP thinks.
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => connection.abort(), idleMs);
    };
    let delivered = false;
    try {
      arm();
      const response = await requests.events(this.#callId, this.#lastEventId, signal);
      const type = response.headers.get("content-type") ?? "";
      if (response.status !== 200 || !/^text\/event-stream\b/i.test(type) || !response.body) {
        await response.body?.cancel().catch(() => undefined);
        return { refused: `the event stream was answered ${response.status}${type ? ` ${type}` : ""}` };
      }
      const parser = new EventStreamParser(maxEventChars);
      parser.lastEventId = this.#lastEventId;
      const decoder = new TextDecoder();
      const reader = response.body.getReader();
      for (;;) {
        arm();
        const chunk = await reader.read();
        if (chunk.done) {
          return { delivered, why: "the event stream ended before the call's result" };
        }
        for (const event of parser.push(decoder.decode(chunk.value, { stream: true }))) {
          delivered = true;
          if (event.event === "progress") {
            this.#emit(eventData<CallProgress>(event, answers.callProgress));
          } else if (event.event === "result") {
            return { response: eventData<CallToolResponse>(event, answers.callToolResponse) };
          }
          this.#lastEventId = event.id;
        }
      }
    } catch (error) {
      // The caller's abort, an answer that breaks the spec: thrown. A dropped or quiet stream: reopened.
      if (this.#signal.aborted || error instanceof OxpProtocolError) {
        throw this.#signal.aborted ? this.#signal.reason : error;
      }
      const why = connection.signal.aborted
        ? "the event stream said nothing for too long"
        : `the event stream failed: ${error instanceof Error ? error.message : String(error)}`;
      return { delivered, why };
    } finally {
      clearTimeout(idle);
      connection.abort();
    }
  }

  /** Long polls of the status until the call ends; each progress that changed is told to the readers. */
  async #followPolls(): Promise<CallToolResponse> {
    for (;;) {
      const asked = this.#options.clock.now();
      const before = this.#latest;
      const status = await this.#options.requests.status(this.#callId, {
        signal: this.#signal,
        waitSeconds: this.#options.pollWaitSeconds,
      });
      if (status.status !== "running") {
        return resultOf(status);
      }
      if (status.progress) {
        this.#emit(status.progress);
      }
      if (this.#latest === before && this.#options.clock.now() - asked < MIN_POLL_INTERVAL_MS) {
        await sleepOn(this.#options.clock, MIN_POLL_INTERVAL_MS, this.#signal);
      }
    }
  }
}
