// The contract against @otc/server's MemoryConnectionStore: the reference the SQL stores are held to.
import { setImmediate } from "node:timers/promises";
import { MemoryConnectionStore } from "@otc/server";
import { connectionStoreContract } from "./connection-store-contract.js";

connectionStoreContract("MemoryConnectionStore", async (bounds) => ({
  store: new MemoryConnectionStore(bounds),
  // No I/O: once the pending callbacks have run, a caller the lock does not hold back would be in its work.
  lockWaiters: async () => {
    await setImmediate();
    await setImmediate();
  },
  close: async () => {},
}));
