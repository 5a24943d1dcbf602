/** One ioredis client set up to fail fast while Redis is down, shared by the stores, plus the key naming they all use. */
import { createHash } from "node:crypto";
import { Redis, type RedisOptions } from "ioredis";

/** Options every Redis store (and {@link createRedisState}) takes. */
export interface RedisConnectionOptions {
  /** Put before every key and channel name, so several applications can share one Redis. Default `oxp:`. */
  keyPrefix?: string;
  /** A command with no reply after this long fails (the server answers 503). Default 2,000 ms. */
  commandTimeoutMs?: number;
  /**
   * While the connection is (re)connecting, a command waits this long for it before failing. Commands
   * are never queued beyond it, so an outage gives quick 503s, not hung requests. Default 1,000 ms.
   */
  readyTimeoutMs?: number;
  /**
   * Told of connection errors (refused, reset...). ioredis reconnects by itself; the default ignores
   * them, since every failed command already surfaces as a 503. Messages never hold keys or values.
   */
  onError?: (error: Error) => void;
}

/** Thrown when Redis cannot run a command now (down, unreachable, timed out, or an unexpected reply). */
export class RedisUnavailableError extends Error {
  override name = "RedisUnavailableError";
}

/**
 * Given to `onError` (never thrown) when Redis's `maxmemory-policy` evicts keys: an evicted claim or
 * record lets a retry run its call a second time. Set the policy to `noeviction`.
 */
export class RedisEvictionPolicyWarning extends Error {
  override name = "RedisEvictionPolicyWarning";
  constructor(
    /** The policy Redis reported, e.g. `allkeys-lru`. */
    readonly policy: string,
  ) {
    super(
      `Redis maxmemory-policy is "${policy}": it may evict idempotency records, and a retry would then run its call twice. Set it to "noeviction".`,
    );
  }
}

/**
 * Parses a JSON value read from Redis. A corrupt one fails as "corrupt record" only: a SyntaxError's
 * message quotes the input, which may be a token, and must not reach a log.
 */
export function parseStored<T>(raw: string): T {
  try {
    return JSON.parse(raw) as T;
  } catch {
    throw new RedisUnavailableError("Redis holds a corrupt record");
  }
}

/**
 * The ioredis options a client made from a URL gets: no offline queue (a command while disconnected
 * waits at most `readyTimeoutMs`, in {@link RedisConnection.ready}, then fails), in-flight commands
 * failed rather than resent when the connection drops (a claim resent after its caller gave up would
 * hold a key for nothing), a command timeout, and reconnection forever with a capped backoff.
 */
export function failFastOptions(options: RedisConnectionOptions = {}): RedisOptions {
  return {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: options.commandTimeoutMs ?? 2_000,
    connectTimeout: options.commandTimeoutMs ?? 2_000,
    retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 10), 1_000),
    enableAutoPipelining: true,
    lazyConnect: false,
  };
}

/** A lone surrogate: a high one not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /([\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff])/;

/**
 * Key components are URI-encoded, which never yields `:`: no principal, call_id or user id can collide
 * with another. `encodeURIComponent` throws on a lone surrogate, which JSON lets a client send
 * (`"\ud800"`), so each one is written `%uD800` instead: URI encoding never yields `%u`, so the
 * result still names one string only. A well-formed string keeps its plain URI encoding.
 */
export function keyPart(part: string): string {
  try {
    return encodeURIComponent(part);
  } catch {
    // split() with a capture group puts the lone surrogates at the odd indexes.
    return part
      .split(LONE_SURROGATE)
      .map((piece, index) =>
        index % 2 === 1 ? `%u${piece.charCodeAt(0).toString(16).toUpperCase()}` : encodeURIComponent(piece),
      )
      .join("");
  }
}

/** A Redis "OOM command not allowed" reply: `maxmemory` is reached and the policy evicts nothing. */
export const isOutOfMemory = (error: unknown) => error instanceof Error && /\bOOM\b/.test(error.message);

/**
 * An ioredis client plus what the stores need around it: a bounded wait for readiness, Lua scripts
 * defined once, errors reduced to their message, and a subscriber connection made on first use.
 */
export class RedisConnection {
  readonly client: Redis;
  readonly prefix: string;
  private readonly owned: boolean;
  private readonly readyTimeoutMs: number;
  private readonly onError: (error: Error) => void;
  /** Each script's SHA-1, as EVALSHA names it. */
  private readonly shas = new Map<string, string>();
  private subscriberClient: Redis | undefined;
  private readonly readyWaits = new WeakMap<Redis, Promise<void>>();
  private readonly errorListener = (error: Error) => this.onError(error);
  /** The policy check's answer once known (a policy, or null when CONFIG is not allowed), and its listener. */
  private evictionPolicy: Promise<string | null> | undefined;
  private policyListener: (() => void) | undefined;
  private closed = false;

  /** From a URL (`redis://`, `rediss://`: the connection is made and owned here) or an existing client (left open by `close`). */
  constructor(source: string | Redis, options: RedisConnectionOptions = {}) {
    this.prefix = options.keyPrefix ?? "oxp:";
    this.readyTimeoutMs = options.readyTimeoutMs ?? 1_000;
    this.onError = options.onError ?? (() => {});
    this.owned = typeof source === "string";
    this.client = typeof source === "string" ? new Redis(source, failFastOptions(options)) : source;
    // Without a listener ioredis prints every connection error to the console.
    this.client.on("error", this.errorListener);
  }

