// The connections vault on a PostgreSQL server, shared by every instance that reaches it: node-postgres, plain SQL, and an advisory lock per connection.

import pg from "pg";
import { type Database, DEFAULT_SCHEMA, type Queryable, type QueryResult, quoteSchema } from "./database.js";
import { ConnectionLockTimeoutError } from "./errors.js";
import { LocalLocks } from "./internal/local-locks.js";
import { SqlConnectionStore, type SqlStoreOptions } from "./sql-connection-store.js";

/** The options of {@link createPostgresConnectionStore}: a pool of yours, or a connection string for one of its own. */
export type PostgresConnectionStoreOptions = SqlStoreOptions &
  (
    | {
        /** A node-postgres pool; the store never ends it. It needs a client more than the locks held at once. */
        pool: pg.Pool;
        connectionString?: never;
      }
    | {
        /** `postgres://user:password@host:port/database`: the store makes a pool and ends it on `close`. */
        connectionString: string;
        /** The most clients of that pool. Default 10. */
        maxClients?: number;
        /** Told of a pooled client's error while idle (the pool drops it); errors of a query reach its caller. */
        onError?: (error: Error) => void;
        pool?: never;
      }
  ) & {
    /** Apply the missing migrations before answering the store. Default true. */
    migrate?: boolean;
  };

// lock_not_available: lock_timeout ran out.
const LOCK_NOT_AVAILABLE = "55P03";

const result = <Row>(answer: pg.QueryResult): QueryResult<Row> => ({
  rows: answer.rows as Row[],
  written: answer.command === "SELECT" ? 0 : (answer.rowCount ?? 0),
});

/** A pool as a {@link Database}: each transaction on one client of it. */
function poolDatabase(pool: pg.Pool): Database {
  const on = (client: pg.Pool | pg.PoolClient): Queryable => ({
    query: async (text, params) => result(await client.query(text, params as unknown[] | undefined)),
  });
  return {
    ...on(pool),
    transaction: async (work) => {
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query("BEGIN");
        const answer = await work(on(client));
        await client.query("COMMIT");
        return answer;
      } catch (error) {
        await client.query("ROLLBACK").catch((rollback: Error) => {
          broken = rollback;
        });
        throw error;
      } finally {
        client.release(broken);
      }
    },
  };
}

/**
 * A client of the pool within `ms`: a pool whose clients are all busy would otherwise keep a caller of `withLock`
 * waiting past its time limit. A client that comes after the caller gave up goes straight back.
 */
async function connectWithin(pool: pg.Pool, ms: number, id: string, timeoutMs: number): Promise<pg.PoolClient> {
  const pending = pool.connect();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    const client = await Promise.race([pending, late]);
    if (client) {
      return client;
    }
    pending.then(
      (arrived) => arrived.release(),
      () => {},
    );
    throw new ConnectionLockTimeoutError(id, timeoutMs);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Holds a connection's lock for `work`: a transaction on a client of its own that takes
 * `pg_advisory_xact_lock(hashtextextended(key, 0))`, with `lock_timeout` set to what is left of `timeoutMs`.
 * Callers of one instance first queue in the process, so a burst for one connection takes one client, not one each.
 */
function advisoryLock(pool: pg.Pool, schema: string, local: LocalLocks) {
  return async <T>(id: string, timeoutMs: number, work: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const release = await local.acquire(id, timeoutMs);
    const left = () => Math.max(1, Math.ceil(timeoutMs - (performance.now() - started)));
    try {
      const client = await connectWithin(pool, left(), id, timeoutMs);
      let broken: Error | undefined;
      // A checked-out client's 'error' with no listener would crash the process; the next query reports it anyway.
      const onError = (error: Error) => {
        broken = error;
      };
      client.on("error", onError);
      try {
        await client.query("BEGIN");
        await client.query("SELECT set_config('lock_timeout', $1, true)", [`${left()}ms`]);
        try {
          await client.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
            `otc_connection:${schema}:${id}`,
          ]);
        } catch (error) {
          if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) {
            throw new ConnectionLockTimeoutError(id, timeoutMs, { cause: error });
          }
          throw error;
        }
        const answer = await work();
        // The transaction wrote nothing: a failed COMMIT only means the session is gone (and the lock with it).
        await client.query("COMMIT").catch((error: Error) => {
          broken = error;
        });
        return answer;
      } catch (error) {
        await client.query("ROLLBACK").catch((rollback: Error) => {
          broken = rollback;
        });
        throw error;
      } finally {
        client.off("error", onError);
        client.release(broken);
      }
    } finally {
      release();
    }
  };
}

/** A connections vault on PostgreSQL: made by {@link createPostgresConnectionStore}. */
export class PostgresConnectionStore extends SqlConnectionStore {
  /** The pool the store queries through. */
  readonly pool: pg.Pool;
  readonly #owned: boolean;
  readonly #local: LocalLocks;

  constructor(pool: pg.Pool, owned: boolean, options: SqlStoreOptions = {}) {
    const local = new LocalLocks();
    super(poolDatabase(pool), advisoryLock(pool, options.schema ?? DEFAULT_SCHEMA, local), options);
    this.pool = pool;
    this.#owned = owned;
    this.#local = local;
  }

  /** Callers of this instance waiting for a lock another of its callers holds (a gauge for metrics). */
  get waitingForLock(): number {
    return this.#local.waiting;
  }

  /** Ends the pool when the store made it; does nothing to a pool it was given. */
  async close(): Promise<void> {
    if (this.#owned) {
      await this.pool.end();
    }
  }
}

/**
 * A connections vault on PostgreSQL (11 or later) for several instances: each instance makes one over the same
 * database. Migrates the schema first unless told not to.
 *
 * @example
 * const store = await createPostgresConnectionStore({ connectionString: process.env.DATABASE_URL! });
 * // createServer({ ..., connections: { providers, keys, verifyBrowser, store } }); on shutdown: await store.close();
 */
export async function createPostgresConnectionStore(
  options: PostgresConnectionStoreOptions,
): Promise<PostgresConnectionStore> {
  // Checked before a pool is made for it, so a bad name leaves nothing behind.
  quoteSchema(options.schema ?? DEFAULT_SCHEMA);
  let store: PostgresConnectionStore;
  if (options.pool) {
    store = new PostgresConnectionStore(options.pool, false, options);
  } else {
    const pool = new pg.Pool({ connectionString: options.connectionString, max: options.maxClients ?? 10 });
    pool.on("error", options.onError ?? (() => {}));
    store = new PostgresConnectionStore(pool, true, options);
  }
  if (options.migrate ?? true) {
    try {
      await store.migrate();
    } catch (error) {
      await store.close();
      throw error;
    }
  }
  return store;
}
