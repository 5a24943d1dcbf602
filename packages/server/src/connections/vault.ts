/**
 * The connections vault (docs/protocol.md 9.7): users' connections to third-party providers, made through each
 * provider's authorization code flow with PKCE, their tokens sealed in a {@link ConnectionStore}, refreshed
 * single-flight, revoked on delete; and the tokens put into calls through the requirement checks of section 4.
 */
import { type Connection, constantTimeEqual } from "@otc/types";
import * as base64url from "jose/base64url";
import { generateRandomCodeVerifier } from "oauth4webapi";
import type {
  AuthorizationProvider,
  ChallengeStatus,
  StartChallengeInput,
  StoredToken,
  TokenOwner,
  TokenStore,
} from "../core/authorization.js";
import { setBounded } from "../core/bounded-map.js";
import type { CoreLogger } from "../core/call-log.js";
import { type ChallengeStore, ChallengeStoreFullError, MemoryChallengeStore } from "../core/challenge-store.js";
import type { Clock } from "../core/clock.js";
import {
  CONNECTION_STORE_DEFAULTS,
  ConnectionLockTimeoutError,
  type ConnectionRecord,
  type ConnectionStore,
  ConnectionStoreFullError,
  MemoryConnectionStore,
} from "../core/connection-store.js";
import { ServerConfigError, WireError } from "../core/errors.js";
import { arrivalOrigin, noRoom, page, usedAlready } from "./callback-pages.js";
import { type ConnectionProvider, ProviderRefusal, unavailableOnFailure } from "./provider.js";
import type { TokenSeal } from "./seal.js";

/** Where a provider sends the browser back, below the server's public URL. */
export const CALLBACK_PATH = "/connections/callback";
/** A token this close to its expiry is refreshed before a call uses it. */
const REFRESH_MARGIN_MS = 60_000;
/** How many connections' opened tokens are kept, the least recently opened going first. */
const OPENED_KEPT = 1_000;
/** The longest a refresh waits for a connection's lock. */
const REFRESH_LOCK_MS = 15_000;
/**
 * The longest a callback waits for its connection's lock, which a callback for the same flow holds while it checks the
 * browser, exchanges the code and stores the tokens: longer than two of the provider's requests may take.
 */
export const CALLBACK_LOCK_MS = 30_000;

/** The tokens a connection holds, as sealed. */
interface HeldTokens {
  access_token: string;
  refresh_token?: string;
}

/**
 * Whether the browser that came back from the provider belongs to the flow's user (`[connections.browser-bound]`):
 * the host application's check of its own signed-in session (a cookie it set), given the callback request.
 */
export type BrowserCheck = (request: Request, owner: TokenOwner) => boolean | Promise<boolean>;

/** What the vault needs besides its providers. */
export interface VaultParts {
  providers: readonly ConnectionProvider[];
  seal: TokenSeal;
  store: ConnectionStore | undefined;
  challenges: ChallengeStore | undefined;
  verifyBrowser: BrowserCheck;
  /** The most connections one user holds; the default store is made with it. Default 50. */
  maxPerUser?: number | undefined;
  clock: Clock;
  logger: Pick<CoreLogger, "warn" | "error"> | undefined;
  /**
   * The server's `publicUrl`, if it has one: a callback is taken to have come on its scheme, as the server's links
   * are (`[connections.callback-origin]`).
   */
  publicUrl?: string | undefined;
}

/** The vault. */
export class ConnectionVault {
  readonly providers: ReadonlyMap<string, ConnectionProvider>;
  private readonly seal: TokenSeal;
  private readonly store: ConnectionStore;
  private readonly challenges: ChallengeStore;
  private readonly verifyBrowser: BrowserCheck;
  private readonly clock: Clock;
  private readonly logger: VaultParts["logger"];
  private readonly maxPerUser: number;
  /** Opened tokens by connection id, with the iv they were sealed with; bounded, each dropped when resealed. */
  private readonly openedTokens = new Map<string, { iv: string; kid: string; context: string; held: HeldTokens }>();
  /** The server's `publicUrl`, whose scheme a callback is taken to have come on (see {@link arrivalOrigin}). */
  private readonly publicUrl: string | undefined;

