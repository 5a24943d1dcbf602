/** One third-party OAuth provider of the connections vault (docs/protocol.md 9.7): the server as its OAuth client, through oauth4webapi (discovery, PKCE, code exchange, refresh, revocation). */
import {
  allowInsecureRequests,
  authorizationCodeGrantRequest,
  type Client,
  type ClientAuth,
  ClientSecretBasic,
  ClientSecretPost,
  calculatePKCECodeChallenge,
  customFetch,
  getValidatedIdTokenClaims,
  type HttpRequestOptions,
  None,
  processAuthorizationCodeResponse,
  processRefreshTokenResponse,
  processRevocationResponse,
  ResponseBodyError,
  refreshTokenGrantRequest,
  revocationRequest,
  type TokenEndpointResponse,
  validateAuthResponse,
} from "oauth4webapi";
import type { Clock } from "../core/clock.js";
import { ServerConfigError, WireError } from "../core/errors.js";
import { boundedFetch, isLoopbackHost, issuerMetadata, keptUnlessFailed, outboundUrlOf } from "../http/remote-keys.js";

/** A provider users connect accounts of, as the server's configuration names it. */
export interface ConnectionProviderOptions {
  /** The id tools name in `requirements.authorization[].id`: letters, digits, `_` and `-`. */
  id: string;
  /** A name for people, listed in discovery. */
  name: string;
  /**
   * The provider's issuer identifier: its metadata is read from `/.well-known/oauth-authorization-server`, else
   * `/.well-known/openid-configuration` (https; http only to a loopback address).
   */
  issuer: string;
  /** The server's client id at the provider. */
  clientId: string;
  /** The client secret, for a confidential client (most servers are). */
  clientSecret?: string;
  /** How the secret is sent. Default `client_secret_basic`; `none` for a public client. */
  tokenEndpointAuthMethod?: "client_secret_basic" | "client_secret_post" | "none";
  /** The scopes asked for when `POST /connections` names none. Default: none beyond what tools require. */
  scopes?: readonly string[];
  /** How long one request to the provider may take, in milliseconds. Default 10,000. */
  timeoutMs?: number;
}

/** What a provider gives for a code or a refresh: the tokens, their expiry, the scopes granted, an account label. */
export interface ProviderTokens {
  accessToken: string;
  refreshToken?: string;
  /** Epoch milliseconds. */
  expiresAt?: number;
  scopes?: string[];
  account?: string;
}

/** The provider said no (an OAuth error answer: `invalid_grant`, `access_denied`): unlike a network failure, final. */
export class ProviderRefusal extends Error {
  constructor(readonly error: string) {
    super(`the provider refused: ${error}`);
    this.name = "ProviderRefusal";
  }
}

/** The OAuth client of one provider. */
export class ConnectionProvider {
  readonly id: string;
  readonly name: string;
  readonly defaultScopes: readonly string[];
  private readonly issuer: URL;
  private readonly client: Client;
  private readonly auth: ClientAuth;
  private readonly timeoutMs: number;
  private readonly fetch: ReturnType<typeof boundedFetch>;

  constructor(
    private readonly options: ConnectionProviderOptions,
    private readonly clock: Clock,
  ) {
    if (typeof options.id !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(options.id)) {
      throw new ServerConfigError("connections.providers: an id is 1 to 64 letters, digits, '_' or '-'");
    }
    if (typeof options.name !== "string" || options.name.length === 0 || options.name.length > 200) {
      throw new ServerConfigError(`connections.providers (${options.id}): name must be 1 to 200 characters`);
    }
    if (typeof options.clientId !== "string" || options.clientId.length === 0) {
      throw new ServerConfigError(`connections.providers (${options.id}): clientId is required`);
    }
    this.id = options.id;
    this.name = options.name;
    this.defaultScopes = options.scopes ?? [];
    this.issuer = outboundUrlOf(options.issuer, `connections.providers (${options.id}).issuer`);
    this.client = { client_id: options.clientId };
    const method = options.tokenEndpointAuthMethod ?? (options.clientSecret ? "client_secret_basic" : "none");
    if (method !== "none" && !options.clientSecret) {
      throw new ServerConfigError(`connections.providers (${options.id}): ${method} needs a clientSecret`);
    }
    this.auth =
      method === "none"
        ? None()
        : method === "client_secret_post"
          ? ClientSecretPost(options.clientSecret as string)
          : ClientSecretBasic(options.clientSecret as string);
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.fetch = boundedFetch(clock);
  }

