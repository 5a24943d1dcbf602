// The ConnectionStore over SQL, shared by the PostgreSQL and the embedded (PGlite) stores; each brings its own lock.
import {
  type ConnectionRecord,
  type ConnectionStatus,
  type ConnectionStore,
  type ConnectionStoreBounds,
  ConnectionStoreFullError,
  connectionStoreBounds,
  type SealedTokens,
} from "@otc/server/node";
import { type Database, DEFAULT_SCHEMA, quoteSchema } from "./database.js";
import { migrate } from "./migrations.js";

/** How a store runs `work` under a connection's lock. */
export type LockRunner = <T>(id: string, timeoutMs: number, work: () => Promise<T>) => Promise<T>;

/** A row of `connections`, times already in epoch milliseconds. */
interface ConnectionRow {
  id: string;
  principal: string;
  user_id: string;
  provider: string;
  status: ConnectionStatus;
  scopes: string[];
  account: string | null;
  created_at: number;
  updated_at: number;
  expires_at: number | null;
  tokens: SealedTokens | null;
  version: number;
}

// Epoch milliseconds both ways: extract() answers numeric, exact to the microsecond, so the milliseconds come back as
// they were written.
const millis = (column: string) => `(extract(epoch FROM ${column}) * 1000)::float8 AS ${column}`;
const COLUMNS = `id, principal, user_id, provider, status, scopes, account, ${millis("created_at")},
  ${millis("updated_at")}, ${millis("expires_at")}, tokens, version`;
const timestamp = (param: string) => `to_timestamp(${param}::float8 / 1000)`;

function toRecord(row: ConnectionRow): ConnectionRecord {
  return {
    id: row.id,
    principal: row.principal,
    userId: row.user_id,
    provider: row.provider,
    status: row.status,
    scopes: row.scopes,
    ...(row.account === null ? {} : { account: row.account }),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    ...(row.expires_at === null ? {} : { expiresAt: row.expires_at }),
    ...(row.tokens === null ? {} : { tokens: row.tokens }),
    version: row.version,
  };
}

/** The values of a record's columns after the id, in the order of the INSERT and UPDATE below. */
function values(record: ConnectionRecord): unknown[] {
  return [
    record.principal,
    record.userId,
    record.provider,
    record.status,
    record.scopes,
    record.account ?? null,
    record.createdAt,
    record.updatedAt,
    record.expiresAt ?? null,
    record.tokens ?? null,
    record.version,
  ];
}

/** The options every SQL store takes. */
export interface SqlStoreOptions {
  /** The bounds checked on insert. Default {@link CONNECTION_STORE_DEFAULTS} of `@otc/server`. */
  bounds?: ConnectionStoreBounds;
  /** The schema of the store's tables, made by `migrate` when missing. Default `public`. */
  schema?: string;
}

/** Connections in a `connections` table, through a {@link Database}; `withLock` is the lock it is given. */
export class SqlConnectionStore implements ConnectionStore {
  readonly #database: Database;
  readonly #schema: string;
  readonly #table: string;
  readonly #bounds: Required<ConnectionStoreBounds>;
  readonly #lock: LockRunner;

  constructor(database: Database, lock: LockRunner, options: SqlStoreOptions = {}) {
    this.#database = database;
    this.#schema = options.schema ?? DEFAULT_SCHEMA;
    this.#table = `${quoteSchema(this.#schema)}.connections`;
    this.#bounds = connectionStoreBounds(options.bounds);
    this.#lock = lock;
  }

  /** The schema the tables live in. */
  get schema(): string {
    return this.#schema;
  }

  /** Applies the migrations the schema lacks (see `MIGRATIONS`); safe to call from several instances at once. */
  async migrate(): Promise<number[]> {
    return migrate(this.#database, this.#schema);
  }

  async list(principal: string, userId: string): Promise<ConnectionRecord[]> {
    // COLLATE "C": ids compare by code point, as the memory store's `<` does, whatever the database's collation.
    const { rows } = await this.#database.query<ConnectionRow>(
      `SELECT ${COLUMNS} FROM ${this.#table} WHERE principal = $1 AND user_id = $2
       ORDER BY created_at DESC, id COLLATE "C"`,
      [principal, userId],
    );
    return rows.map(toRecord);
  }

  async get(id: string): Promise<ConnectionRecord | undefined> {
    const { rows } = await this.#database.query<ConnectionRow>(`SELECT ${COLUMNS} FROM ${this.#table} WHERE id = $1`, [
      id,
    ]);
    return rows[0] && toRecord(rows[0]);
  }

  async insert(record: ConnectionRecord): Promise<void> {
    await this.#database.transaction(async (tx) => {
      // Inserts take turns (per schema): under READ COMMITTED two counts at once would both see room for one more.
      // Connections are made by people, a few a second at most, so one queue costs nothing.
      await tx.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [
        `otc_connections_insert:${this.#schema}`,
      ]);
      const { rows } = await tx.query<{ taken: boolean; owned: number; total: number }>(
        `SELECT EXISTS (SELECT 1 FROM ${this.#table} WHERE id = $1) AS taken,
          (SELECT count(*) FROM ${this.#table} WHERE principal = $2 AND user_id = $3)::int AS owned,
          (SELECT count(*) FROM ${this.#table})::int AS total`,
        [record.id, record.principal, record.userId],
      );
      const counts = rows[0];
      if (!counts) {
        throw new Error("the bounds' counts answered no row");
      }
      if (counts.taken) {
        throw new Error(`connection ${record.id} exists already`);
      }
      if (counts.owned >= this.#bounds.maxPerUser) {
        throw new ConnectionStoreFullError("This user holds the most connections allowed", "user");
      }
      if (counts.total >= this.#bounds.maxTotal) {
        throw new ConnectionStoreFullError("The vault holds the most connections it may", "total");
      }
      await tx.query(
        `INSERT INTO ${this.#table}
          (id, principal, user_id, provider, status, scopes, account, created_at, updated_at, expires_at, tokens, version)
         VALUES ($1, $2, $3, $4, $5, $6, $7, ${timestamp("$8")}, ${timestamp("$9")}, ${timestamp("$10")}, $11, $12)`,
        [record.id, ...values(record)],
      );
    });
  }

  async update(record: ConnectionRecord, expectedVersion: number): Promise<boolean> {
    const { written } = await this.#database.query(
      `UPDATE ${this.#table} SET principal = $3, user_id = $4, provider = $5, status = $6, scopes = $7, account = $8,
        created_at = ${timestamp("$9")}, updated_at = ${timestamp("$10")}, expires_at = ${timestamp("$11")},
        tokens = $12, version = $13
       WHERE id = $1 AND version = $2`,
      [record.id, expectedVersion, ...values(record)],
    );
    return written === 1;
  }

  async delete(id: string): Promise<void> {
    await this.#database.query(`DELETE FROM ${this.#table} WHERE id = $1`, [id]);
  }

  withLock<T>(id: string, timeoutMs: number, work: () => Promise<T>): Promise<T> {
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      return Promise.reject(new TypeError("timeoutMs must be a positive number of milliseconds"));
    }
    return this.#lock(id, timeoutMs, work);
  }
}