  constructor(parts: VaultParts) {
    const providers = new Map<string, ConnectionProvider>();
    for (const provider of parts.providers) {
      if (providers.has(provider.id)) {
        throw new ServerConfigError(`connections.providers: the id ${provider.id} is given twice`);
      }
      providers.set(provider.id, provider);
    }
    if (providers.size === 0) {
      throw new ServerConfigError("connections.providers must name at least one provider");
    }
    if (typeof parts.verifyBrowser !== "function") {
      throw new ServerConfigError(
        "connections.verifyBrowser is required: it tells that the browser finishing a connection is its user's (your app's signed-in session)",
      );
    }
    this.providers = providers;
    this.seal = parts.seal;
    this.maxPerUser = parts.maxPerUser ?? CONNECTION_STORE_DEFAULTS.maxPerUser;
    this.store = parts.store ?? new MemoryConnectionStore({ maxPerUser: this.maxPerUser, clock: parts.clock });
    this.challenges = parts.challenges ?? new MemoryChallengeStore({ now: () => parts.clock.now() });
    this.verifyBrowser = parts.verifyBrowser;
    this.clock = parts.clock;
    this.logger = parts.logger;
    this.publicUrl = parts.publicUrl;
  }

  /** The 1.0 authorization providers of the vault's providers: a call missing a token starts a connection flow. */
  authorizationProviders(): AuthorizationProvider[] {
    return [...this.providers.values()].map((provider) => ({
      id: provider.id,
      startChallenge: async (input: StartChallengeInput) => ({
        url: (await this.startFlow(provider, input, await this.store.list(input.owner.principal, input.owner.userId)))
          .url,
      }),
      checkChallenge: async (challengeId: string): Promise<ChallengeStatus | undefined> =>
        (await this.challenges.get(challengeId))?.status,
    }));
  }

  /** The token store calls read: the vault's providers' tokens from the vault, every other one from `others`. */
  tokenStore(others: TokenStore): TokenStore {
    return {
      get: (owner, providerId) =>
        this.providers.has(providerId) ? this.tokenFor(owner, providerId) : others.get(owner, providerId),
      set: (owner, providerId, token) =>
        this.providers.has(providerId) ? Promise.resolve() : others.set(owner, providerId, token),
      delete: (owner, providerId) =>
        this.providers.has(providerId) ? Promise.resolve() : others.delete(owner, providerId),
    };
  }

  /** `GET /connections`: the owner's connections, newest first, without a token. */
  async list(owner: TokenOwner): Promise<Connection[]> {
    return (await this.store.list(owner.principal, owner.userId))
      .filter((record) => record.status !== "pending")
      .map(wireConnection);
  }

  /** `POST /connections`: a new flow for the owner; its connection's id, the provider's page, its challenge id. */
  async create(
    owner: TokenOwner,
    providerId: string,
    scopes: readonly string[] | undefined,
    baseUrl: string,
  ): Promise<{ id: string; url: string; challengeId: string }> {
    const provider = this.providers.get(providerId);
    if (!provider) {
      throw new WireError("bad_request", `No provider '${providerId.slice(0, 64)}' can be connected here`, {
        developerMessage: `The providers are ${[...this.providers.keys()].join(", ")} (discovery's extension_info.connections).`,
      });
    }
    const owned = await this.store.list(owner.principal, owner.userId);
    const reconnects = owned.some((record) => record.provider === providerId && record.status === "auth_required");
    if (owned.length >= this.maxPerUser && !reconnects) {
      // The store enforces its bound when the flow completes; this says so before the user signs in for nothing.
      throw new WireError("bad_request", "This user holds the most connections allowed", {
        developerMessage: "Delete a connection (DELETE /connections/{id}) before making another.",
      });
    }
    const challengeId = `${provider.id}.${crypto.randomUUID()}`;
    const flow = await this.startFlow(
      provider,
      { owner, scopes: scopes ?? provider.defaultScopes, baseUrl, challengeId },
      owned,
    );
    return { ...flow, challengeId };
  }

