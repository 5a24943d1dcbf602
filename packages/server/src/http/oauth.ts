/**
 * The oauth extension (docs/protocol.md 9.6): the Tool Server as an OAuth 2.1 resource server. Its protected
 * resource metadata (RFC 9728), access tokens (RFC 9068 JWTs) checked against their issuer's metadata (RFC 8414)
 * and key set, opaque ones through introspection (RFC 7662) where configured, scopes, and the `WWW-Authenticate`
 * challenges that tell a client where to sign in. Web APIs only.
 */
import { WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH } from "@otc/types";
import {
  type CryptoKey,
  decodeJwt,
  decodeProtectedHeader,
  type JWTPayload,
  type ProtectedHeaderParameters,
} from "jose";
import type { AuthorizationServer } from "oauth4webapi";
import type { CoreLogger } from "../core/call-log.js";
import type { Clock } from "../core/clock.js";
import { ServerConfigError, WireError } from "../core/errors.js";
import { unauthorized, verifiedPayload } from "./authentication.js";
import { type IntrospectionOptions, TokenIntrospection } from "./introspection.js";
import {
  boundedFetch,
  credentialsUnavailable,
  FetchBackoff,
  issuerMetadata,
  keptUnlessFailed,
  keySetTiming,
  nonNegativeOption,
  outboundUrlOf,
  remoteKeySet,
} from "./remote-keys.js";

/** The scope `GET /tools` needs. */
export const READ_SCOPE = "oxp:tools:read";
/** The scope a call, a challenge's check and the tasks routes need. */
export const CALL_SCOPE = "oxp:tools:call";

/** The algorithms an access token may be signed with: asymmetric ones only (docs/protocol.md 9.6). */
export const ACCESS_TOKEN_ALGORITHMS = ["RS256", "PS256", "ES256", "EdDSA"] as const;
/** One of {@link ACCESS_TOKEN_ALGORITHMS}. */
export type AccessTokenAlgorithm = (typeof ACCESS_TOKEN_ALGORITHMS)[number];

/** The oauth extension's settings: the server as a resource server of one or more authorization servers. */
export interface OAuthOptions {
  /**
   * The issuer identifiers of the authorization servers whose access tokens are accepted (https; http only to a
   * loopback address). Each one's metadata is read from `/.well-known/oauth-authorization-server` (RFC 8414), else
   * `/.well-known/openid-configuration`, and must name the same issuer; its `jwks_uri` gives the keys.
   */
  authorizationServers: readonly string[];
  /**
   * The server's canonical URL: what clients ask tokens for (RFC 8707) and what a token's `aud` must name.
   * Default: the server's `publicUrl`; one of the two is required.
   */
  resource?: string;
  /** Scopes to list in the metadata beside `oxp:tools:read`, `oxp:tools:call` and the tools' `required_scopes`. */
  scopesSupported?: readonly string[];
  /**
   * A scope whose holder may name another user in `context.user_id` (a trusted back end calling for its users).
   * Without it, a call's `user_id` must be the token's `sub`. Default: none.
   */
  delegationScope?: string;
  /** A name of the server for people (`resource_name`), which a client may show when it asks the user to sign in. */
  resourceName?: string;
  /** The algorithms accepted. Default RS256, PS256, ES256 and EdDSA. */
  algorithms?: readonly AccessTokenAlgorithm[];
  /** How long after a fetch of a key set an unknown `kid` cannot cause another, in seconds. Default 30. */
  keyCooldownSeconds?: number;
  /** How long a fetched key set is used before it is fetched again, in seconds. Default 600. */
  keyMaxAgeSeconds?: number;
  /** How long a fetch of metadata or a key set, or an introspection request, may take, in milliseconds. Default 3000. */
  fetchTimeoutMs?: number;
  /** Clock skew allowed on `exp`, `nbf` and `iat`, in seconds. Default 60. */
  clockToleranceSeconds?: number;
  /**
   * Opaque access tokens (`[oauth.introspection]`): a bearer token that is not a JWT this server checks itself is
   * asked about at this authorization server's introspection endpoint (RFC 7662). Default: off, and such a token is
   * a 401.
   */
  introspection?: IntrospectionOptions;
}

/** What an access token grants: who, for which issuer, with which scopes. */
export interface OAuthGrant {
  readonly issuer: string;
  /** The token's `sub`: the user the call is for. */
  readonly subject: string;
  readonly scopes: ReadonlySet<string>;
  /** Whether the token holds the delegation scope, letting its holder name another user. */
  readonly delegated: boolean;
}

/** One authorization server: its metadata and its key set, each read when a token first needs it. */
interface Issuer {
  readonly metadata: () => Promise<AuthorizationServer>;
  readonly keys: () => Promise<ReturnType<typeof remoteKeySet>>;
}

