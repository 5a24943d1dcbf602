/**
 * The HTTP bridge as an OAuth 2.1 resource server, as MCP's authorization spec asks: its protected resource metadata
 * (RFC 9728), the access token every MCP request needs (checked by @otc/server's OAuthResource), and the scopes each
 * request needs, refused with the 401 and 403 challenges that tell an MCP client where to sign in and what to ask for.
 */
import type { IncomingMessage } from "node:http";
import { type AuthInfo, DEFAULT_MAX_REQUEST_BODY_SIZE, readRequestBody } from "@modelcontextprotocol/server";
import type { Clock, CoreLogger } from "@otc/server/core";
import { CALL_SCOPE, type OAuthOptions, OAuthResource, READ_SCOPE, WireError } from "@otc/server/fetch";
import { parseBearer, type ToolDefinition } from "@otc/types";
import type { McpBridge, McpCaller } from "./bridge.js";

/** What `serveHttp`'s `oauth` takes: @otc/server's OAuth settings, but for the delegation scope (an MCP request names no user). */
export type HttpOAuthOptions = Omit<OAuthOptions, "delegationScope">;

/** The scopes a tools/call of `definition` needs: `oxp:tools:call` and the OXP tool's `required_scopes`. */
export function callScopes(definition: ToolDefinition | undefined): string[] {
  return [...new Set([CALL_SCOPE, ...(definition?.required_scopes ?? [])])];
}

/** The scopes reading the catalog needs (`oxp:tools:read`): tools/list's, and a call of a tool search meta-tool's. */
export function readScopes(): string[] {
  return [READ_SCOPE];
}

/**
 * Whether a token granting `granted` sees the OXP tool `definition` in the catalog (tools/list, `search-tools`,
 * `load-tools`): it holds every one of its `required_scopes`, as the OXP server's own lists go (docs/protocol.md 9.6,
 * `[oauth.catalog-by-scope]`).
 */
export function grantsTool(definition: ToolDefinition, granted: ReadonlySet<string>): boolean {
  return (definition.required_scopes ?? []).every((scope) => granted.has(scope));
}

/** Those of `needed` that `granted` lacks. */
export function missingScopes(needed: readonly string[], granted: ReadonlySet<string>): string[] {
  return needed.filter((scope) => !granted.has(scope));
}

/** An answer written as it is: status, headers, and a JSON body (none for a HEAD or a 204). */
export interface PlainAnswer {
  status: number;
  headers: Record<string, string>;
  body?: string;
}

/** The key of `AuthInfo.extra` that carries the caller to the bridge's server factory. */
const CALLER_KEY = "otc/caller";

/** The caller an admitted request's AuthInfo carries; undefined for any other AuthInfo. */
export function callerOf(authInfo: AuthInfo | undefined): McpCaller | undefined {
  const caller = authInfo?.extra?.[CALLER_KEY];
  return typeof caller === "object" && caller !== null ? (caller as McpCaller) : undefined;
}

const METADATA_METHODS = "GET, HEAD, OPTIONS";

function wireAnswer(error: WireError): PlainAnswer {
  return {
    status: error.status,
    headers: { "content-type": "application/json", ...error.details.headers },
    body: JSON.stringify(error.toBody()),
  };
}

/** What {@link McpOAuthGate} is made with. */
export interface McpOAuthGateOptions {
  bridge: McpBridge;
  oauth: HttpOAuthOptions;
  /** The bridge's own URL: the canonical one unless `oauth.resource` names another (a bridge behind a proxy). */
  endpoint: string;
  logger: Pick<CoreLogger, "warn"> | undefined;
  clock: Clock;
}

/** The OAuth side of one HTTP bridge: made once per `serveHttp`, around @otc/server's OAuthResource. */
export class McpOAuthGate {
  private readonly resource: OAuthResource;
  private readonly bridge: McpBridge;

  /** Throws @otc/server's ServerConfigError for unusable options. */
  constructor({ bridge, oauth, endpoint, logger, clock }: McpOAuthGateOptions) {
    if ((oauth as OAuthOptions).delegationScope !== undefined) {
      throw new RangeError(
        "oauth.delegationScope has no meaning for the MCP bridge: a call is always the token's user's",
      );
    }
    this.bridge = bridge;
    this.resource = new OAuthResource(oauth, endpoint, logger, clock);
  }

  /** The metadata document's URL, as the challenges give it. */
  get metadataUrl(): string {
    return this.resource.metadataUrl;
  }

  /** Whether `pathname` is one of the metadata document's paths (served without a token). */
  servesMetadata(pathname: string): boolean {
    return this.resource.metadataPaths.has(pathname);
  }

  /**
   * The protected resource metadata, with every scope the bridge checks: `oxp:tools:read`, `oxp:tools:call` and the
   * OXP tools' `required_scopes` (from the catalog; without them when the OXP server cannot be read now). Readable
   * from any origin, as the SDK's own metadata route is: it holds nothing private.
   */
  async metadata(method: string): Promise<PlainAnswer> {
    const cors = { "access-control-allow-origin": "*" };
    if (method === "OPTIONS") {
      return { status: 204, headers: { ...cors, "access-control-allow-methods": METADATA_METHODS } };
    }
    if (method !== "GET" && method !== "HEAD") {
      return {
        status: 405,
        headers: { ...cors, allow: METADATA_METHODS, "content-type": "application/json" },
        body: JSON.stringify({ message: `The metadata is read with GET, not ${method}` }),
      };
    }
    const scopes = await this.bridge.catalogScopes().catch(() => []);
    const body = this.resource.metadataBody(scopes);
    return {
      status: 200,
      headers: { ...cors, "content-type": "application/json" },
      ...(method === "GET" ? { body } : {}),
    };
  }