  /**
   * Starts a flow under `challengeId` for an owner holding `owned`: its state, PKCE verifier and the connection it makes kept with the challenge
   * (bounded and expiring as challenges are); answers the provider's authorization page.
   */
  private async startFlow(
    provider: ConnectionProvider,
    { owner, scopes, baseUrl, challengeId }: Pick<StartChallengeInput, "owner" | "scopes" | "baseUrl" | "challengeId">,
    owned: readonly ConnectionRecord[],
  ): Promise<{ id: string; url: string }> {
    const existing = owned.find((record) => record.provider === provider.id && record.status === "auth_required");
    // A flow started because a refresh failed connects the same connection again.
    const id = existing?.id ?? `c_${base64url.encode(crypto.getRandomValues(new Uint8Array(16)))}`;
    const secret = base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
    const codeVerifier = generateRandomCodeVerifier();
    const redirectUri = `${baseUrl}${CALLBACK_PATH}`;
    try {
      await this.challenges.add(challengeId, {
        owner,
        scopes,
        data: { secret, codeVerifier, redirectUri, connection: id, kind: "connection" },
      });
    } catch (error) {
      if (!(error instanceof ChallengeStoreFullError)) {
        throw error;
      }
      throw new WireError("unavailable", "Too many connections are being made right now", {
        developerMessage: `The server holds its maximum of ${error.maxChallenges} pending flows; retry shortly.`,
        headers: { "Retry-After": String(Math.max(1, Math.ceil(error.retryAfterMs / 1000))) },
      });
    }
    const url = await unavailableOnFailure(provider, () =>
      provider.authorizationUrl({ state: `${challengeId}~${secret}`, codeVerifier, scopes, redirectUri }),
    );
    return { id, url };
  }

  /**
   * The callback of a flow (`GET /connections/callback`, from the user's browser): the state checked and spent, the
   * browser checked to be the flow's user's, the code exchanged, the tokens sealed and stored. Answers a page.
   */
  async callback(request: Request): Promise<Response> {
    const parameters = new URL(request.url).searchParams;
    const state = parameters.get("state") ?? "";
    const cut = state.lastIndexOf("~");
    const challengeId = cut > 0 ? state.slice(0, cut) : "";
    const challenge = challengeId === "" ? undefined : await this.challenges.get(challengeId);
    const secret = challenge?.data.secret;
    if (
      challenge?.data.kind !== "connection" ||
      typeof secret !== "string" ||
      !constantTimeEqual(state.slice(cut + 1), secret)
    ) {
      return page(
        400,
        "This link is not valid",
        "It is unknown, has expired, or was used already. Start again from your app.",
      );
    }
    const expected = new URL(challenge.data.redirectUri as string).origin;
    if (arrivalOrigin(request, this.publicUrl) !== expected) {
      // `[connections.callback-origin]`: the provider sent the browser to the redirect URI exactly, so a callback
      // under another of the server's names was carried there by something else, with that name's cookies for the
      // browser check. It is refused before anything is decided: the state stays unspent and the flow still
      // completes at its own origin. Spending it here would let anybody who reaches the server under another name
      // burn users' flows from there; and the provider refuses a code sent with another redirect URI anyway.
      throw new WireError("bad_request", "This callback belongs to another origin of this server", {
        developerMessage: `A flow's callback is handled only at the origin of the redirect URI it sent the provider (${expected}); the flow is untouched and completes there.`,
        headers: { "Cache-Control": "no-store" },
      });
    }
    if (challenge.status !== "pending") {
      return usedAlready();
    }
    const provider = this.providers.get(challengeId.split(".")[0] ?? "") as ConnectionProvider;
    // A state is good once, and a code is exchanged once: callbacks for one flow (a browser sending it twice, a
    // link replayed) take turns under the connection's lock, which every instance sharing the store respects, and
    // each one after the first finds the flow decided. Checking and deciding outside the lock would let a second
    // callback exchange the code again (the provider then revokes what the first got), or fail a flow the first
    // completes.
    try {
      return await this.store.withLock(challenge.data.connection as string, CALLBACK_LOCK_MS, () =>
        this.finishFlow(request, { parameters, state, challengeId, provider }),
      );
    } catch (error) {
      if (!(error instanceof ConnectionLockTimeoutError)) {
        throw error;
      }
      return page(
        409,
        "This link is being used already",
        "Wait for that window to finish, or start again from your app.",
      );
    }
  }