/** The most scopes read from a token: a token with more is refused rather than read at any length. */
const MAX_SCOPES = 256;
/** The claims of an access token (RFC 9068 requires `iat` too, which some servers leave out: checked when present). */
const REQUIRED_CLAIMS = ["exp", "sub"];

/** The server as a resource server: made once per pipeline from the `auth.oauth` option. */
export class OAuthResource {
  /** The canonical URL, as access tokens' `aud` names it. */
  readonly resource: string;
  /** The metadata document's URL, given in every challenge and in discovery. */
  readonly metadataUrl: string;
  /** The paths the metadata is served at: the well-known one, and its path-inserted form for a resource with a path. */
  readonly metadataPaths: ReadonlySet<string>;
  private readonly issuers = new Map<string, Issuer>();
  private readonly audiences: string[];
  private readonly algorithms: ReadonlySet<string>;
  private readonly tolerance: number;
  private readonly timing: { cooldownMs: number; maxAgeMs: number; timeoutMs: number };
  private readonly delegationScope: string | undefined;
  private readonly extraScopes: readonly string[];
  private readonly resourceName: string | undefined;
  private readonly metadataFetch: ReturnType<typeof boundedFetch>;
  private readonly introspection: TokenIntrospection | undefined;

  constructor(
    options: OAuthOptions,
    publicUrl: string | undefined,
    private readonly logger: Pick<CoreLogger, "warn"> | undefined,
    private readonly clock: Clock,
  ) {
    const servers = options.authorizationServers;
    if (!Array.isArray(servers) || servers.length === 0) {
      throw new ServerConfigError("oauth.authorizationServers must name at least one issuer");
    }
    for (const issuer of servers) {
      if (typeof issuer !== "string") {
        throw new ServerConfigError("oauth.authorizationServers must be issuer URLs");
      }
      const url = outboundUrlOf(issuer, `oauth.authorizationServers (${issuer})`);
      if (url.search || url.hash) {
        throw new ServerConfigError(`oauth.authorizationServers: ${issuer} must have no query or fragment`);
      }
      // The issuer is compared exactly, as written: `iss` and the metadata's `issuer` must be this string.
      const metadata = keptUnlessFailed(() => this.metadataAt(issuer, url));
      this.issuers.set(issuer, { metadata, keys: keptUnlessFailed(() => this.keySetAt(metadata)) });
    }
    const { url: resource, canonical } = canonicalResource(options.resource ?? publicUrl);
    this.resource = canonical;
    // A bare origin is written without its `/`; a token naming it with the `/` names the same resource.
    this.audiences = resource.pathname === "/" ? [canonical, `${canonical}/`] : [canonical];
    const suffix = resource.pathname === "/" ? "" : canonical.slice(resource.origin.length);
    this.metadataUrl = `${resource.origin}${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH}${suffix}`;
    this.metadataPaths = new Set([
      WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH,
      `${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH}${suffix}`,
    ]);
    const algorithms = options.algorithms ?? ACCESS_TOKEN_ALGORITHMS;
    for (const alg of algorithms) {
      if (!(ACCESS_TOKEN_ALGORITHMS as readonly string[]).includes(alg)) {
        throw new ServerConfigError(
          `oauth.algorithms: ${String(alg)} is not accepted for access tokens (${ACCESS_TOKEN_ALGORITHMS.join(", ")})`,
        );
      }
    }
    if (algorithms.length === 0) {
      throw new ServerConfigError("oauth.algorithms must not be empty");
    }
    this.algorithms = new Set(algorithms);
    this.tolerance = nonNegativeOption(options.clockToleranceSeconds, 60, "oauth.clockToleranceSeconds");
    this.timing = keySetTiming(
      {
        cooldownSeconds: options.keyCooldownSeconds,
        maxAgeSeconds: options.keyMaxAgeSeconds,
        timeoutMs: options.fetchTimeoutMs,
      },
      {
        cooldownSeconds: "oauth.keyCooldownSeconds",
        maxAgeSeconds: "oauth.keyMaxAgeSeconds",
        timeoutMs: "oauth.fetchTimeoutMs",
      },
    );
    for (const scope of [
      ...(options.scopesSupported ?? []),
      ...(options.delegationScope ? [options.delegationScope] : []),
    ]) {
      if (!isScopeToken(scope)) {
        throw new ServerConfigError(`oauth: '${scope}' is not a scope (printable ASCII without space, '"' or '\\')`);
      }
    }
    this.delegationScope = options.delegationScope;
    this.extraScopes = [
      ...(options.scopesSupported ?? []),
      ...(options.delegationScope ? [options.delegationScope] : []),
    ];
    if (
      options.resourceName !== undefined &&
      (options.resourceName.length === 0 || options.resourceName.length > 200)
    ) {
      throw new ServerConfigError("oauth.resourceName must be 1 to 200 characters");
    }
    this.resourceName = options.resourceName;
    this.metadataFetch = boundedFetch(clock);
    this.introspection =
      options.introspection === undefined
        ? undefined
        : new TokenIntrospection(options.introspection, {
            issuers: [...this.issuers.keys()],
            audiences: this.audiences,
            toleranceSeconds: this.tolerance,
            timeoutMs: this.timing.timeoutMs,
            clock,
            logger,
            metadata: (issuer) => (this.issuers.get(issuer) as Issuer).metadata(),
            scopesOf: (scope) => scopesOf({ scope }),
          });
  }

