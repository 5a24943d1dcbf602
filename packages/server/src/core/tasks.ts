/** The tasks extension inside one process (docs/protocol.md 9.3): a running call's progress, its watchers and its cancel. */
import type { CallProgress, CallStatus, CallToolResponse } from "@otc/types";
import { type Clock, type ClockTimer, systemClock, unrefTimer } from "./clock.js";

/** The longest progress message kept; a longer one is cut. */
export const PROGRESS_MESSAGE_MAX = 1_000;

/** The most progress updates kept per second and call, unless the core's options say otherwise. */
export const DEFAULT_PROGRESS_PER_SECOND = 4;

/** The longest a `Prefer: wait=N` holds an answer, in seconds. */
export const MAX_WAIT_SECONDS = 30;

/** How a call ended, as its task keeps it. */
export interface TaskEnd {
  response: CallToolResponse;
  cancelled: boolean;
}

/**
 * Records a kept progress in a shared store; resolves `false` when the store did not keep it. Returns nothing when
 * there is no shared store: the progress is then answered at once.
 */
export type RecordProgress = (progress: CallProgress, seq: number) => Promise<unknown> | undefined;

/**
 * A call this process runs under a call_id: its latest progress (kept at most `perSecond` times a second, only
 * when it increases), the watchers told of each change, and the function that cancels its run.
 *
 * With a shared store (`record`), the task answers only the progress the store has kept: another instance answers
 * the store's copy, so an answer from here ahead of it would make a client reading both see the progress go back.
 */
export class LocalTask {
  /** The latest progress answered: kept, and recorded in the shared store first when there is one. */
  progress: CallProgress | undefined;
  /** How many progress updates were kept up to {@link progress}: the id of the latest `progress` event. */
  seq = 0;
  /** Set once the call has ended; watchers are told, then the task leaves its board. */
  end: TaskEnd | undefined;
  /** Whether the call is asynchronous (its retryable failure is kept for its status). */
  readonly async: boolean;
  readonly #watchers = new Set<() => void>();
  readonly #intervalMs: number;
  #keptAt = Number.NEGATIVE_INFINITY;
  /** The latest progress kept, answered or still being recorded: a report must increase on it. */
  #latest: CallProgress | undefined;
  #kept = 0;
  #pending: CallProgress | undefined;
  #timer: ClockTimer | undefined;
  readonly #clock: Clock;
  #cancel: (() => void) | undefined;
  #cancelRequested = false;
  readonly #record: RecordProgress | undefined;
  /** The store's answer to the latest progress sent to it, until it comes (see {@link recorded}). */
  #recording: Promise<void> | undefined;

  constructor(
    readonly callId: string,
    options: { async: boolean; perSecond: number; record?: RecordProgress | undefined; clock?: Clock },
  ) {
    this.#clock = options.clock ?? systemClock;
    this.async = options.async;
    this.#intervalMs = 1000 / options.perSecond;
    this.#record = options.record;
  }

  /**
   * Resolves once the store has answered every progress sent to it so far; undefined when none is on its way. A
   * status read here waits for it: the store may hold a progress already that its answer has not brought back yet,
   * and another instance may have answered it.
   */
  recorded(): Promise<void> | undefined {
    return this.#recording;
  }

  /**
   * A tool's progress report. Ignored when malformed (not a finite `progress` of at least 0), when it does not
   * increase on what was reported before, or once the call has ended; kept now, or at the end of the current
   * interval when one was kept less than an interval ago (the latest report of the interval wins).
   */
  report(update: unknown): void {
    const progress = checkedProgress(update);
    if (!progress || this.end) {
      return;
    }
    const highest = this.#pending ?? this.#latest;
    if (highest && progress.progress <= highest.progress) {
      return;
    }
    const now = this.#clock.now();
    // A clock set back (the wall clock's, adjusted) counts as an interval passed: nothing waits for it to catch up.
    if (now - this.#keptAt >= this.#intervalMs || now < this.#keptAt) {
      // It supersedes a pending one whose timer has not fired yet (a busy event loop): that one is older and lower.
      this.#clock.clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#pending = undefined;
      this.#keep(progress, now);
      return;
    }
    this.#pending = progress;
    if (!this.#timer) {
      this.#timer = this.#clock.setTimeout(() => this.#flush(), this.#keptAt + this.#intervalMs - now);
      unrefTimer(this.#timer);
    }
  }

  /** Calls `listener` on every change (a progress kept, the end); returns the function that stops it. */
  watch(listener: () => void): () => void {
    this.#watchers.add(listener);
    return () => {
      this.#watchers.delete(listener);
    };
  }

  /** Gives the task the function that stops its run; a cancel asked for before runs it at once. */
  cancelWith(cancel: () => void): void {
    this.#cancel = cancel;
    if (this.#cancelRequested) {
      cancel();
    }
  }

  /** Asks the run to stop as cancelled (once: a cancel heard again changes nothing); false once the call has ended. */
  cancel(): boolean {
    if (this.end) {
      return false;
    }
    if (!this.#cancelRequested) {
      this.#cancelRequested = true;
      this.#cancel?.();
    }
    return true;
  }

  /** Records how the call ended (a pending progress first) and tells the watchers. */
  settle(end: TaskEnd): void {
    if (this.end) {
      return;
    }
    this.#flush();
    // The latest progress kept is answered before the end, recorded in the store or not yet: the end follows in
    // this same turn, and from then on every instance answers the result, never a progress. An event stream's
    // last progress is then the tool's last report, not the one before it still on its way to the store.
    if (this.#latest && this.#kept > this.seq) {
      this.progress = this.#latest;
      this.seq = this.#kept;
      this.#notify();
    }
    this.end = end;
    this.#notify();
    this.#watchers.clear();
  }

  /** The call's status as the tasks extension answers it. */
  status(): CallStatus {
    const status: CallStatus = {
      call_id: this.callId,
      status: this.end ? (this.end.cancelled ? "cancelled" : "completed") : "running",
    };
    // An ended call is its result, as the store keeps it: the same status whichever instance answers.
    if (this.end) {
      status.result = this.end.response;
    } else if (this.progress) {
      status.progress = this.progress;
    }
    return status;
  }

  #flush(): void {
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    const pending = this.#pending;
    if (pending) {
      this.#pending = undefined;
      this.#keep(pending, this.#clock.now());
    }
  }