  /** Resolves once `client` can take commands; fails after `timeoutMs` (default `readyTimeoutMs`), or at once when closed. */
  async ready(client: Redis = this.client, timeoutMs = this.readyTimeoutMs): Promise<void> {
    if (client.status === "ready") {
      return;
    }
    if (this.closed || client.status === "end") {
      throw new RedisUnavailableError("The Redis connection is closed");
    }
    if (client.status === "wait") {
      client.connect().catch(() => {});
    }
    // One listener per client however many callers wait, so an outage under load adds no listeners.
    let wait = this.readyWaits.get(client);
    if (!wait) {
      // Settles on "ready", or on "end" (the client gave up for good): either way both listeners go.
      wait = new Promise<void>((resolve, reject) => {
        const settle = (outcome: () => void) => () => {
          client.off("ready", onReady);
          client.off("end", onEnd);
          this.readyWaits.delete(client);
          outcome();
        };
        const onReady = settle(resolve);
        const onEnd = settle(() => reject(new RedisUnavailableError("The Redis connection is closed")));
        client.once("ready", onReady);
        client.once("end", onEnd);
      });
      wait.catch(() => {});
      this.readyWaits.set(client, wait);
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new RedisUnavailableError(`Redis is not reachable (connection ${client.status})`)),
        timeoutMs,
      );
    });
    try {
      await Promise.race([wait, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Runs a command once the client is ready. A failure is rethrown as a {@link RedisUnavailableError}
   * carrying only ioredis's message: ioredis errors can hold the command's arguments (tokens among
   * them), which must not reach a log. `OOM` replies keep their word, for {@link isOutOfMemory}.
   */
  async run<T>(command: (client: Redis) => Promise<T>): Promise<T> {
    await this.ready();
    try {
      return await command(this.client);
    } catch (error) {
      throw new RedisUnavailableError(`Redis command failed: ${error instanceof Error ? error.message : "unknown"}`);
    }
  }

  /**
   * Runs a Lua script by its SHA-1 (EVALSHA), sending its text (EVAL) only when Redis does not know it yet.
   * By hand rather than ioredis's `defineCommand`, which breaks when it defines a command while an
   * auto-pipeline is pending on the client (the pending pipeline lacks the new command).
   */
  script(name: string, keys: number, lua: string, ...args: (string | number)[]): Promise<unknown> {
    let sha = this.shas.get(name);
    if (!sha) {
      sha = createHash("sha1").update(lua).digest("hex");
      this.shas.set(name, sha);
    }
    const known = sha;
    return this.run(async (client) => {
      try {
        return await client.evalsha(known, keys, ...args);
      } catch (error) {
        if (!(error instanceof Error && error.message.startsWith("NOSCRIPT"))) {
          throw error;
        }
        return client.eval(lua, keys, ...args);
      }
    });
  }

  /**
   * Reads Redis's `maxmemory-policy` once (at the first moment the client is ready) and tells `onError` a
   * {@link RedisEvictionPolicyWarning} when it evicts keys. Resolves with the policy, or null when
   * CONFIG is not allowed (an ACL user, a managed Redis): then nothing is reported.
   */
  checkEvictionPolicy(): Promise<string | null> {
    if (this.evictionPolicy) {
      return this.evictionPolicy;
    }
    const check = this.run((client) => client.config("GET", "maxmemory-policy")).then(
      (reply) => {
        const policy = Array.isArray(reply) && typeof reply[1] === "string" ? reply[1] : null;
        if (policy !== null && policy !== "noeviction") {
          this.onError(new RedisEvictionPolicyWarning(policy));
        }
        return policy;
      },
      (error: unknown) => {
        // Refused (an ACL without CONFIG, a renamed command): give up quietly. Not connected: try at the next "ready".
        if (error instanceof Error && /\bNOPERM\b|\bERR\b/.test(error.message)) {
          return null;
        }
        this.evictionPolicy = undefined;
        throw error;
      },
    );
    this.evictionPolicy = check;
    return check;
  }

  /** Runs {@link checkEvictionPolicy} as soon as the client is ready, now or after it connects. */
  watchEvictionPolicy(): void {
    if (this.policyListener || this.closed) {
      return;
    }
    const attempt = () => {
      this.checkEvictionPolicy().then(
        () => this.stopWatchingPolicy(),
        () => {},
      );
    };
    this.policyListener = attempt;
    this.client.on("ready", attempt);
    if (this.client.status === "ready") {
      attempt();
    }
  }

  private stopWatchingPolicy(): void {
    if (this.policyListener) {
      this.client.off("ready", this.policyListener);
    }
    this.policyListener = undefined;
  }

  /** The connection for SUBSCRIBE (one in subscriber mode takes no other commands), made on first use and ready. */
  async subscriber(): Promise<Redis> {
    if (this.closed) {
      throw new RedisUnavailableError("The Redis connection is closed");
    }
    if (!this.subscriberClient) {
      // Not resubscribed by ioredis after a reconnect: the idempotency store does it, and reads its keys
      // only once Redis confirmed, so no message can fall between the read and the subscription.
      const subscriber = this.client.duplicate({ autoResubscribe: false });
      subscriber.on("error", (error: Error) => this.onError(error));
      this.subscriberClient = subscriber;
    }
    await this.ready(this.subscriberClient);
    return this.subscriberClient;
  }

  /** Closes the subscriber, and the client too when it was made here from a URL. */
  async close(): Promise<void> {
    if (this.closed) {
      return;
    }
    this.closed = true;
    this.stopWatchingPolicy();
    // A caller's client outlives this connection: take back the listener put on it.
    if (!this.owned) {
      this.client.off("error", this.errorListener);
    }
    const quit = async (client: Redis) => {
      // QUIT waits for replies in flight; when Redis is down there is nothing to wait for.
      if (client.status === "ready") {
        await client.quit().catch(() => client.disconnect());
      } else {
        client.disconnect();
      }
    };
    await Promise.all([
      this.subscriberClient ? quit(this.subscriberClient) : undefined,
      this.owned ? quit(this.client) : undefined,
    ]);
  }
}
