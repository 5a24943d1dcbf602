// Turns per id among the callers of one process, each waiting at most its own time limit.
import { ConnectionLockTimeoutError } from "../errors.js";

/** Lets go of a turn taken with {@link LocalLocks.acquire}. */
export type Release = () => void;

/**
 * A queue per id: a caller's turn comes when every caller before it has let go. A caller that gives up keeps its
 * place until the one before it lets go, then passes it on at once, so the queue never breaks.
 */
export class LocalLocks {
  readonly #tails = new Map<string, Promise<void>>();
  #waiting = 0;

  /** Callers waiting for a turn another caller holds. */
  get waiting(): number {
    return this.#waiting;
  }

  /** Resolves with the caller's turn once its predecessors let go; rejects after `timeoutMs` of waiting. */
  async acquire(id: string, timeoutMs: number): Promise<Release> {
    const previous = this.#tails.get(id);
    let release!: Release;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = (previous ?? Promise.resolve()).then(() => mine);
    this.#tails.set(id, tail);
    void tail.then(() => {
      if (this.#tails.get(id) === tail) {
        this.#tails.delete(id);
      }
    });
    if (!previous) {
      return release;
    }
    this.#waiting++;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const gotIt = await Promise.race([
        previous.then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs);
        }),
      ]);
      if (!gotIt) {
        void previous.then(release);
        throw new ConnectionLockTimeoutError(id, timeoutMs);
      }
      return release;
    } finally {
      clearTimeout(timer);
      this.#waiting--;
    }
  }
}
