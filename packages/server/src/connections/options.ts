/** The `connections` option (docs/protocol.md 9.7): the providers, the keys that seal their tokens, the store, and the check of the browser that finishes a flow. */

import type { CoreLogger } from "../core/call-log.js";
import type { ChallengeStore } from "../core/challenge-store.js";
import type { Clock } from "../core/clock.js";
import type { ConnectionStore } from "../core/connection-store.js";
import { ConnectionProvider, type ConnectionProviderOptions } from "./provider.js";
import { TokenSeal, type VaultKey } from "./seal.js";
import { type BrowserCheck, ConnectionVault } from "./vault.js";

/** How the server keeps users' third-party tokens. */
export interface ConnectionsOptions {
  /** The providers a user can connect accounts of; tools name them in `requirements.authorization[].id`. */
  providers: readonly ConnectionProviderOptions[];
  /** The key-encryption keys: the first seals, every one opens (rotation). From configuration, never from code. */
  keys: readonly VaultKey[];
  /**
   * Tells whether the browser finishing a flow is its user's (docs/protocol.md 9.7, `[connections.browser-bound]`),
   * from the callback request: your app's signed-in session. Required: without it anybody sent a link could bind
   * their account to another user.
   */
  verifyBrowser: BrowserCheck;
  /** Where connections are kept. Default: in this process's memory (`@otc/postgres` keeps them for many). */
  store?: ConnectionStore;
  /** Where pending flows are kept (share it, e.g. Redis, when several instances serve one public URL). */
  challengeStore?: ChallengeStore;
  /** The most connections one user holds (`[connections.bounded]`). Default 50; give a store its own bounds too. */
  maxConnectionsPerUser?: number;
  /**
   * Whether tokens a client sends in `context.authorization` for these providers are used. Default true; false
   * makes the vault the only source (`[connections.client-tokens]`).
   */
  acceptClientTokens?: boolean;
}

/** The vault of a server's `connections` option. */
export function createVault(
  options: ConnectionsOptions,
  clock: Clock,
  logger: CoreLogger | undefined,
  publicUrl: string | undefined,
): ConnectionVault {
  return new ConnectionVault({
    providers: (options.providers ?? []).map((provider) => new ConnectionProvider(provider, clock)),
    seal: new TokenSeal(options.keys),
    store: options.store,
    challenges: options.challengeStore,
    verifyBrowser: options.verifyBrowser,
    maxPerUser: options.maxConnectionsPerUser,
    clock,
    logger,
    publicUrl,
  });
}
