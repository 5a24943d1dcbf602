// The embedded store on PGlite: the contract, the lock's time limit, and a database kept in a folder across restarts.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { ConnectionStoreBounds } from "@otc/server";
import { until } from "@otc/test-helpers/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEmbeddedConnectionStore, EmbeddedConnectionStore } from "../src/embedded-store.js";
import { ConnectionLockTimeoutError } from "../src/errors.js";
import { MIGRATIONS } from "../src/migrations.js";
import {
  type ContractSubject,
  connectionStoreContract,
  lockTimeoutContract,
  record,
} from "./connection-store-contract.js";

// One PGlite for the contract (each starts in about a second), a fresh schema per test; the factory itself is
// tested in a folder below.
let shared: PGlite;
let schemas = 0;

beforeAll(async () => {
  shared = await PGlite.create();
});

afterAll(async () => {
  await shared?.close();
});

async function inMemory(bounds?: ConnectionStoreBounds): Promise<ContractSubject> {
  const store = new EmbeddedConnectionStore(shared, { bounds, schema: `contract_${++schemas}` });
  await store.migrate();
  return {
    store,
    lockWaiters: (count) => until(() => store.waitingForLock >= count, { what: `${count} callers waiting for a lock` }),
    close: async () => {},
  };
}

connectionStoreContract("EmbeddedConnectionStore", inMemory);

lockTimeoutContract(
  "EmbeddedConnectionStore",
  () => inMemory(),
  (error) => error instanceof ConnectionLockTimeoutError,
);

describe("createEmbeddedConnectionStore", () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), "otc-pglite-"));
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it("is in memory when given no folder", async () => {
    const first = await createEmbeddedConnectionStore();
    await first.insert(record());
    expect(first.db.dataDir).toBeUndefined();
    await first.close();
    const second = await createEmbeddedConnectionStore();
    try {
      expect(await second.get("conn-1")).toBeUndefined();
    } finally {
      await second.close();
    }
  });

  it("keeps its connections across a restart, migrating once", async () => {
    const dataDir = join(folder, "vault");
    const first = await createEmbeddedConnectionStore({ dataDir, schema: "vault" });
    await first.insert(record());
    await first.close();

    const again = await createEmbeddedConnectionStore({ dataDir, schema: "vault" });
    try {
      expect(await again.get("conn-1")).toStrictEqual(record());
      const { rows } = await again.db.query("SELECT version, name FROM vault.otc_migrations ORDER BY version");
      expect(rows).toEqual(MIGRATIONS.map(({ version, name }) => ({ version, name })));
    } finally {
      await again.close();
    }
  });
});
