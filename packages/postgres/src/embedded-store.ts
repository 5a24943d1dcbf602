// The connections vault for one process with no server: the same SQL and migrations on PGlite (PostgreSQL compiled to WebAssembly), in memory or in a folder.
import { PGlite } from "@electric-sql/pglite";
import type { Database, Queryable, QueryResult } from "./database.js";
import { LocalLocks } from "./internal/local-locks.js";
import { SqlConnectionStore, type SqlStoreOptions } from "./sql-connection-store.js";

/** The options of {@link createEmbeddedConnectionStore}. */
export interface EmbeddedConnectionStoreOptions extends SqlStoreOptions {
  /** The folder the database lives in, made when missing; in memory (lost on `close`) when absent. */
  dataDir?: string;
}

/**
 * What the embedded store uses of a PGlite: a `PGlite` is one. Written here rather than taken from PGlite, whose
 * declarations name Emscripten's globals without depending on @types/emscripten, so that a project checking its
 * libraries' types (`skipLibCheck: false`) type-checks with this package without them; one importing PGlite itself
 * needs them.
 */
export interface PGliteDatabase {
  /** The folder the database lives in; absent when it is in memory. */
  readonly dataDir?: string;
  /** One statement with `$1`-style parameters. */
  query<Row>(text: string, params?: unknown[]): Promise<{ rows: Row[]; affectedRows?: number }>;
  /** Runs `work` in a transaction: committed when it resolves, rolled back when it rejects. */
  transaction<T>(work: (tx: Pick<PGliteDatabase, "query">) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

const result = <Row>(answer: { rows: unknown[]; affectedRows?: number }): QueryResult<Row> => ({
  rows: answer.rows as Row[],
  written: answer.affectedRows ?? 0,
});

function pgliteDatabase(db: PGliteDatabase): Database {
  const on = (session: Pick<PGliteDatabase, "query">): Queryable => ({
    query: async (text, params) => result(await session.query(text, params as unknown[] | undefined)),
  });
  return { ...on(db), transaction: (work) => db.transaction((tx) => work(on(tx))) };
}

/**
 * A connections vault on PGlite: made by {@link createEmbeddedConnectionStore}. Its lock is the process's own (a
 * queue per connection): PGlite is one session, which one process opens, so there is no other instance to exclude,
 * and a transaction held for the lock would stop `work`'s own queries, which share that session.
 */
export class EmbeddedConnectionStore extends SqlConnectionStore {
  /** The PGlite database (typed as what the store uses of it). */
  readonly db: PGliteDatabase;
  readonly #local: LocalLocks;

  constructor(db: PGliteDatabase, options: SqlStoreOptions = {}) {
    const local = new LocalLocks();
    super(
      pgliteDatabase(db),
      async (id, timeoutMs, work) => {
        const release = await local.acquire(id, timeoutMs);
        try {
          return await work();
        } finally {
          release();
        }
      },
      options,
    );
    this.db = db;
    this.#local = local;
  }

  /** Callers waiting for a lock another caller holds (a gauge for metrics). */
  get waitingForLock(): number {
    return this.#local.waiting;
  }

  /** Closes the database: one in memory is gone, one in a folder is written out. */
  async close(): Promise<void> {
    await this.db.close();
  }
}

/**
 * A connections vault for a single instance, with no database server: migrated before it is answered.
 *
 * @example
 * const store = await createEmbeddedConnectionStore({ dataDir: "./data/connections" });
 * // createServer({ ..., connections: { providers, keys, verifyBrowser, store } }); on shutdown: await store.close();
 */
export async function createEmbeddedConnectionStore(
  options: EmbeddedConnectionStoreOptions = {},
): Promise<EmbeddedConnectionStore> {
  const db = await PGlite.create(options.dataDir);
  const store = new EmbeddedConnectionStore(db, options);
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
