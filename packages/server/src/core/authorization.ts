/** Tool authorization: providers that run challenges, and the store of tokens the server holds for users. */
import { setBounded } from "./bounded-map.js";

/** A challenge's status, as its check_url answers it. */
export type ChallengeStatus = "pending" | "completed" | "failed";

/** A token the server holds for one user and one provider. */
export interface StoredToken {
  token: string;
  /** The scopes the token grants. */
  scopes: readonly string[];
  /** Epoch milliseconds after which the token is not used; absent means no expiry. */
  expiresAt?: number;
}

/** Tokens by (user id, provider id). A shared store lets several instances use the same tokens. */
export interface TokenStore {
  get(userId: string, providerId: string): Promise<StoredToken | undefined>;
  set(userId: string, providerId: string, token: StoredToken): Promise<void>;
  delete(userId: string, providerId: string): Promise<void>;
}

/** What a provider is told when the server starts a challenge. */
export interface StartChallengeInput {
  /** The challenge's id, made by the server; unique, URL-safe. */
  challengeId: string;
  userId: string;
  /** The scopes the tool needs. */
  scopes: readonly string[];
  /** The server's public base URL (no trailing slash), for links back to it. */
  baseUrl: string;
  /** Where the provider puts the token once the user completes the challenge. */
  tokens: TokenStore;
}

/**
 * An authorization provider (e.g. an OAuth 2.0 identity provider) that can ask a user for consent.
 * Once a challenge completes, the provider stores the user's token in the given TokenStore.
 */
export interface AuthorizationProvider {
  /** The id tools name in `requirements.authorization[].id`: letters, digits, `_` and `-`. */
  readonly id: string;
  /** Starts a challenge; returns where the user completes it. */
  startChallenge(input: StartChallengeInput): Promise<{ url: string }>;
  /** The status of a challenge this provider started; undefined when it is unknown or expired. */
  checkChallenge(challengeId: string): Promise<ChallengeStatus | undefined>;
}

/** Options of {@link MemoryTokenStore}. */
export interface MemoryTokenStoreOptions {
  /** The most tokens kept; the oldest go first. Default 10,000. */
  maxEntries?: number;
  now?: () => number;
}

/** An in-process token store, bounded in size, honouring each token's expiry. */
export class MemoryTokenStore implements TokenStore {
  private readonly tokens = new Map<string, StoredToken>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: MemoryTokenStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  async get(userId: string, providerId: string): Promise<StoredToken | undefined> {
    const key = JSON.stringify([userId, providerId]);
    const token = this.tokens.get(key);
    if (token?.expiresAt !== undefined && token.expiresAt <= this.now()) {
      this.tokens.delete(key);
      return undefined;
    }
    return token;
  }

  async set(userId: string, providerId: string, token: StoredToken): Promise<void> {
    setBounded(this.tokens, JSON.stringify([userId, providerId]), token, this.maxEntries);
  }

  async delete(userId: string, providerId: string): Promise<void> {
    this.tokens.delete(JSON.stringify([userId, providerId]));
  }
}
