// @otc/postgres: the connections vault of @otc/server on PostgreSQL for many instances, or on embedded PGlite for one.
export type { Database, Queryable, QueryResult } from "./database.js";
export { DEFAULT_SCHEMA } from "./database.js";
export {
  createEmbeddedConnectionStore,
  EmbeddedConnectionStore,
  type EmbeddedConnectionStoreOptions,
  type PGliteDatabase,
} from "./embedded-store.js";
export { ConnectionLockTimeoutError } from "./errors.js";
export { MIGRATIONS, type Migration, migrate } from "./migrations.js";
export {
  createPostgresConnectionStore,
  PostgresConnectionStore,
  type PostgresConnectionStoreOptions,
} from "./postgres-store.js";
export { type LockRunner, SqlConnectionStore, type SqlStoreOptions } from "./sql-connection-store.js";