  #keep(progress: CallProgress, now: number): void {
    this.#latest = progress;
    const seq = ++this.#kept;
    this.#keptAt = now;
    const recording = this.#record?.(progress, seq);
    if (!recording) {
      this.#answer(progress, seq);
      return;
    }
    // A progress the store refused, or failed to take, is not answered: a later one that it keeps will be.
    const answered: Promise<void> = recording.then(
      (kept) => {
        this.#recorded(answered);
        if (kept !== false) {
          this.#answer(progress, seq);
        }
      },
      () => this.#recorded(answered),
    );
    this.#recording = answered;
  }

  /** The store answered `recording`: unless a later progress is on its way, none is. */
  #recorded(recording: Promise<void>): void {
    if (this.#recording === recording) {
      this.#recording = undefined;
    }
  }

  /** Makes a kept progress the one answered, unless a later one is already, or the call has ended. */
  #answer(progress: CallProgress, seq: number): void {
    if (this.end || seq <= this.seq) {
      return;
    }
    this.progress = progress;
    this.seq = seq;
    this.#notify();
  }

  #notify(): void {
    for (const watcher of [...this.#watchers]) {
      try {
        watcher();
      } catch {
        // A watcher is the server's own (a long poll, an event stream); one that fails must not stop the others.
      }
    }
  }
}

/** A well-formed copy of a progress report, or undefined: `progress` and `total` finite and at least 0, `message` cut. */
function checkedProgress(update: unknown): CallProgress | undefined {
  if (typeof update !== "object" || update === null) {
    return undefined;
  }
  const { progress, total, message } = update as Record<string, unknown>;
  if (typeof progress !== "number" || !Number.isFinite(progress) || progress < 0) {
    return undefined;
  }
  const kept: CallProgress = { progress };
  if (typeof total === "number" && Number.isFinite(total) && total >= 0) {
    kept.total = total;
  }
  if (typeof message === "string" && message.length > 0) {
    kept.message = cut(message, PROGRESS_MESSAGE_MAX);
  }
  return kept;
}

/** The first `max` UTF-16 units of `text`, never half of a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) {
    return text;
  }
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** The preferences of a request's `Prefer` header (RFC 7240) that the tasks extension reads. */
export interface Preferences {
  respondAsync: boolean;
  /** `wait=N` in seconds, at most {@link MAX_WAIT_SECONDS}; undefined when absent or malformed. */
  waitSeconds: number | undefined;
}

/**
 * Reads `respond-async` and `wait=N` from a `Prefer` header (several lines arrive joined with commas). Names are
 * case-insensitive, parameters after `;` and unknown preferences ignored; a malformed `wait` is ignored, one over
 * 30 seconds counts as 30.
 */
export function parsePrefer(header: string | undefined): Preferences {
  const preferences: Preferences = { respondAsync: false, waitSeconds: undefined };
  if (header === undefined) {
    return preferences;
  }
  for (const item of header.split(",")) {
    const [token = ""] = item.split(";");
    const equals = token.indexOf("=");
    const name = (equals === -1 ? token : token.slice(0, equals)).trim().toLowerCase();
    const value =
      equals === -1
        ? undefined
        : token
            .slice(equals + 1)
            .trim()
            .replace(/^"(.*)"$/, "$1");
    if (name === "respond-async") {
      preferences.respondAsync = true;
    } else if (name === "wait" && value !== undefined && /^[0-9]{1,9}$/.test(value)) {
      preferences.waitSeconds = Math.min(Number(value), MAX_WAIT_SECONDS);
    }
  }
  return preferences;
}
