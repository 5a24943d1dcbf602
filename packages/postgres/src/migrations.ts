// The schema of the connections vault as numbered migrations, and `migrate`, which applies the missing ones once however many instances start at once.
import { type Database, quoteSchema } from "./database.js";

/** One step of the schema: applied once, in order of `version`, and recorded in `otc_migrations`. */
export interface Migration {
  version: number;
  name: string;
  /** Its statements, one each (PGlite's parameterised queries take one statement at a time), in `schema`. */
  statements(schema: string): string[];
}

/** Every migration, oldest first. Append only: a migration that has shipped is never edited. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "connections",
    statements: (s) => [
      `CREATE TABLE ${s}.connections (
        id text PRIMARY KEY,
        principal text NOT NULL,
        user_id text NOT NULL,
        provider text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'active', 'auth_required', 'revoked')),
        scopes text[] NOT NULL,
        account text,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        expires_at timestamptz,
        tokens jsonb,
        version integer NOT NULL
      )`,
      // A user's list, in the order it is answered in.
      `CREATE INDEX connections_owner ON ${s}.connections (principal, user_id, created_at DESC)`,
    ],
  },
];

/**
 * Applies the migrations `schema` lacks, in one transaction, and answers the versions applied now. An advisory lock
 * (keyed by the schema) around it makes two instances starting at once take turns: the second finds the work done.
 */
export async function migrate(database: Database, schema: string): Promise<number[]> {
  const s = quoteSchema(schema);
  return database.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`otc_migrations:${schema}`]);
    // Created only when missing: CREATE SCHEMA IF NOT EXISTS still asks for the right to create one.
    const found = await tx.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
    if (found.rows.length === 0) {
      await tx.query(`CREATE SCHEMA ${s}`);
    }
    await tx.query(
      `CREATE TABLE IF NOT EXISTS ${s}.otc_migrations (
        version integer PRIMARY KEY,
        name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`,
    );
    const applied = new Set(
      (await tx.query<{ version: number }>(`SELECT version FROM ${s}.otc_migrations`)).rows.map((row) => row.version),
    );
    for (const migration of MIGRATIONS) {
      if (applied.has(migration.version)) {
        continue;
      }
      for (const statement of migration.statements(s)) {
        await tx.query(statement);
      }
      await tx.query(`INSERT INTO ${s}.otc_migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
      applied.add(migration.version);
    }
    return [...applied].sort((a, b) => a - b);
  });
}
