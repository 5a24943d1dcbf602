/** The page's sign-in to one server (docs/protocol.md 9.6): its tokens in memory, the access token renewed with the refresh token before it expires or when the server calls it invalid, one renewal shared by every request. */
import type { AccessTokenProvider, AccessTokenRequest } from "@otc/client";
import { refreshTokens, type SignedIn, SignInError } from "./oauth.js";

/** How long before its expiry the access token is renewed rather than sent (at most half its lifetime). */
export const REFRESH_MARGIN_MS = 30_000;

/** What a {@link SignInSession} starts with. */
export interface SignInSessionOptions {
  /** The server the tokens are for: the only one they are sent to. */
  serverUrl: string;
  /** The resource indicator the tokens were asked for (RFC 8707), asked for again on each renewal. */
  resource?: string;
  /** The authorization server the user signed in at, whose token endpoint renews the tokens. */
  issuer: string;
  tokenEndpoint: string;
  clientId: string;
  /** The page's origin, for the message when the token endpoint's CORS policy refuses it. */
  origin: string;
  /** What the code exchange answered. */
  tokens: SignedIn;
  /** The page's clock, in milliseconds: a test's clock stands in for `Date.now`. */
  now?: () => number;
  fetch?: typeof fetch;
  /** Told after each renewal: the scope may have changed. */
  onRenewed?: (session: SignInSession) => void;
  /** Told once, when a renewal failed (or could not be tried) and the session ended: the error says why. */
  onSignedOut?: (error: SignInError) => void;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * The tokens of one sign-in, handed to `@otc/client` as its {@link AccessTokenProvider} ({@link accessTokens}). The
 * access token is sent while it is fresh; once it is within {@link REFRESH_MARGIN_MS} of its `expires_in`, or when
 * the server answers a request 401 with `error="invalid_token"`, the refresh token is used once (and the rotated one
 * kept), and the client sends the request again with the new access token. Requests that need a renewal while one
 * is under way wait for it; a request refused with a token that a renewal has replaced since is sent again with the
 * new one, without another renewal. A renewal that fails ends the session: every request after it fails with the
 * same message, which tells the user to sign in again. Tokens are never logged and never leave this object but as
 * the bearer token of a request to {@link serverUrl}.
 *
 * @example
 * const session = new SignInSession({ serverUrl, issuer, tokenEndpoint, clientId, origin, tokens });
 * const client = createClient({ baseUrl: serverUrl, accessToken: session.accessTokens });
 */
export class SignInSession {
  readonly serverUrl: string;
  readonly issuer: string;
  readonly #options: SignInSessionOptions;
  readonly #now: () => number;
  #tokens: SignedIn | undefined;
  /** When the access token is to be renewed rather than sent; undefined when the server gave no lifetime. */
  #renewAt: number | undefined;
  #renewing: Promise<string> | undefined;
  #ended: SignInError | undefined;
  #renewals = 0;
  /** The token each request was given, by its signal: a 401 says which token it refused. */
  readonly #given = new WeakMap<AbortSignal, string>();

  constructor(options: SignInSessionOptions) {
    this.#options = options;
    this.serverUrl = options.serverUrl;
    this.issuer = options.issuer;
    this.#now = options.now ?? Date.now;
    this.#keep(options.tokens);
  }

  /** The scopes granted, as the token endpoint last said. */
  get scope(): string | undefined {
    return this.#tokens?.scope;
  }

  /** How many times the access token was renewed. */
  get renewals(): number {
    return this.#renewals;
  }

  /** Why the session ended, once it has (a failed renewal, or {@link signOut}). */
  get ended(): SignInError | undefined {
    return this.#ended;
  }

  /** The client's way to the tokens: asked before each request, and again after a 401 or a 403. */
  readonly accessTokens: AccessTokenProvider = (request) => this.#answer(request);

  /** Drops the tokens: a request still holding this session is refused without being sent. */
  signOut(): void {
    this.#end(`Signed out of ${this.serverUrl}`, false);
  }

  #keep(tokens: SignedIn): void {
    this.#tokens = tokens;
    if (tokens.expiresIn === undefined) {
      this.#renewAt = undefined;
      return;
    }
    const lifetime = tokens.expiresIn * 1000;
    this.#renewAt = this.#now() + lifetime - Math.min(REFRESH_MARGIN_MS, lifetime / 2);
  }

  #current(): SignedIn {
    if (this.#ended || !this.#tokens) {
      throw this.#ended ?? new SignInError(`Signed out of ${this.serverUrl}`);
    }
    return this.#tokens;
  }

  async #answer({ reason, challenge, signal }: AccessTokenRequest): Promise<string> {
    let token: string;
    if (reason === "unauthorized" && challenge?.error === "invalid_token") {
      const refused = signal ? this.#given.get(signal) : undefined;
      const current = this.#current().accessToken;
      // Refused with a token a renewal has replaced since: the new one is tried, nothing is renewed again.
      token = await (this.#renewing ?? (refused !== undefined && refused !== current ? current : this.#renew()));
    } else if (this.#renewing) {
      token = await this.#renewing;
    } else if (reason === "initial" && this.#renewAt !== undefined && this.#now() >= this.#renewAt) {
      token = await this.#renew();
    } else {
      // A 401 without invalid_token, or a 403 for scopes: the same token, so that the client shows the answer.
      token = this.#current().accessToken;
    }
    if (signal) {
      this.#given.set(signal, token);
    }
    return token;
  }

  /** The one renewal under way, started if none is. */
  #renew(): Promise<string> {
    this.#renewing ??= this.#refresh().finally(() => {
      this.#renewing = undefined;
    });
    return this.#renewing;
  }

  async #refresh(): Promise<string> {
    const tokens = this.#current();
    if (!tokens.refreshToken) {
      throw this.#end(`the access token has expired and ${this.issuer} gave this page no refresh token`);
    }
    const { tokenEndpoint, clientId, resource, origin } = this.#options;
    let next: SignedIn;
    try {
      next = await refreshTokens({
        tokenEndpoint,
        issuer: this.issuer,
        clientId,
        refreshToken: tokens.refreshToken,
        origin,
        ...(resource ? { resource } : {}),
        ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
      });
    } catch (error) {
      throw this.#end(`${this.issuer} did not renew the access token (${messageOf(error)})`);
    }
    if (this.#ended) {
      // Signed out while the renewal was under way: its tokens are dropped.
      throw this.#ended;
    }
    this.#keep({
      ...next,
      // A server that does not rotate answers no refresh token: the one used stays good.
      ...(next.refreshToken ? {} : { refreshToken: tokens.refreshToken }),
      ...(next.scope === undefined && tokens.scope !== undefined ? { scope: tokens.scope } : {}),
    });
    this.#renewals++;
    this.#options.onRenewed?.(this);
    return next.accessToken;
  }

  /** Ends the session (once: the first reason stays) and answers why; `told` says the page is to hear of it. */
  #end(why: string, told = true): SignInError {
    if (!this.#ended) {
      this.#ended = told
        ? new SignInError(`Signed out of ${this.serverUrl}: ${why}. Sign in again.`)
        : new SignInError(why);
      this.#tokens = undefined;
      this.#renewAt = undefined;
      if (told) {
        this.#options.onSignedOut?.(this.#ended);
      }
    }
    return this.#ended;
  }
}
