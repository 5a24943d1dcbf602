// The contract against @otc/server's MemoryConnectionStore: the reference the SQL stores are held to, its lock's time limit on a test clock.
import { ConnectionLockTimeoutError, MemoryConnectionStore } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { until } from "@otc/test-helpers/until";
import { connectionStoreContract, lockTimeoutContract } from "./connection-store-contract.js";

connectionStoreContract("MemoryConnectionStore", async (bounds) => {
  const store = new MemoryConnectionStore(bounds);
  return {
    store,
    lockWaiters: (count) => until(() => store.waitingForLock >= count, { what: `${count} callers waiting for a lock` }),
    close: async () => {},
  };
});

lockTimeoutContract(
  "MemoryConnectionStore",
  async () => {
    const clock = new ManualClock();
    const store = new MemoryConnectionStore({ clock });
    return {
      store,
      lockWaiters: (count) => until(() => store.waitingForLock >= count),
      advance: (ms) => clock.advance(ms),
      close: async () => {},
    };
  },
  (error) => error instanceof ConnectionLockTimeoutError,
);
