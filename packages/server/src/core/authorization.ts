/** Tool authorization: providers that run challenges, and the store of tokens the server holds for users. */
import type { ChallengeStatus } from "@otc/types";
import { setBounded } from "./bounded-map.js";

/** A challenge's status, as its check_url answers it (the spec's AuthorizationChallengeCheckResponse). */
export type { ChallengeStatus };

/** A token the server holds for one user and one provider. */
export interface StoredToken {
  token: string;
  /** The scopes the token grants. */
  scopes: readonly string[];
  /** Epoch milliseconds after which the token is not used; absent means no expiry. */
  expiresAt?: number;
}

/**
 * Whose token it is: the authenticated principal that obtained it and the user it acts for. A token
 * is never used for another principal, whatever `user_id` that principal sends.
 */
export interface TokenOwner {
  /** Who the server authenticated when the challenge started (`anonymous` when authentication is off). */
  principal: string;
  /** The request's `context.user_id`. */
  userId: string;
}

/** Tokens by (principal, user id, provider id). A shared store lets several instances use the same tokens. */
export interface TokenStore {
  get(owner: TokenOwner, providerId: string): Promise<StoredToken | undefined>;
  set(owner: TokenOwner, providerId: string, token: StoredToken): Promise<void>;
  delete(owner: TokenOwner, providerId: string): Promise<void>;
}

/** What a provider is told when the server starts a challenge. */
export interface StartChallengeInput {
  /** The challenge's id, made by the server; unique, URL-safe. */
  challengeId: string;
  /** Whose token the challenge obtains: store it under exactly this owner. */
  owner: TokenOwner;
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

const tokenKey = (owner: TokenOwner, providerId: string) => JSON.stringify([owner.principal, owner.userId, providerId]);

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

  async get(owner: TokenOwner, providerId: string): Promise<StoredToken | undefined> {
    const key = tokenKey(owner, providerId);
    const token = this.tokens.get(key);
    if (token?.expiresAt !== undefined && token.expiresAt <= this.now()) {
      this.tokens.delete(key);
      return undefined;
    }
    return token;
  }

  async set(owner: TokenOwner, providerId: string, token: StoredToken): Promise<void> {
    setBounded(this.tokens, tokenKey(owner, providerId), token, this.maxEntries);
  }

  async delete(owner: TokenOwner, providerId: string): Promise<void> {
    this.tokens.delete(tokenKey(owner, providerId));
  }
}
