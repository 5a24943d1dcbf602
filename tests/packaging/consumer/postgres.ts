// @otc/postgres's README sample: a connection stored and read back in the embedded store (PGlite, in a folder, across
// a reopen: no server) and in the PostgreSQL whose URL is the first argument, by two stores over one database as two
// instances of a Tool Server would make them; each typed as the store of @otc/server's `connections` option. The
// README's line installs @otc/server without Express: its /node entry, which loads none.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import {
  ConnectionLockTimeoutError,
  createEmbeddedConnectionStore,
  createPostgresConnectionStore,
  type EmbeddedConnectionStore,
  type PostgresConnectionStore,
} from "@otc/postgres";
import {
  type ConnectionRecord,
  type ConnectionsOptions,
  ConnectionLockTimeoutError as ServerLockError,
} from "@otc/server/node";

/** What a server's `connections: { providers, keys, verifyBrowser, store }` takes: the stores must be that. */
type ServerStore = NonNullable<ConnectionsOptions["store"]>;

const databaseUrl = process.argv[2];
if (databaseUrl === undefined) {
  throw new Error("Usage: node out/postgres.js <postgres://...>");
}

const now = Date.now();
const record: ConnectionRecord = {
  id: `conn-${process.pid}`,
  principal: "my-app",
  userId: "alice",
  provider: "example",
  status: "active",
  scopes: ["openid", "email"],
  account: "alice@example.com",
  createdAt: now,
  updatedAt: now,
  expiresAt: now + 3_600_000,
  // What the server seals (AES-256-GCM) before a store sees it: the store keeps it as given.
  tokens: { kid: "k1", iv: "aXY", data: "c2VhbGVk" },
  version: 1,
};

/** Whether `store` answers `record` as it was written, by id and in its owner's list. */
async function readsBack(store: ServerStore): Promise<boolean> {
  const byId = await store.get(record.id);
  const listed = await store.list("my-app", "alice");
  return isDeepStrictEqual(byId, record) && isDeepStrictEqual(listed, [record]);
}

// One instance, no server: a folder, closed and opened again.
const folder = await mkdtemp(join(tmpdir(), "otc-consumer-pglite-"));
const dataDir = join(folder, "connections");
let embedded: boolean;
try {
  const first: EmbeddedConnectionStore = await createEmbeddedConnectionStore({ dataDir });
  await first.insert(record);
  await first.close();
  const again = await createEmbeddedConnectionStore({ dataDir });
  try {
    embedded = await readsBack(again);
  } finally {
    await again.close();
  }
} finally {
  await rm(folder, { recursive: true, force: true });
}

// Several instances: two stores over one database (a schema of this run's own), as two servers would make them.
const schema = `packaging_${process.pid}`;
const stores: PostgresConnectionStore[] = [];
let postgres: Record<string, unknown>;
try {
  for (let i = 0; i < 2; i++) {
    stores.push(
      await createPostgresConnectionStore({ connectionString: databaseUrl, schema, bounds: { maxPerUser: 20 } }),
    );
  }
  const [one, two] = stores as [PostgresConnectionStore, PostgresConnectionStore];
  await one.insert(record);
  const seen = await readsBack(two);
  const next = { ...record, status: "auth_required" as const, updatedAt: now + 1, version: 2 };
  // Compare-and-set: the first write from version 1 wins; a second from version 1 comes too late.
  const written = [await two.update(next, 1), await one.update(next, 1)];
  const status = (await one.get(record.id))?.status;
  const locked = await one.withLock(record.id, 5_000, async () => (await two.get(record.id))?.version);
  await one.delete(record.id);
  postgres = { seen, written, status, locked, deleted: (await two.get(record.id)) === undefined };
  await one.pool.query(`DROP SCHEMA ${schema} CASCADE`);
} finally {
  await Promise.all(stores.map((store) => store.close()));
}

// biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
console.log(
  JSON.stringify({
    embedded,
    postgres,
    // One @otc/server in the project: the error a store throws is the class the server (and the user) catch.
    oneServer: ConnectionLockTimeoutError === ServerLockError,
  }),
);
