// The PostgreSQL store against a real PostgreSQL server: the contract with two instances (two pools) on one database, the lock's time limit, and migrations.
import type { ConnectionStoreBounds } from "@otc/server";
import { type PostgresServer, startPostgresServer } from "@otc/test-helpers/postgres-server";
import { until } from "@otc/test-helpers/until";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectionLockTimeoutError } from "../src/errors.js";
import { MIGRATIONS } from "../src/migrations.js";
import { createPostgresConnectionStore, type PostgresConnectionStore } from "../src/postgres-store.js";
import {
  type ContractSubject,
  connectionStoreContract,
  gate,
  lockTimeoutContract,
  record,
} from "./connection-store-contract.js";

let server: PostgresServer;
let admin: pg.Pool;
let schemas = 0;
/**
 * A pool of the test's own, told what to do with an idle client's error: the server's shutdown at the end of the
 * file ends its sessions (57P01), which a pool without a listener throws as an unhandled error.
 */
function quiet(pool: pg.Pool): pg.Pool {
  pool.on("error", () => {});
  return pool;
}

/** A schema no test used yet: each test starts from an empty store. */
const freshSchema = () => `contract_${++schemas}`;

beforeAll(async () => {
  server = await startPostgresServer();
  admin = quiet(new pg.Pool({ connectionString: server.url, max: 2 }));
});

afterAll(async () => {
  await admin?.end();
  await server?.close();
});

/** Sessions waiting for an advisory lock another session holds. */
async function advisoryWaiters(): Promise<number> {
  const { rows } = await admin.query<{ waiting: number }>(
    "SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
  );
  return rows[0]?.waiting ?? 0;
}

/** Two instances on one schema, as two servers behind a load balancer would have them. */
async function twoInstances(bounds?: ConnectionStoreBounds): Promise<ContractSubject> {
  const schema = freshSchema();
  const store = await createPostgresConnectionStore({ connectionString: server.url, schema, bounds });
  const other = await createPostgresConnectionStore({ connectionString: server.url, schema, bounds });
  const instances: PostgresConnectionStore[] = [store, other];
  return {
    store,
    other,
    lockWaiters: (count) =>
      until(async () => store.waitingForLock + other.waitingForLock + (await advisoryWaiters()) >= count, {
        what: `${count} callers waiting for a lock`,
      }),
    close: async () => {
      await Promise.all(instances.map((instance) => instance.close()));
    },
  };
}

connectionStoreContract("PostgresConnectionStore", twoInstances);

lockTimeoutContract(
  "PostgresConnectionStore",
  () => twoInstances(),
  (error) => error instanceof ConnectionLockTimeoutError,
);

describe("PostgresConnectionStore: migrations", () => {
  const applied = async (schema: string) =>
    (await admin.query(`SELECT version, name FROM "${schema}".otc_migrations ORDER BY version`)).rows;
  const everyMigration = MIGRATIONS.map(({ version, name }) => ({ version, name }));

  it("makes the schema, applies every migration once, and a second migrate does nothing", async () => {
    const schema = freshSchema();
    const store = await createPostgresConnectionStore({ connectionString: server.url, schema });
    try {
      expect(await applied(schema)).toEqual(everyMigration);
      await store.insert(record());
      expect(await store.migrate()).toEqual(everyMigration.map(({ version }) => version));
      expect(await applied(schema)).toEqual(everyMigration);
      expect(await store.get("conn-1")).toStrictEqual(record());
      const { rows } = await admin.query(
        "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'connections_owner'",
        [schema],
      );
      expect(rows[0]?.indexdef).toContain("(principal, user_id, created_at DESC)");
    } finally {
      await store.close();
    }
  });

  it("lets several instances that start at once migrate one fresh schema, each migration applied once", async () => {
    const schema = freshSchema();
    const made = await Promise.allSettled(
      Array.from({ length: 4 }, () => createPostgresConnectionStore({ connectionString: server.url, schema })),
    );
    const stores = made.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
    try {
      expect(made.filter((outcome) => outcome.status === "rejected")).toEqual([]);
      expect(await applied(schema)).toEqual(everyMigration);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("leaves the migrating to the caller when told, and answers a clear error before it", async () => {
    const schema = freshSchema();
    const store = await createPostgresConnectionStore({ connectionString: server.url, schema, migrate: false });
    try {
      await expect(store.get("conn-1")).rejects.toThrow(/does not exist/);
      await store.migrate();
      expect(await store.get("conn-1")).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});

describe("PostgresConnectionStore: a pool of yours", () => {
  it("queries through the pool it is given, and leaves it open on close", async () => {
    const pool = quiet(new pg.Pool({ connectionString: server.url, max: 3 }));
    const store = await createPostgresConnectionStore({ pool, schema: freshSchema() });
    await store.insert(record());
    await store.close();
    expect((await pool.query("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
    await pool.end();
  });

  it("holds one client of the pool per connection locked, however many callers wait for it", async () => {
    const pool = quiet(new pg.Pool({ connectionString: server.url, max: 2 }));
    const store = await createPostgresConnectionStore({ pool, schema: freshSchema() });
    try {
      await store.insert(record());
      const held = gate();
      const holderIn = gate();
      const first = store.withLock("conn-1", 30_000, async () => {
        holderIn.open();
        await held.promise;
      });
      await holderIn.promise;
      // Five more callers for the same connection queue in the process: the pool's other client stays free for
      // the holder's own queries.
      const waiters = Array.from({ length: 5 }, (_, index) => store.withLock("conn-1", 30_000, async () => index));
      await until(() => store.waitingForLock === 5);
      expect(pool.totalCount - pool.idleCount).toBe(1);
      expect((await store.get("conn-1"))?.id).toBe("conn-1");
      held.open();
      await first;
      expect(await Promise.all(waiters)).toEqual([0, 1, 2, 3, 4]);
    } finally {
      await store.close();
      await pool.end();
    }
  });

  it("gives up within timeoutMs when the pool has no client free for the lock", async () => {
    const pool = quiet(new pg.Pool({ connectionString: server.url, max: 1 }));
    const store = await createPostgresConnectionStore({ pool, schema: freshSchema() });
    const held = gate();
    try {
      const holderIn = gate();
      const holding = store.withLock("conn-1", 30_000, async () => {
        holderIn.open();
        await held.promise;
      });
      await holderIn.promise;
      // The only client holds conn-1's lock: conn-2's caller would wait for the pool for ever. Real time, as in the
      // lock's time limit: the limit is the point of the test.
      await expect(store.withLock("conn-2", 50, async () => "ran")).rejects.toBeInstanceOf(ConnectionLockTimeoutError);
      held.open();
      await holding;
      expect(await store.withLock("conn-2", 30_000, async () => "ran")).toBe("ran");
      expect(pool.idleCount).toBe(1);
    } finally {
      held.open();
      await store.close();
      await pool.end();
    }
  });

  it("refuses a schema name it would have to quote", async () => {
    await expect(createPostgresConnectionStore({ connectionString: server.url, schema: 'x"; DROP' })).rejects.toThrow(
      /schema must be/,
    );
  });
});
