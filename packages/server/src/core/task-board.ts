/**
 * The tasks extension across instances (docs/protocol.md 9.3): the calls with a call_id this process runs, and through
 * a {@link TaskStore} those another instance runs: their status, their changes, their cancel, their leases.
 */
import type { CallStatus, CallToolResponse } from "@otc/types";
import { type CoreLogger, describeCause, LOGGED_FIELD_MAX } from "./call-log.js";
import { type Clock, type ClockTimer, everyOn } from "./clock.js";
import { shorten } from "./errors.js";
import type { IdempotencyKey, IdempotencyStore, TaskEvent, TaskStore } from "./idempotency-store.js";
import { KeyedListeners } from "./keyed-listeners.js";
import { orUnavailable } from "./shared-state.js";
import { LocalTask, type TaskEnd } from "./tasks.js";

/** A call's status with the number of its latest progress (the id of its latest `progress` event). */
export interface CallState {
  status: CallStatus;
  seq: number;
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

/** The key of a (principal, call_id) in this process's maps. */
export const recordKey = (key: IdempotencyKey) => JSON.stringify([key.principal, key.callId]);

/** Where every call with a call_id can be read, followed and cancelled, whichever instance runs it. */
export class TaskBoard {
  /** Calls with a call_id this process runs, by record key. */
  private readonly tasks = new Map<string, LocalTask>();

  constructor(
    private readonly options: {
      records: IdempotencyStore;
      store: TaskStore;
      clock: Clock;
      logger: CoreLogger;
      leaseMs: number;
      progressPerSecond: number;
    },
  ) {}

  /**
   * Puts a run's task on the board: its progress recorded in the store for other instances, a cancel asked on
   * another instance reaching it, and an asynchronous run vouched for (its lease renewed) while it goes on.
   * Returns the task and the function that ends it.
   */
  open(key: IdempotencyKey, fingerprint: string, async: boolean): { task: LocalTask; end(end: TaskEnd): void } {
    const { store, clock, leaseMs, progressPerSecond } = this.options;
    const task = new LocalTask(key.callId, {
      async,
      perSecond: progressPerSecond,
      clock,
      // Other instances read the progress in the store; this one answers it once it is kept there.
      record: (progress, seq) => store.progress(key, fingerprint, { progress, seq }),
    });
    const id = recordKey(key);
    this.tasks.set(id, task);
    const unwatch = store.watch(key, (event) => {
      if (event === "cancel") {
        task.cancel();
      }
    });
    let stopVouching: (() => void) | undefined;
    if (async) {
      const vouch = () => {
        store.renew(key, fingerprint, leaseMs).catch((error: unknown) => {
          this.options.logger.error(
            { call_id: shorten(key.callId, LOGGED_FIELD_MAX), err: describeCause(error) },
            "could not renew an asynchronous call's lease; retrying",
          );
        });
      };
      vouch();
      stopVouching = everyOn(clock, leaseMs / 3, vouch);
    }
    let ended = false;
    return {
      task,
      // Its watchers learn how the call ended, and its status is read from the store from then on.
      end: (end) => {
        if (!ended) {
          ended = true;
          unwatch();
          stopVouching?.();
        }
        task.settle(end);
        if (this.tasks.get(id) === task) {
          this.tasks.delete(id);
        }
      },
    };
  }

  /**
   * Where a call stands, from this process's own task, else from the store, where another instance's run records
   * it. With a shared store, this process's task answers only what the store has kept, and once the store has
   * answered the progress on its way (no more than one round trip, only while one is): then no answer from here is
   * behind one another instance gave before, nor ahead of the store's, and a client reading through several
   * instances never sees progress go back.
   */
  async state(key: IdempotencyKey): Promise<CallState | undefined> {
    const task = this.tasks.get(recordKey(key));
    if (task) {
      const recording = task.recorded();
      if (recording) {
        await recording;
      }
      return { status: task.status(), seq: task.seq };
    }
    const { records, clock } = this.options;
    const entry = await orUnavailable(() => records.get(key));
    if (!entry) {
      return undefined;
    }
    const { callId } = key;
    if (entry.response) {
      const status = entry.cancelled ? "cancelled" : "completed";
      return { status: { call_id: callId, status, result: entry.response }, seq: entry.progressSeq ?? 0 };
    }
    const status: CallStatus = { call_id: callId, status: "running" };
    if (entry.progress) {
      status.progress = entry.progress;
    }
    if (entry.leaseUntil !== undefined && entry.leaseUntil < clock.now()) {
      // Nobody vouches for the run any more: its instance died. It never stays "running".
      return { status: { ...status, status: "completed", result: deadRun(callId) }, seq: entry.progressSeq ?? 0 };
    }
    return { status, seq: entry.progressSeq ?? 0 };
  }

