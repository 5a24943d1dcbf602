// The error a store's lock gives when it cannot be had in time.

/** Thrown by `withLock` when another caller held the connection's lock for longer than `timeoutMs`. */
export class ConnectionLockTimeoutError extends Error {
  constructor(
    /** The connection whose lock was not had. */
    readonly connectionId: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`The lock of connection ${connectionId} was not free within ${timeoutMs} ms`, options);
    this.name = "ConnectionLockTimeoutError";
  }
}
