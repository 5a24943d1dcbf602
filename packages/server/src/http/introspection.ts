/** Opaque access tokens of the oauth extension (docs/protocol.md 9.6, `[oauth.introspection]`): asked about at the authorization server (RFC 7662) with oauth4webapi, checked, and kept a short while. */
import {
  type AuthorizationServer,
  allowInsecureRequests,
  type Client,
  type ClientAuth,
  ClientSecretBasic,
  ClientSecretPost,
  customFetch,
  type IntrospectionResponse,
  introspectionRequest,
  processIntrospectionResponse,
  ResponseBodyError,
} from "oauth4webapi";
import { setBounded } from "../core/bounded-map.js";
import type { CoreLogger } from "../core/call-log.js";
import type { Clock } from "../core/clock.js";
import { ServerConfigError, WireError } from "../core/errors.js";
import { unauthorized } from "./authentication.js";
import {
  boundedFetch,
  credentialsUnavailable,
  FetchBackoff,
  isLoopbackHost,
  keptUnlessFailed,
  nonNegativeOption,
  outboundUrlOf,
} from "./remote-keys.js";

/**
 * How the server asks its authorization server about opaque access tokens (RFC 7662). The server is a client of the
 * authorization server for this, with credentials of its own.
 */
export interface IntrospectionOptions {
  /**
   * The authorization server that issues the opaque tokens: one of `authorizationServers`, exactly as written there.
   * Default: the only one (required when there are several). Only this one is ever sent a token: an opaque token
   * says nothing of its issuer, and asking another server would hand it the token.
   */
  issuer?: string;
  /** This server's client id at the authorization server. */
  clientId: string;
  /** This server's client secret at the authorization server. */
  clientSecret: string;
  /** How the client authenticates at the endpoint. Default `client_secret_basic`. */
  authMethod?: "client_secret_basic" | "client_secret_post";
  /**
   * The introspection endpoint (https; http only to a loopback address). Default: the `introspection_endpoint` of
   * the authorization server's metadata.
   */
  endpoint?: string;
  /**
   * The longest an active answer is kept, in seconds: a token revoked at the authorization server is refused at most
   * this long after. Never past the token's `exp`. Default 60; 0 asks on every request.
   */
  cacheSeconds?: number;
}

/** What an active, acceptable introspection answer grants. */
export interface Introspected {
  /** The configured issuer: the principal's first half. */
  readonly issuer: string;
  readonly subject: string;
  /** The scopes the answer's `scope` grants. */
  readonly scopes: ReadonlySet<string>;
}

/** What the cache keeps of an answer: the grant, or why the token was refused; until when (server clock, ms). */
type Kept = { readonly until: number } & (
  | { readonly introspected: Introspected; readonly refused?: undefined }
  | { readonly refused: string }
);

/** How many answers are kept, each under a hash of its token (the token itself is never kept). */
const INTROSPECTION_CACHE_SIZE = 10_000;
/** A refused token is kept at most this long: it keeps one client's loop off the authorization server, no longer. */
const REFUSED_KEEP_MS = 5_000;
/** Longer bearer tokens are refused without asking: no opaque token is this long, and the endpoint need not read one. */
const MAX_INTROSPECTED_LENGTH = 4_096;
/** The `token_type` values of an access token (RFC 7662 gives the type, `Bearer`; some servers give a token type hint). */
const ACCESS_TOKEN_TYPES = new Set(["bearer", "access_token", "urn:ietf:params:oauth:token-type:access_token"]);

/** The settings a {@link TokenIntrospection} takes from its {@link OAuthResource}. */
export interface IntrospectionContext {
  /** The configured issuers. */
  readonly issuers: readonly string[];
  /** The `aud` values that name this server. */
  readonly audiences: readonly string[];
  /** Clock skew allowed on `exp`, `nbf` and `iat`, in seconds. */
  readonly toleranceSeconds: number;
  readonly timeoutMs: number;
  readonly clock: Clock;
  readonly logger: Pick<CoreLogger, "warn"> | undefined;
  /** The issuer's metadata (RFC 8414); rejects with the 503 of unreadable metadata. */
  readonly metadata: (issuer: string) => Promise<AuthorizationServer>;
  /** The scopes a `scope` value grants, as for a JWT's claim; undefined when it is not a list of scope tokens. */
  readonly scopesOf: (scope: string | undefined) => ReadonlySet<string> | undefined;
  /** How many answers are kept. Default 10,000; smaller only where a test needs to reach the bound. */
  readonly maxEntries?: number;
}