  /** {@link state} of a call this process runs, at once; undefined for any other. */
  local(key: IdempotencyKey): CallState | undefined {
    const task = this.tasks.get(recordKey(key));
    return task ? { status: task.status(), seq: task.seq } : undefined;
  }

  /** Calls `listener` on each change of the call (a progress kept, its end), whichever instance runs it. */
  watch(key: IdempotencyKey, listener: () => void): () => void {
    const task = this.tasks.get(recordKey(key));
    if (task) {
      return task.watch(listener);
    }
    return this.options.store.watch(key, (event) => {
      if (event !== "cancel") {
        listener();
      }
    });
  }

  /**
   * Cancels a running call: its tool's AbortSignal fires and the call ends `cancelled`. A call that has ended is
   * left as it is. Resolves once the cancel has taken effect (at most `maxWaitMs` later): with the status of a call
   * this process ran that has ended (kept in the store or not), else undefined (read it with {@link state}).
   */
  async cancel(key: IdempotencyKey, maxWaitMs: number): Promise<CallStatus | undefined> {
    const task = this.tasks.get(recordKey(key));
    if (!task) {
      await this.cancelElsewhere(key, maxWaitMs);
      return undefined;
    }
    if (task.cancel()) {
      await this.until(
        () => task.end !== undefined,
        (wake) => task.watch(wake),
        maxWaitMs,
      );
      if (task.end) {
        return task.status();
      }
    }
    return undefined;
  }

  /** Cancels a call another instance runs, through the store; waits (at most `maxWaitMs`) until it has ended. */
  private async cancelElsewhere(key: IdempotencyKey, maxWaitMs: number): Promise<void> {
    const before = await this.state(key);
    if (before?.status.status !== "running") {
      return;
    }
    const { store, clock } = this.options;
    let unwatch = () => {};
    let timer: ClockTimer | undefined;
    const settled = new Promise<void>((resolve) => {
      unwatch = store.watch(key, (event) => event === "settled" && resolve());
      timer = clock.setTimeout(resolve, maxWaitMs);
    });
    try {
      await orUnavailable(() => store.cancel(key));
      await settled;
    } finally {
      clock.clearTimeout(timer);
      unwatch();
    }
  }

  /** Resolves once `done()` holds, checked at each wake-up `watch` gives, or after `maxMs`. */
  private until(done: () => boolean, watch: (wake: () => void) => () => void, maxMs: number): Promise<void> {
    const { clock } = this.options;
    return new Promise<void>((resolve) => {
      let timer: ClockTimer | undefined;
      let unwatch = () => {};
      const finish = () => {
        clock.clearTimeout(timer);
        unwatch();
        resolve();
      };
      if (done()) {
        resolve();
        return;
      }
      unwatch = watch(() => {
        if (done()) {
          finish();
        }
      });
      timer = clock.setTimeout(finish, maxMs);
    });
  }
}

/**
 * A task store for one process alone, beside an idempotency store no other instance shares: progress is answered as
 * it is kept, a cancel reaches this process's own runs. Behind a store that instances share, give them a task store
 * they share too (the memory and Redis idempotency stores are both).
 *
 * @example
 * const core = new OxpCore({ tools, idempotencyStore: myStore, taskStore: new InProcessTaskStore() });
 */
export class InProcessTaskStore implements TaskStore {
  private readonly watchers = new KeyedListeners<TaskEvent>();

  async progress(): Promise<boolean> {
    return true;
  }

  async renew(): Promise<void> {}

  async cancel(key: IdempotencyKey): Promise<void> {
    this.watchers.emit(recordKey(key), "cancel");
  }

  watch(key: IdempotencyKey, listener: (event: TaskEvent) => void): () => void {
    return this.watchers.add(recordKey(key), listener);
  }
}
