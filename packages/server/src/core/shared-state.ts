/** Faults of the server's shared state (a store or provider that cannot answer) as the 503 a client may retry. */
import { ServerConfigError, WireError } from "./errors.js";

/** A fault of shared state (a store or provider that cannot answer) as the 503 the client gets. */
export function sharedStateUnavailable(cause: unknown): WireError {
  return new WireError("unavailable", "The server's shared state is unavailable", {
    developerMessage: "A store or authorization provider did not answer; retry shortly.",
    headers: { "Retry-After": "1" },
    cause,
  });
}

/** Runs `step`, turning any failure other than a wire error into {@link sharedStateUnavailable}. */
export async function orUnavailable<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    // A configuration fault (no base URL to build a link from) is the server's: a 500, not a store to retry.
    throw error instanceof WireError || error instanceof ServerConfigError ? error : sharedStateUnavailable(error);
  }
}