/** Opaque tokens checked at one authorization server's introspection endpoint, with a short cache of the answers. */
export class TokenIntrospection {
  readonly issuer: string;
  private readonly client: Client;
  private readonly authentication: ClientAuth;
  private readonly cacheMs: number;
  private readonly maxEntries: number;
  private readonly audiences: ReadonlySet<string>;
  private readonly fetcher: ReturnType<typeof boundedFetch>;
  private readonly server: () => Promise<AuthorizationServer>;
  private readonly kept = new Map<string, Kept>();
  /** Answers on their way, by token hash: a token sent by many requests at once is asked about once. */
  private readonly pending = new Map<string, Promise<Introspected>>();

  constructor(
    options: IntrospectionOptions,
    private readonly context: IntrospectionContext,
  ) {
    if (typeof options !== "object" || options === null) {
      throw new ServerConfigError("oauth.introspection must be an object");
    }
    const { issuers } = context;
    const issuer = options.issuer ?? (issuers.length === 1 ? issuers[0] : undefined);
    if (issuer === undefined) {
      throw new ServerConfigError(
        "oauth.introspection.issuer must name the authorization server to ask, one of oauth.authorizationServers",
      );
    }
    if (!issuers.includes(issuer)) {
      throw new ServerConfigError(`oauth.introspection.issuer (${issuer}) is not one of oauth.authorizationServers`);
    }
    this.issuer = issuer;
    for (const name of ["clientId", "clientSecret"] as const) {
      if (typeof options[name] !== "string" || options[name].length === 0) {
        throw new ServerConfigError(`oauth.introspection.${name} must be a non-empty string`);
      }
    }
    const method = options.authMethod ?? "client_secret_basic";
    if (method !== "client_secret_basic" && method !== "client_secret_post") {
      throw new ServerConfigError("oauth.introspection.authMethod must be client_secret_basic or client_secret_post");
    }
    this.client = { client_id: options.clientId };
    this.authentication =
      method === "client_secret_basic"
        ? ClientSecretBasic(options.clientSecret)
        : ClientSecretPost(options.clientSecret);
    this.cacheMs = nonNegativeOption(options.cacheSeconds, 60, "oauth.introspection.cacheSeconds") * 1000;
    this.maxEntries = context.maxEntries ?? INTROSPECTION_CACHE_SIZE;
    this.audiences = new Set(context.audiences);
    this.fetcher = boundedFetch(context.clock);
    const endpoint =
      options.endpoint === undefined ? undefined : outboundUrlOf(options.endpoint, "oauth.introspection.endpoint");
    // With an endpoint configured, no metadata is needed: oauth4webapi takes the endpoint from this object alone.
    this.server = endpoint
      ? () => Promise.resolve({ issuer, introspection_endpoint: endpoint.href })
      : keptUnlessFailed(() => this.endpointFromMetadata());
  }

  /**
   * What the authorization server says of `token`, checked (`[oauth.introspection]`): the grant, a 401 for a token it
   * does not vouch for here, or a 503 when it cannot be asked.
   */
  async introspect(token: string): Promise<Introspected> {
    if (token.length > MAX_INTROSPECTED_LENGTH) {
      throw unauthorized(`the bearer token is longer than ${MAX_INTROSPECTED_LENGTH} characters`);
    }
    const key = await hashOf(token);
    const kept = this.kept.get(key);
    if (kept && kept.until > this.context.clock.now()) {
      if (kept.refused !== undefined) {
        throw unauthorized(kept.refused);
      }
      return kept.introspected;
    }
    if (kept) {
      this.kept.delete(key);
    }
    let pending = this.pending.get(key);
    if (!pending) {
      pending = this.ask(token, key).finally(() => this.pending.delete(key));
      this.pending.set(key, pending);
    }
    return pending;
  }

  /** One request to the endpoint, its answer checked and kept. */
  private async ask(token: string, key: string): Promise<Introspected> {
    let answer: IntrospectionResponse;
    try {
      const server = await this.server();
      const endpoint = new URL(server.introspection_endpoint as string);
      const response = await introspectionRequest(server, this.client, this.authentication, token, {
        [customFetch]: this.fetcher.fetch,
        [allowInsecureRequests]: endpoint.protocol === "http:" && isLoopbackHost(endpoint),
        additionalParameters: { token_type_hint: "access_token" },
        signal: AbortSignal.timeout(this.context.timeoutMs),
      });
      answer = await processIntrospectionResponse(server, this.client, response);
    } catch (error) {
      if (error instanceof WireError) {
        throw error;
      }
      // A 400 other than a client error is the server refusing this token (oidc-provider answers so for a JWT).
      if (error instanceof ResponseBodyError && error.status === 400 && error.error !== "invalid_client") {
        throw this.refuse(key, "the authorization server would not introspect the bearer token");
      }
      this.failed(error);
      throw credentialsUnavailable("the answer of the authorization server's introspection endpoint");
    }
    const checked = this.check(answer);
    if (typeof checked === "string") {
      throw this.refuse(key, checked);
    }
    const now = this.context.clock.now();
    const exp = typeof answer.exp === "number" ? answer.exp * 1000 : Number.POSITIVE_INFINITY;
    const until = Math.min(now + this.cacheMs, exp);
    if (until > now) {
      setBounded(this.kept, key, { introspected: checked, until }, this.maxEntries);
    }
    return checked;
  }