  /** The rest of a callback, under the connection's lock: the flow read again, the browser checked, the code exchanged. */
  private async finishFlow(
    request: Request,
    {
      parameters,
      state,
      challengeId,
      provider,
    }: { parameters: URLSearchParams; state: string; challengeId: string; provider: ConnectionProvider },
  ): Promise<Response> {
    const challenge = await this.challenges.get(challengeId);
    if (challenge?.status !== "pending") {
      return challenge
        ? usedAlready()
        : page(400, "This link is not valid", "It has expired. Start again from your app.");
    }
    if (!(await this.verifyBrowser(request, challenge.owner))) {
      // Spent: whoever was sent the link cannot try again, and the user who started it starts over.
      await this.challenges.decide(challengeId, "failed");
      return page(
        403,
        "This connection is not yours to finish",
        "Sign in to the app as the user who started it, then start again.",
      );
    }
    const connection = challenge.data.connection as string;
    if (await this.pastUserBound(connection, challenge.owner)) {
      // `[connections.bounded]`, before the code is exchanged: the provider issues no tokens the vault could not keep.
      await this.challenges.decide(challengeId, "failed");
      return noRoom("user");
    }
    const flow = {
      state,
      codeVerifier: challenge.data.codeVerifier as string,
      redirectUri: challenge.data.redirectUri as string,
    };
    let tokens: Awaited<ReturnType<ConnectionProvider["exchange"]>>;
    try {
      tokens = await provider.exchange(parameters, flow);
    } catch (error) {
      await this.challenges.decide(challengeId, "failed");
      if (error instanceof ProviderRefusal) {
        return page(
          400,
          `${provider.name} did not connect`,
          `It answered ${error.error.slice(0, 64)}. Start again from your app.`,
        );
      }
      this.logger?.warn({ provider: provider.id, err: describe(error) }, "a connection's code could not be exchanged");
      return page(502, `${provider.name} could not be reached`, "Start again from your app in a moment.");
    }
    try {
      await this.saveConnection(connection, challenge, provider, tokens);
    } catch (error) {
      await this.challenges.decide(challengeId, "failed");
      // Tokens the vault does not keep are of use to nobody: they are revoked rather than left live at the provider.
      await this.revokeAtProvider(provider, {
        access_token: tokens.accessToken,
        ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}),
      });
      if (error instanceof ConnectionStoreFullError) {
        if (error.bound === "total") {
          this.logger?.warn({ provider: provider.id }, "the connection store holds the most connections it may");
        }
        return noRoom(error.bound);
      }
      this.logger?.error({ provider: provider.id, err: describe(error) }, "a connection could not be stored");
      return page(503, "The connection could not be saved", "Start again from your app in a moment.");
    }
    await this.challenges.decide(challengeId, "completed");
    return page(200, `${provider.name} is connected`, "You can close this window and go back to your app.");
  }

  /** `DELETE /connections/{id}`: revoked at the provider where it can be (failures logged), then deleted; a 404 for another owner's. */
  async delete(owner: TokenOwner, id: string): Promise<void> {
    const record = await this.store.get(id);
    if (!record || record.principal !== owner.principal || record.userId !== owner.userId) {
      throw new WireError("not_found", "No such connection", {
        developerMessage: "The id is unknown, or the connection is another user's.",
      });
    }
    const provider = this.providers.get(record.provider);
    if (provider && record.tokens) {
      let held: HeldTokens | undefined;
      try {
        held = (await this.seal.open(record.tokens, sealContext(record))) as HeldTokens;
      } catch (error) {
        this.logger?.warn(
          { provider: record.provider, err: describe(error) },
          "a connection could not be revoked at its provider",
        );
      }
      if (held) {
        await this.revokeAtProvider(provider, held);
      }
    }
    await this.store.delete(id);
    this.openedTokens.delete(id);
  }

  /**
   * A call's token from the vault (`[connections.at-call-time]`): the owner's newest active connection to the
   * provider, refreshed first when it expires soon, once across every instance sharing the store.
   */
  async tokenFor(owner: TokenOwner, providerId: string): Promise<StoredToken | undefined> {
    const record = (await this.store.list(owner.principal, owner.userId)).find(
      (candidate) => candidate.provider === providerId && candidate.status === "active",
    );
    if (!record?.tokens) {
      return undefined;
    }
    if (!this.expiresSoon(record)) {
      return this.storedToken(record);
    }
    return this.store.withLock(record.id, REFRESH_LOCK_MS, async () => {
      // Another caller may have refreshed it while this one waited for the lock.
      const fresh = await this.store.get(record.id);
      if (!fresh?.tokens || fresh.status !== "active") {
        return undefined;
      }
      return this.expiresSoon(fresh) ? this.refreshed(fresh) : this.storedToken(fresh);
    });
  }

  private expiresSoon(record: ConnectionRecord): boolean {
    return record.expiresAt !== undefined && record.expiresAt - REFRESH_MARGIN_MS <= this.clock.now();
  }

  private async storedToken(record: ConnectionRecord): Promise<StoredToken | undefined> {
    const held = await this.opened(record);
    if (!held) {
      return undefined;
    }
    return {
      token: held.access_token,
      scopes: record.scopes,
      ...(record.expiresAt === undefined ? {} : { expiresAt: record.expiresAt }),
    };
  }

  /** Refreshes a connection under its lock; a refusal marks it `auth_required` and answers nothing. */
  private async refreshed(record: ConnectionRecord): Promise<StoredToken | undefined> {
    const provider = this.providers.get(record.provider);
    const held = await this.opened(record);
    if (!held) {
      return undefined;
    }
    if (!provider || !held.refresh_token) {
      await this.markAuthRequired(record);
      return undefined;
    }
    let tokens: Awaited<ReturnType<ConnectionProvider["refresh"]>>;
    try {
      tokens = await provider.refresh(held.refresh_token);
    } catch (error) {
      if (error instanceof ProviderRefusal) {
        // Who and why, for the operator: the user is asked to connect again.
        this.logger?.warn(
          { connection: record.id, provider: record.provider, err: error.error },
          "the provider refused a connection's refresh",
        );
        await this.markAuthRequired(record);
        return undefined;
      }
      this.logger?.warn({ provider: record.provider, err: describe(error) }, "a connection could not be refreshed");
      throw new WireError("unavailable", `${provider.name} cannot be reached to refresh the user's connection`, {
        developerMessage: "The provider did not answer the refresh; retry shortly.",
        headers: { "Retry-After": "5" },
      });
    }
    const next: ConnectionRecord = {
      ...record,
      scopes: tokens.scopes ?? record.scopes,
      updatedAt: this.clock.now(),
      version: record.version + 1,
      tokens: await this.seal.seal(
        // A provider that does not rotate refresh tokens keeps the one it gave.
        { access_token: tokens.accessToken, refresh_token: tokens.refreshToken ?? held.refresh_token },
        sealContext(record),
      ),
    };
    if (tokens.expiresAt === undefined) {
      delete next.expiresAt;
    } else {
      next.expiresAt = tokens.expiresAt;
    }
    if (!(await this.store.update(next, record.version))) {
      throw new WireError("unavailable", "The user's connection changed while it was refreshed", {
        developerMessage: "Retry the call.",
        headers: { "Retry-After": "1" },
      });
    }
    return this.storedToken(next);
  }

  /**
   * A record's tokens; undefined (and logged) when they do not open: sealed for another connection, or with a key no
   * longer configured. Such a connection serves no call, and the user is asked to connect again.
   */
  private async opened(record: ConnectionRecord): Promise<HeldTokens | undefined> {
    const sealed = record.tokens as NonNullable<ConnectionRecord["tokens"]>;
    const context = sealContext(record);
    // Opening costs a Web Crypto job (about 40 us of CPU on Node 20), paid once per sealed value: every seal draws a
    // new iv, so the same iv under the same key and context is the same value, already opened.
    const known = this.openedTokens.get(record.id);
    if (known && known.iv === sealed.iv && known.kid === sealed.kid && known.context === context) {
      return known.held;
    }
    try {
      const held = (await this.seal.open(sealed, context)) as HeldTokens;
      setBounded(this.openedTokens, record.id, { iv: sealed.iv, kid: sealed.kid, context, held }, OPENED_KEPT);
      return held;
    } catch (error) {
      this.logger?.error(
        { connection: record.id, provider: record.provider, err: describe(error) },
        "a connection's tokens do not open",
      );
      return undefined;
    }
  }

  private async markAuthRequired(record: ConnectionRecord): Promise<void> {
    this.openedTokens.delete(record.id);
    const next: ConnectionRecord = {
      ...record,
      status: "auth_required",
      updatedAt: this.clock.now(),
      version: record.version + 1,
    };
    // The tokens are of no use any more: none is kept.
    delete next.tokens;
    delete next.expiresAt;
    await this.store.update(next, record.version);
  }

  /** Revokes tokens at their provider (the refresh token where there is one, RFC 7009); a failure is logged, never thrown. */
  private async revokeAtProvider(provider: ConnectionProvider, held: HeldTokens): Promise<void> {
    try {
      await provider.revoke(
        held.refresh_token ?? held.access_token,
        held.refresh_token ? "refresh_token" : "access_token",
      );
    } catch (error) {
      this.logger?.warn(
        { provider: provider.id, err: describe(error) },
        "a connection could not be revoked at its provider",
      );
    }
  }

  /**
   * Whether a flow making connection `id` for `owner` would take the owner past the vault's bound: not when it
   * connects one of the owner's connections again. The store's own bounds, checked as it inserts, are the ones no
   * two instances can pass together; this one holds for a store given larger bounds than the vault's, and says so
   * before a code is exchanged.
   */
  private async pastUserBound(id: string, owner: TokenOwner): Promise<boolean> {
    const existing = await this.store.get(id);
    if (existing && existing.principal === owner.principal && existing.userId === owner.userId) {
      return false;
    }
    return (await this.store.list(owner.principal, owner.userId)).length >= this.maxPerUser;
  }

  /** Stores a completed flow's connection: a new one, or the same one connected again. */
  private async saveConnection(
    id: string,
    { owner, scopes: asked }: { owner: TokenOwner; scopes: readonly string[] },
    provider: ConnectionProvider,
    tokens: Awaited<ReturnType<ConnectionProvider["exchange"]>>,
  ): Promise<void> {
    const now = this.clock.now();
    const existing = await this.store.get(id);
    const record: ConnectionRecord = {
      id,
      principal: owner.principal,
      userId: owner.userId,
      provider: provider.id,
      status: "active",
      scopes: tokens.scopes ?? [...asked],
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
      version: (existing?.version ?? 0) + 1,
      ...(tokens.account ? { account: tokens.account } : {}),
      ...(tokens.expiresAt === undefined ? {} : { expiresAt: tokens.expiresAt }),
    };
    record.tokens = await this.seal.seal(
      { access_token: tokens.accessToken, ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}) },
      sealContext(record),
    );
    if (existing && existing.principal === owner.principal && existing.userId === owner.userId) {
      if (!(await this.store.update(record, existing.version))) {
        throw new Error("the connection changed while it was connected again");
      }
      return;
    }
    await this.store.insert(record);
  }
}

/** What a sealed value is bound to: the connection's id, owner and provider. */
function sealContext(record: Pick<ConnectionRecord, "id" | "principal" | "userId" | "provider">): string {
  return JSON.stringify([record.id, record.principal, record.userId, record.provider]);
}

/** A record as `GET /connections` lists it: no token, times in RFC 3339. */
function wireConnection(record: ConnectionRecord): Connection {
  return {
    id: record.id,
    provider: record.provider,
    status: record.status as Connection["status"],
    scopes: record.scopes,
    ...(record.account ? { account: record.account } : {}),
    created_at: new Date(record.createdAt).toISOString(),
    updated_at: new Date(record.updatedAt).toISOString(),
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
