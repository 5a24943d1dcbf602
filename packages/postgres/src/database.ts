// The few database operations the stores need, which both node-postgres and PGlite provide: the SQL is written once, against this.

/** The rows a statement answered, and how many rows it wrote. */
export interface QueryResult<Row> {
  rows: Row[];
  /** Rows inserted, updated or deleted; 0 for a SELECT that wrote nothing. */
  written: number;
}

/** Something that runs one SQL statement with `$1`-style parameters. */
export interface Queryable {
  query<Row = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<Row>>;
}

/** A database: statements, and transactions whose statements all go through one session. */
export interface Database extends Queryable {
  /** Runs `work` in a transaction: committed when it resolves, rolled back when it rejects. */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
}

/** The schema a store uses when told none. */
export const DEFAULT_SCHEMA = "public";

/** A schema name, checked and quoted for SQL: lower-case letters, digits and `_`, as PostgreSQL folds them. */
export function quoteSchema(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
    throw new TypeError(`schema must be lower-case letters, digits and _ (at most 63), not ${JSON.stringify(schema)}`);
  }
  return `"${schema}"`;
}