  /** The grant of an answer, or why it is refused. */
  private check(answer: IntrospectionResponse): Introspected | string {
    if (answer.active !== true) {
      return "the authorization server says the access token is not active";
    }
    const { token_type: type, iss, aud, exp, nbf, iat, sub, scope } = answer;
    if (type !== undefined && !(typeof type === "string" && ACCESS_TOKEN_TYPES.has(type.toLowerCase()))) {
      return "the authorization server says the bearer token is not an access token";
    }
    if (answer.cnf !== undefined) {
      // A token bound to a key (DPoP, mTLS) is only good with a proof of that key, which a bearer request lacks.
      return "the access token is bound to a key (cnf): it cannot be used as a bearer token";
    }
    if (iss !== undefined && iss !== this.issuer) {
      return "the introspection answer's iss is not the configured issuer";
    }
    const named = typeof aud === "string" ? [aud] : Array.isArray(aud) ? aud : undefined;
    if (!named) {
      // Without an audience the token may be another resource's, or no access token at all: oidc-provider answers a
      // refresh token as active, with its user and scopes, and neither `aud` nor `token_type`.
      return "the introspection answer names no aud: this server accepts only tokens minted for it";
    }
    if (!named.some((item) => typeof item === "string" && this.audiences.has(item))) {
      return "the access token's aud is not this server's canonical URL";
    }
    const now = this.context.clock.now() / 1000;
    const tolerance = this.context.toleranceSeconds;
    for (const [name, value] of [
      ["exp", exp],
      ["nbf", nbf],
      ["iat", iat],
    ] as const) {
      if (value !== undefined && !(typeof value === "number" && Number.isFinite(value))) {
        return `the introspection answer's ${name} is not a number`;
      }
    }
    if (typeof exp === "number" && exp <= now - tolerance) {
      return "the access token has expired";
    }
    if (typeof nbf === "number" && nbf > now + tolerance) {
      return "the access token is not valid yet (nbf)";
    }
    if (typeof iat === "number" && iat > now + tolerance) {
      return "the access token's iat is in the future";
    }
    if (typeof sub !== "string" || sub.length === 0) {
      return "the introspection answer has no sub: the access token names no user";
    }
    // Checked here, not when the grant is used: a refused answer is kept 5 s at most, an admitted one far longer.
    const scopes = scope === undefined || typeof scope === "string" ? this.context.scopesOf(scope) : undefined;
    if (!scopes) {
      return "the introspection answer's scope is not a space-separated list of scopes";
    }
    return { issuer: this.issuer, subject: sub, scopes };
  }

  /** The 401 of a refused token, which is kept (briefly) so that the same token is not asked about again at once. */
  private refuse(key: string, reason: string): WireError {
    const until = this.context.clock.now() + Math.min(REFUSED_KEEP_MS, this.cacheMs);
    if (this.cacheMs > 0) {
      setBounded(this.kept, key, { refused: reason, until }, this.maxEntries);
    }
    return unauthorized(reason);
  }

  /** Logs a failure to ask, once per pause (the message names the endpoint's problem, never the token). */
  private failed(error: unknown): void {
    if (!(error instanceof FetchBackoff) && this.fetcher.failed()) {
      const reason = error instanceof Error ? error.message : String(error);
      this.context.logger?.warn(
        { issuer: this.issuer, err: reason },
        "the authorization server's introspection endpoint could not be asked",
      );
    }
  }

  /** The issuer's metadata with its `introspection_endpoint` checked; a 503 (logged once) when it has none usable. */
  private async endpointFromMetadata(): Promise<AuthorizationServer> {
    const metadata = await this.context.metadata(this.issuer);
    try {
      if (typeof metadata.introspection_endpoint !== "string") {
        throw new Error("the metadata has no introspection_endpoint");
      }
      const endpoint = outboundUrlOf(
        metadata.introspection_endpoint,
        "the authorization server's introspection_endpoint",
      );
      return { ...metadata, introspection_endpoint: endpoint.href };
    } catch (error) {
      this.failed(error);
      throw credentialsUnavailable("the introspection endpoint of the authorization server");
    }
  }
}

/** The cache's key of a token: its SHA-256, so that the cache never holds a token. */
async function hashOf(token: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token)));
  let hex = "";
  for (const byte of digest) {
    hex += byte.toString(16).padStart(2, "0");
  }
  return hex;
}
