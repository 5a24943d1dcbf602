/** The options of the client's methods for the connections extension (docs/protocol.md 9.7): a user's accounts at third-party providers, whose tokens the server keeps. */
import type { CallOptions } from "./client.js";

/** Options of {@link OxpClient.listConnections} and {@link OxpClient.disconnect}. */
export interface ConnectionOptions extends CallOptions {
  /**
   * The user whose connections these are, named by a trusted caller (an API key, a section 5 JWT); sent as `user_id`.
   * Leave it out with an OAuth access token: the user is then the token's subject, and naming another is a 403 unless
   * the token may act for other users.
   */
  userId?: string;
}

/** Options of {@link OxpClient.connect}. */
export interface ConnectOptions extends ConnectionOptions {
  /** The provider's id, as the discovery document's `extension_info.connections.providers` lists it. */
  provider: string;
  /** The scopes to ask the provider for. Default: the provider's own, from the server's configuration. */
  scopes?: string[];
}

/** Options of {@link OxpClient.waitForConnection}. */
export interface WaitForConnectionOptions extends CallOptions {
  /** The wait between two reads of the flow's check_url, in milliseconds, on the client's clock. Default 1,000. */
  pollIntervalMs?: number;
}

/** The default of {@link WaitForConnectionOptions.pollIntervalMs}, also `waitForAuthorization`'s interval. */
export const DEFAULT_POLL_INTERVAL_MS = 1_000;

/**
 * A `pollIntervalMs` the client can wait: a finite number of milliseconds, 0 or more, or a RangeError. NaN or a
 * negative wait would make every timer fire at once, and the client read the check_url in a tight loop.
 */
export function pollIntervalOf(value: number | undefined): number {
  if (value === undefined) {
    return DEFAULT_POLL_INTERVAL_MS;
  }
  if (!(Number.isFinite(value) && value >= 0)) {
    throw new RangeError(`pollIntervalMs must be a finite number of milliseconds, 0 or more (got ${value})`);
  }
  return value;
}

/** The `user_id` query parameter of `GET /connections` and `DELETE /connections/{id}`, when a user is named. */
export const userQuery = (userId: string | undefined): { user_id?: string } =>
  userId === undefined ? {} : { user_id: userId };