  /** The authorization page's URL for a flow: PKCE S256 from `codeVerifier`, `state`, the exact redirect URI. */
  async authorizationUrl(flow: {
    state: string;
    codeVerifier: string;
    scopes: readonly string[];
    redirectUri: string;
  }) {
    const as = await this.server();
    if (typeof as.authorization_endpoint !== "string") {
      throw new Error(`${this.id}'s metadata has no authorization_endpoint`);
    }
    const url = new URL(as.authorization_endpoint);
    url.searchParams.set("client_id", this.client.client_id);
    url.searchParams.set("response_type", "code");
    url.searchParams.set("redirect_uri", flow.redirectUri);
    url.searchParams.set("state", flow.state);
    url.searchParams.set("code_challenge", await calculatePKCECodeChallenge(flow.codeVerifier));
    url.searchParams.set("code_challenge_method", "S256");
    if (flow.scopes.length > 0) {
      url.searchParams.set("scope", flow.scopes.join(" "));
    }
    return url.href;
  }

  /**
   * The tokens for a callback's parameters: the state checked (oauth4webapi also checks `iss` where the provider
   * sends it), the code exchanged with its PKCE verifier. A refusal by the provider is a {@link ProviderRefusal}.
   */
  async exchange(
    parameters: URLSearchParams,
    flow: { state: string; codeVerifier: string; redirectUri: string },
  ): Promise<ProviderTokens> {
    const as = await this.server();
    let checked: URLSearchParams;
    try {
      checked = validateAuthResponse(as, this.client, parameters, flow.state);
    } catch (error) {
      const code = (error as { error?: unknown }).error;
      throw new ProviderRefusal(typeof code === "string" ? code : "invalid_callback");
    }
    const response = await authorizationCodeGrantRequest(
      as,
      this.client,
      this.auth,
      checked,
      flow.redirectUri,
      flow.codeVerifier,
      this.requestOptions(),
    );
    return this.tokensOf(() => processAuthorizationCodeResponse(as, this.client, response));
  }

  /** New tokens for a refresh token; a refusal (expired, revoked, reused) is a {@link ProviderRefusal}. */
  async refresh(refreshToken: string): Promise<ProviderTokens> {
    const as = await this.server();
    const response = await refreshTokenGrantRequest(as, this.client, this.auth, refreshToken, this.requestOptions());
    return this.tokensOf(() => processRefreshTokenResponse(as, this.client, response));
  }

  /** Revokes a token where the provider offers revocation (RFC 7009); false when it offers none. */
  async revoke(token: string, hint: "refresh_token" | "access_token"): Promise<boolean> {
    const as = await this.server();
    if (typeof as.revocation_endpoint !== "string") {
      return false;
    }
    const response = await revocationRequest(as, this.client, this.auth, token, {
      ...this.requestOptions(),
      additionalParameters: { token_type_hint: hint },
    });
    await processRevocationResponse(response);
    return true;
  }

  private async tokensOf(process: () => Promise<TokenEndpointResponse>): Promise<ProviderTokens> {
    let answer: TokenEndpointResponse;
    try {
      answer = await process();
    } catch (error) {
      if (error instanceof ResponseBodyError) {
        throw new ProviderRefusal(error.error);
      }
      throw error;
    }
    const claims = answer.id_token ? getValidatedIdTokenClaims(answer) : undefined;
    // The ID token's own label for the account, else its subject at the provider.
    const label = claims?.email ?? claims?.name ?? claims?.preferred_username ?? claims?.sub;
    return {
      accessToken: answer.access_token,
      ...(answer.refresh_token ? { refreshToken: answer.refresh_token } : {}),
      ...(typeof answer.expires_in === "number" ? { expiresAt: this.clock.now() + answer.expires_in * 1000 } : {}),
      ...(typeof answer.scope === "string" ? { scopes: answer.scope.split(" ").filter(Boolean) } : {}),
      ...(typeof label === "string" && label.length > 0 ? { account: label.slice(0, 256) } : {}),
    };
  }

  private requestOptions(): HttpRequestOptions<"POST", URLSearchParams> {
    return {
      [customFetch]: this.fetch.fetch,
      [allowInsecureRequests]: this.issuer.protocol === "http:" && isLoopbackHost(this.issuer),
      signal: AbortSignal.timeout(this.timeoutMs),
    };
  }

  /** The provider's metadata, read once (again after a failure). */
  private readonly server = keptUnlessFailed(() =>
    issuerMetadata(this.options.issuer, this.issuer, this.fetch.fetch, this.timeoutMs),
  );
}

/** A provider's metadata that cannot be read is a 503: the fault is the provider's, not the client's. */
export async function unavailableOnFailure<T>(provider: ConnectionProvider, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw new WireError("unavailable", `${provider.name} cannot be reached right now`, {
      developerMessage: "The provider's metadata could not be read; retry shortly.",
      headers: { "Retry-After": "5" },
      cause: error,
    });
  }
}