  /** Whether opaque tokens are asked about at an introspection endpoint (`[oauth.introspection]`). */
  get introspects(): boolean {
    return this.introspection !== undefined;
  }

  /** The metadata document's JSON text (ProtectedResourceMetadata), with the tools' `required_scopes`. */
  metadataBody(toolScopes: Iterable<string>): string {
    const scopes = new Set([READ_SCOPE, CALL_SCOPE, ...this.extraScopes, ...toolScopes]);
    return JSON.stringify({
      resource: this.resource,
      authorization_servers: [...this.issuers.keys()],
      scopes_supported: [...scopes],
      bearer_methods_supported: ["header"],
      ...(this.resourceName === undefined ? {} : { resource_name: this.resourceName }),
    });
  }

  /**
   * The issuer a bearer token claims, when it is one of this server's authorization servers: such a token is
   * checked as an access token, any other as docs/protocol.md section 5 says. Read without verifying anything.
   */
  issuerOf(token: string): string | undefined {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      return undefined;
    }
    return typeof iss === "string" && this.issuers.has(iss) ? iss : undefined;
  }

  /**
   * Verifies an access token from `issuer` (docs/protocol.md 9.6, `[oauth.access-token]`): its payload and grant,
   * or a 401 or a 503 when its issuer's metadata or keys cannot be read.
   */
  async verify(token: string, issuer: string): Promise<{ payload: JWTPayload; grant: OAuthGrant }> {
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      throw unauthorized("the bearer token is not a valid JWT");
    }
    const { alg } = header;
    if (typeof alg !== "string" || !this.algorithms.has(alg)) {
      throw unauthorized(`the access token's alg is not one this server accepts (${[...this.algorithms].join(", ")})`);
    }
    const keys = await (await this.keySetOf(issuer)).keysFor(header);
    if (keys.length === 0) {
      throw unauthorized("the access token is signed with a key its issuer's key set does not have");
    }
    let payload: JWTPayload | undefined;
    for (const key of keys) {
      payload = await this.verifyWith(token, key, alg, issuer);
      if (payload) {
        break;
      }
    }
    if (!payload) {
      throw unauthorized("the access token's signature does not verify with its issuer's keys");
    }
    const now = this.clock.now() / 1000;
    if (typeof payload.iat === "number" && payload.iat > now + this.tolerance) {
      throw unauthorized("the access token's iat is in the future");
    }
    const scopes = scopesOf(payload);
    if (!scopes) {
      throw unauthorized("the access token's scope claim is not a space-separated list of scopes");
    }
    const grant: OAuthGrant = {
      issuer,
      subject: payload.sub as string,
      scopes,
      delegated: this.delegationScope !== undefined && scopes.has(this.delegationScope),
    };
    return { payload, grant };
  }

  /**
   * Checks an opaque access token through introspection (`[oauth.introspection]`): its issuer (the configured one),
   * subject and grant, or a 401, or a 503 when the authorization server cannot be asked.
   */
  async introspect(token: string): Promise<{ subject: string; grant: OAuthGrant }> {
    const introspection = this.introspection;
    if (!introspection) {
      throw unauthorized("the bearer token is not a JWT, and this server does not introspect tokens");
    }
    const { issuer, subject, scopes } = await introspection.introspect(token);
    const grant: OAuthGrant = {
      issuer,
      subject,
      scopes,
      delegated: this.delegationScope !== undefined && scopes.has(this.delegationScope),
    };
    return { subject, grant };
  }

  /** `WWW-Authenticate` of a 401: where to sign in and what to ask for; `invalid_token` when a token was refused. */
  unauthorizedChallenge(scopes: readonly string[], tokenSent: boolean): string {
    const error = tokenSent ? 'error="invalid_token", ' : "";
    return `Bearer ${error}resource_metadata="${this.metadataUrl}", scope="${scopes.join(" ")}"`;
  }

  /**
   * The 403 of a token without every scope `needed` (`[oauth.scopes]`): one challenge naming all of them, so that a
   * client steps up once.
   */
  insufficientScope(needed: readonly string[]): WireError {
    const scope = needed.join(" ");
    return new WireError("forbidden", "The access token does not allow this", {
      developerMessage: `This needs the scopes ${scope}; sign in again asking for them.`,
      headers: {
        "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${this.metadataUrl}"`,
      },
    });
  }

  /** The 403 of a call naming a user other than its token's subject, without the delegation scope (`[oauth.user-is-subject]`). */
  userMismatch(): WireError {
    return new WireError("forbidden", "The access token is not the user's the call names", {
      developerMessage: this.delegationScope
        ? `context.user_id must be the token's sub, or the token must hold the scope ${this.delegationScope}; leave user_id out to call as the token's user.`
        : "context.user_id must be the token's sub; leave it out to call as the token's user.",
    });
  }

  /** The payload when `key` signed the token and its claims hold; undefined when another key signed it. */
  private verifyWith(token: string, key: CryptoKey, alg: string, issuer: string): Promise<JWTPayload | undefined> {
    const options = {
      algorithms: [alg],
      issuer,
      audience: this.audiences,
      // RFC 9068: an ID token or any other JWT of the same issuer is never taken for an access token.
      typ: "at+jwt",
      requiredClaims: REQUIRED_CLAIMS,
      clockTolerance: this.tolerance,
      currentDate: new Date(this.clock.now()),
    };
    return verifiedPayload(token, key, options, "access token");
  }

  /** The key set of an issuer, from its metadata, read once (again after a failure, once its pause is over). */
  private keySetOf(issuer: string): Promise<ReturnType<typeof remoteKeySet>> {
    return (this.issuers.get(issuer) as Issuer).keys();
  }

  /** An issuer's metadata; a failure is a 503, logged once per pause. */
  private async metadataAt(name: string, issuer: URL): Promise<AuthorizationServer> {
    try {
      return await issuerMetadata(name, issuer, this.metadataFetch.fetch, this.timing.timeoutMs);
    } catch (error) {
      this.metadataFailed(issuer, error);
      throw credentialsUnavailable("the metadata of the authorization server that issued the access token");
    }
  }

  /** An issuer's key set, at the `jwks_uri` of its metadata; metadata without a usable one is a 503 as well. */
  private async keySetAt(metadata: () => Promise<AuthorizationServer>): Promise<ReturnType<typeof remoteKeySet>> {
    const document = await metadata();
    let jwksUri: URL;
    try {
      if (typeof document.jwks_uri !== "string") {
        throw new Error("the metadata has no jwks_uri");
      }
      jwksUri = outboundUrlOf(document.jwks_uri, "the authorization server's jwks_uri");
    } catch (error) {
      this.metadataFailed(new URL(document.issuer), error);
      throw credentialsUnavailable("the metadata of the authorization server that issued the access token");
    }
    return remoteKeySet(jwksUri, this.timing, this.logger, this.clock);
  }

  /** Logs that an issuer's metadata is unusable, once per pause. */
  private metadataFailed(issuer: URL, error: unknown): void {
    if (!(error instanceof FetchBackoff) && this.metadataFetch.failed()) {
      const reason = error instanceof Error ? error.message : String(error);
      this.logger?.warn({ issuer: issuer.href, err: reason }, "the authorization server's metadata could not be read");
    }
  }
}

/** The canonical URL: absolute http(s), without credentials, query or fragment; a bare origin without its `/`. */
function canonicalResource(raw: string | undefined): { url: URL; canonical: string } {
  if (raw === undefined) {
    throw new ServerConfigError("oauth needs the server's canonical URL: set oauth.resource or publicUrl");
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ServerConfigError("oauth.resource is not a URL");
  }
  if (
    (url.protocol !== "https:" && url.protocol !== "http:") ||
    url.username ||
    url.password ||
    url.search ||
    url.hash
  ) {
    throw new ServerConfigError("oauth.resource must be an http(s) URL without credentials, query or fragment");
  }
  // The URL's own href would put the `/` back on a bare origin.
  return { url, canonical: url.pathname === "/" ? url.origin : `${url.origin}${url.pathname.replace(/\/+$/, "")}` };
}

/** The scopes a token grants: its `scope` claim (RFC 9068), else an `scp` list (as some servers send); undefined when malformed. */
function scopesOf(payload: object): Set<string> | undefined {
  const { scope, scp } = payload as { scope?: unknown; scp?: unknown };
  const list =
    typeof scope === "string"
      ? scope.split(" ").filter((item) => item !== "")
      : scope === undefined && Array.isArray(scp)
        ? scp
        : scope === undefined && scp === undefined
          ? []
          : undefined;
  if (!list || list.length > MAX_SCOPES || !list.every((item) => typeof item === "string" && isScopeToken(item))) {
    return undefined;
  }
  return new Set(list);
}

/** Whether a string is one RFC 6749 scope token. */
export function isScopeToken(value: string): boolean {
  return /^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/.test(value);
}