  /**
   * Admits a request by its access token: the SDK's AuthInfo for it, carrying the caller (the token's `sub` and
   * scopes), or the answer refusing it. No bearer token, or one that is not a valid access token for this resource
   * (another audience, expired, from an issuer not configured...): a 401 whose challenge says where to sign in and
   * which scopes to ask for, `invalid_token` when a token was sent. Metadata or keys that cannot be read: a 503.
   */
  async admit(req: IncomingMessage): Promise<{ authInfo: AuthInfo } | { refused: PlainAnswer }> {
    const token = parseBearer(req.headers.authorization);
    const challenge = (tokenSent: boolean, why: string): { refused: PlainAnswer } => ({
      refused: {
        status: 401,
        headers: {
          "content-type": "application/json",
          "www-authenticate": this.resource.unauthorizedChallenge([READ_SCOPE, CALL_SCOPE], tokenSent),
        },
        body: JSON.stringify({ message: "Authentication required", developer_message: why }),
      },
    });
    if (token === undefined) {
      return challenge(false, "send an OAuth access token for this MCP server as Authorization: Bearer <token>");
    }
    const issuer = this.resource.issuerOf(token);
    if (issuer === undefined) {
      return challenge(true, "the bearer token is not an access token of an authorization server this bridge trusts");
    }
    let verified: Awaited<ReturnType<OAuthResource["verify"]>>;
    try {
      verified = await this.resource.verify(token, issuer);
    } catch (error) {
      if (error instanceof WireError && error.status === 401) {
        return challenge(true, error.details.developerMessage ?? error.message);
      }
      if (error instanceof WireError) {
        return { refused: wireAnswer(error) };
      }
      throw error;
    }
    const { payload, grant } = verified;
    const caller: McpCaller = { userId: grant.subject, scopes: grant.scopes };
    const clientId = typeof payload.client_id === "string" ? payload.client_id : "";
    return {
      authInfo: {
        token,
        clientId,
        scopes: [...grant.scopes],
        ...(typeof payload.exp === "number" ? { expiresAt: payload.exp } : {}),
        resource: new URL(this.resource.resource),
        resourceMetadataUrl: this.resource.metadataUrl,
        extra: { [CALLER_KEY]: caller },
      },
    };
  }

  /**
   * Serves one admitted POST through `serve` (the SDK's handler), after the scope check MCP's step-up needs: a
   * `tools/list` needs `oxp:tools:read`, a `tools/call` `oxp:tools:call` and its OXP tool's `required_scopes`; a
   * token without one of them gets a 403 naming every scope the request needs, so that a client signs in once for
   * all of them. The body is read here once (bounded as the SDK bounds it) and handed to the SDK parsed.
   */
  async serve(
    request: Request,
    authInfo: AuthInfo,
    serve: (request: Request, options: { authInfo: AuthInfo; parsedBody?: unknown }) => Promise<Response>,
  ): Promise<Response> {
    const caller = callerOf(authInfo) as McpCaller;
    const read = await readRequestBody(request, DEFAULT_MAX_REQUEST_BODY_SIZE);
    if (read.tooLarge) {
      return Response.json(
        { jsonrpc: "2.0", id: null, error: { code: -32000, message: "Payload too large" } },
        { status: 413 },
      );
    }
    let parsed: unknown;
    try {
      parsed = read.text.length === 0 ? undefined : JSON.parse(read.text);
    } catch {
      // The SDK answers what it cannot parse: given the text again, it says so in its own words.
      parsed = undefined;
    }
    if (parsed === undefined) {
      return serve(new Request(request, { body: read.text }), { authInfo });
    }
    const needed = await this.scopesOf(parsed, request.signal);
    if (missingScopes(needed, caller.scopes).length > 0) {
      const refused = wireAnswer(this.resource.insufficientScope(needed));
      return new Response(refused.body ?? null, { status: refused.status, headers: refused.headers });
    }
    return serve(request, { authInfo, parsedBody: parsed });
  }

  /** Every scope the JSON-RPC requests of a body (one message or a batch) need, in the order first met. */
  private async scopesOf(body: unknown, signal: AbortSignal): Promise<string[]> {
    const needed = new Set<string>();
    for (const message of Array.isArray(body) ? body : [body]) {
      if (typeof message !== "object" || message === null) {
        continue;
      }
      const { method, params } = message as { method?: unknown; params?: { name?: unknown } };
      if (method === "tools/list") {
        needed.add(READ_SCOPE);
      } else if (method === "tools/call") {
        const name = typeof params?.name === "string" ? params.name : undefined;
        // A catalog that cannot be read now asks only oxp:tools:call here: the call itself checks its tool's scopes.
        const scopes =
          name === undefined
            ? callScopes(undefined)
            : await this.bridge.callScopes(name, signal).catch(() => callScopes(undefined));
        for (const scope of scopes) {
          needed.add(scope);
        }
      }
    }
    return [...needed];
  }
}
