/** The bounds on tool runs in progress: per client (429) and for the whole server (503), apart for asynchronous runs. */
import { ServerConfigError, WireError } from "./errors.js";

/** The bounds of {@link RunLimits}, each a positive integer. */
export interface RunBounds {
  maxRunning: number;
  maxRunningPerClient: number;
  maxAsync: number;
  maxAsyncPerClient: number;
}

/** A positive integer option, or a {@link ServerConfigError} naming it. */
export function positiveInteger(name: string, value: number): number {
  if (!(Number.isSafeInteger(value) && value > 0)) {
    throw new ServerConfigError(`${name} must be a positive integer`);
  }
  return value;
}

/**
 * Counts the runs in progress, by client and in all, and refuses a new one at a bound. Only runs still pending count
 * (a synchronous tool finishes before another call is read), those of clients that went away but whose call_id keeps
 * them going included. Asynchronous runs (the tasks extension) count against their own, far larger, bounds only.
 */
export class RunLimits {
  private running = 0;
  private asyncRunning = 0;
  /** Runs in progress by client (an entry only while it is above 0). */
  private readonly byClient = new Map<string, number>();
  private readonly asyncByClient = new Map<string, number>();

  constructor(private readonly bounds: RunBounds) {}

  /** Throws the 429 or 503 of a new run of `client`'s when one is due. */
  check(client: string, async: boolean): void {
    if (async) {
      this.checkAsync(client);
    } else if (this.running > 0) {
      this.checkSync(client);
    }
  }

  /** A run of `client`'s is now pending. */
  enter(client: string, async: boolean): void {
    const byClient = async ? this.asyncByClient : this.byClient;
    byClient.set(client, (byClient.get(client) ?? 0) + 1);
    if (async) {
      this.asyncRunning++;
    } else {
      this.running++;
    }
  }

  /** A run {@link enter}ed has settled, or was given up. */
  leave(client: string, async: boolean): void {
    const byClient = async ? this.asyncByClient : this.byClient;
    const left = (byClient.get(client) ?? 1) - 1;
    if (left > 0) {
      byClient.set(client, left);
    } else {
      byClient.delete(client);
    }
    if (async) {
      this.asyncRunning--;
    } else {
      this.running--;
    }
  }

  private checkSync(client: string): void {
    const { maxRunning, maxRunningPerClient } = this.bounds;
    if ((this.byClient.get(client) ?? 0) >= maxRunningPerClient) {
      throw new WireError("too_many_requests", "Too many of your calls are running", {
        developerMessage: `At most ${maxRunningPerClient} calls of one client run at once; retry when one has finished.`,
        headers: { "Retry-After": "1" },
      });
    }
    if (this.running >= maxRunning) {
      throw new WireError("unavailable", "The server is running as many calls as it can", {
        developerMessage: `At most ${maxRunning} calls run at once; retry shortly.`,
        headers: { "Retry-After": "1" },
      });
    }
  }

  /** The bounds of docs/protocol.md 9.3: apart from those of calls answered in their request. */
  private checkAsync(client: string): void {
    const { maxAsync, maxAsyncPerClient } = this.bounds;
    if ((this.asyncByClient.get(client) ?? 0) >= maxAsyncPerClient) {
      throw new WireError("too_many_requests", "Too many of your asynchronous calls are running", {
        developerMessage: `At most ${maxAsyncPerClient} asynchronous calls of one client run at once; retry when one has finished.`,
        headers: { "Retry-After": "5" },
      });
    }
    if (this.asyncRunning >= maxAsync) {
      throw new WireError("unavailable", "The server is running as many asynchronous calls as it can", {
        developerMessage: `At most ${maxAsync} asynchronous calls run at once; retry later.`,
        headers: { "Retry-After": "5" },
      });
    }
  }
}
