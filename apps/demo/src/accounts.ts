/** Example Accounts: an OpenID Connect provider (oidc-provider) inside the demo process under /accounts, the authorization server of the demo's oauth extension and the third-party provider of its connections. Node only. */
import { generateKeyPairSync, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { PageHandler } from "@otc/server/node";
import escapeHtml from "escape-html";
import { GMAIL_READONLY_SCOPE } from "./tools.js";

/** Where Example Accounts is mounted below the demo's public URL: its issuer is `<public URL>/accounts`. */
export const ACCOUNTS_PATH = "/accounts";
/** A public client pre-registered for `otc login --client-id otc` (dynamic registration makes its own otherwise). */
export const OTC_CLIENT_ID = "otc";
/** The demo's own sign-in (`/demo/signin`), a confidential client. */
export const SIGNIN_CLIENT_ID = "demo-signin";
/** The connections vault of the demo, a confidential client: the provider `example`. */
export const CONNECTIONS_CLIENT_ID = "demo-connections";
/** The connections vault again, as the provider `google` (Gmail.GetEmails's): the one client that may ask for the Gmail scope. */
export const GOOGLE_CLIENT_ID = "demo-google";
/** Where the demo's sign-in comes back, below the public URL. */
export const SIGNIN_CALLBACK_PATH = "/demo/signin/callback";

/** The scopes of the demo's tool server, as a resource (RFC 8707) of Example Accounts. */
const RESOURCE_SCOPES = ["oxp:tools:read", "oxp:tools:call"];
/** The OpenID Connect scopes every client may ask for. */
const OIDC_SCOPES = ["openid", "offline_access", "email", "profile"];
/**
 * The scopes of Example Accounts standing in for Google, for the `google` client only. A connection flow names no
 * resource, so oidc-provider keeps only the scopes of its `scopes` list (the others it drops without a word): they
 * are listed there beside the OpenID ones, and granted on the consent page as those are.
 */
const GOOGLE_SCOPES = [GMAIL_READONLY_SCOPE];
/** How many records (clients, grants, sessions, codes, tokens) Example Accounts keeps: registration is open to anyone. */
const MAX_RECORDS = 10_000;
/** The largest login or consent form read: two short fields. */
const MAX_FORM_BYTES = 4_096;

/** What {@link createExampleAccounts} takes. */
export interface ExampleAccountsOptions {
  /** The demo's public base URL (`http://127.0.0.1:8080`): the resource its tokens are for, and the issuer's base. */
  publicUrl: string;
  /** The test user's password. Default: random, made at start. */
  password?: string;
  /** The lifetime of access tokens, in seconds. Default 600. */
  accessTokenTtlSeconds?: number;
}

/** A confidential client of Example Accounts. */
export interface AccountsClient {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

/** A running Example Accounts. */
export interface ExampleAccounts {
  /** `<public URL>/accounts`: the `iss` of its tokens. */
  readonly issuer: string;
  /** The demo's canonical URL, the `aud` of the access tokens it issues for the demo. */
  readonly resource: string;
  /** The one account: `demo`, with its password. */
  readonly user: { id: string; password: string; name: string; email: string };
  /** The demo's sign-in client. */
  readonly signIn: AccountsClient;
  /** The connections vault's client, as the provider `example`. */
  readonly connections: AccountsClient;
  /** The connections vault's client as the provider `google`, standing in for Google: it may ask for the Gmail scope. */
  readonly google: AccountsClient;
  /** Its endpoints, as its metadata names them. */
  readonly endpoints: { authorization: string; token: string; userinfo: string };
  /** The node-style page that serves it (and its RFC 8414 metadata at `/.well-known/oauth-authorization-server/accounts`). */
  readonly page: PageHandler;
}

// The little of oidc-provider's API used here: the package ships no types.
interface KoaContext {
  method: string;
  path: string;
  status: number;
  type: string;
  body: unknown;
  req: IncomingMessage;
  res: ServerResponse;
  get(name: string): string;
}
interface InteractionDetails {
  uid: string;
  prompt: { name: string; details: Record<string, unknown> };
  params: Record<string, unknown> & { client_id: string };
  session?: { accountId?: string };
  grantId?: string;
}
interface Grant {
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(indicator: string, scope: string): void;
  save(): Promise<string>;
}
interface ProviderClient {
  clientId: string;
  grantTypeAllowed(type: string): boolean;
}
interface Provider {
  proxy: boolean;
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): void;
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: Record<string, unknown>,
    options?: { mergeWithLastSubmission: boolean },
  ): Promise<void>;
  Grant: { new (init: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
  on(event: string, listener: (...args: unknown[]) => void): void;
}
interface ProviderModule {
  Provider: new (issuer: string, configuration: Record<string, unknown>) => Provider;
  errors: {
    InvalidTarget: new (description?: string) => Error;
    InvalidClientMetadata: new (description?: string) => Error;
  };
}

let loaded: Promise<ProviderModule> | undefined;

/** Imports oidc-provider once, without the one line its 9.x prints on Node 20, where it runs (its tests check). */
function loadProvider(): Promise<ProviderModule> {
  loaded ??= (async () => {
    // biome-ignore lint/suspicious/noConsole: only oidc-provider's runtime warning is dropped, every other passes
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (!(typeof args[0] === "string" && args[0].includes("oidc-provider WARNING: Unsupported runtime"))) {
        warn(...args);
      }
    };
    try {
      // Not a literal: the type checker would look for the types the package does not ship.
      const specifier: string = "oidc-provider";
      return (await import(specifier)) as ProviderModule;
    } finally {
      console.warn = warn;
    }
  })();
  return loaded;
}

/**
 * Starts Example Accounts for a demo served at `publicUrl`: keys made now, one user (`demo`), an in-memory store
 * bounded to {@link MAX_RECORDS} records; JWT access tokens (RFC 9068) for the demo as a resource with the scopes
 * oxp:tools:read and oxp:tools:call; PKCE required of every client; rotating refresh tokens; dynamic registration
 * (RFC 7591) open to public native clients with loopback redirect URIs, as `otc login` registers; the vault's
 * clients for its providers `example` and `google` (Gmail's scope, for that client alone).
 *
 * @example
 * const accounts = await createExampleAccounts({ publicUrl: "http://127.0.0.1:8080" });
 * const { app } = createDemoApp({ publicUrl: "http://127.0.0.1:8080", accounts });
 */
export async function createExampleAccounts(options: ExampleAccountsOptions): Promise<ExampleAccounts> {
  const { Provider, errors } = await loadProvider();
  // The canonical URL as the oauth extension writes it: no trailing `/`.
  const resource = options.publicUrl.replace(/\/+$/, "");
  const issuer = `${resource}${ACCOUNTS_PATH}`;
  const accessTokenTtl = options.accessTokenTtlSeconds ?? 600;
  const user = {
    id: "demo",
    password: options.password ?? randomBytes(9).toString("base64url"),
    name: "Demo User",
    email: "demo@example.com",
  };
  const signIn: AccountsClient = {
    clientId: SIGNIN_CLIENT_ID,
    clientSecret: randomBytes(24).toString("base64url"),
    redirectUri: `${resource}${SIGNIN_CALLBACK_PATH}`,
  };
  const connections: AccountsClient = {
    clientId: CONNECTIONS_CLIENT_ID,
    clientSecret: randomBytes(24).toString("base64url"),
    redirectUri: `${resource}/connections/callback`,
  };
  const google: AccountsClient = {
    clientId: GOOGLE_CLIENT_ID,
    clientSecret: randomBytes(24).toString("base64url"),
    redirectUri: connections.redirectUri,
  };
  const fixedClients = new Set([OTC_CLIENT_ID, SIGNIN_CLIENT_ID, CONNECTIONS_CLIENT_ID, GOOGLE_CLIENT_ID]);

  // Made at every start: tokens of an earlier run no longer verify, as nothing of it is kept either.
  const { privateKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const signingKey = {
    ...privateKey.export({ format: "jwk" }),
    kid: randomBytes(8).toString("base64url"),
    alg: "ES256",
    use: "sig",
  };

  const store = new BoundedStore(MAX_RECORDS);
  const provider = new Provider(issuer, {
    adapter: (model: string) => store.adapter(model),
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString("base64url")] },
    clients: [
      {
        client_id: OTC_CLIENT_ID,
        redirect_uris: ["http://127.0.0.1/callback"],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "none",
        application_type: "native",
      },
      ...[signIn, connections, google].map((client) => ({
        client_id: client.clientId,
        client_secret: client.clientSecret,
        redirect_uris: [client.redirectUri],
        grant_types: client === signIn ? ["authorization_code"] : ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
        ...(client === google ? { scope: [...OIDC_SCOPES, ...GOOGLE_SCOPES].join(" ") } : {}),
      })),
    ],
    // A client's `scope` is what it may ask for of the `scopes` below: by default the OpenID ones, not Google's.
    clientDefaults: { id_token_signed_response_alg: "ES256", scope: OIDC_SCOPES.join(" ") },
    async findAccount(_ctx: unknown, sub: string) {
      return sub === user.id
        ? {
            accountId: user.id,
            claims: async () => ({
              sub: user.id,
              name: user.name,
              preferred_username: user.id,
              email: user.email,
              email_verified: true,
            }),
          }
        : undefined;
    },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name", "preferred_username"] },
    scopes: [...OIDC_SCOPES, ...GOOGLE_SCOPES],
    responseTypes: ["code"],
    pkce: { required: () => true },
    // oidc-provider keeps offline_access only with prompt=consent, which OAuth clients do not send: every client
    // registered for refresh tokens gets one, living its own lifetime rather than the login session's.
    issueRefreshToken: async (_ctx: unknown, client: ProviderClient) => client.grantTypeAllowed("refresh_token"),
    expiresWithSession: async () => false,
    rotateRefreshToken: true,
    ttl: {
      AccessToken: accessTokenTtl,
      AuthorizationCode: 60,
      IdToken: 3600,
      RefreshToken: 86_400,
      Interaction: 600,
      Session: 28_800,
      Grant: 86_400,
    },
    interactions: {
      url: (_ctx: unknown, interaction: { uid: string }) => `${ACCOUNTS_PATH}/interaction/${interaction.uid}`,
    },
    async renderError(ctx: KoaContext, out: Record<string, string>) {
      ctx.type = "html";
      ctx.body = page(
        "Example Accounts: error",
        `<p id="error">${escapeHtml(out.error ?? "error")}: ${escapeHtml(out.error_description ?? "")}</p>`,
      );
    },
    // A hook on every client's metadata: a client registered by anyone must be one `otc login` would register.
    extraClientMetadata: {
      properties: ["otc_registration_policy"],
      validator(_ctx: unknown, _key: string, _value: unknown, metadata: Record<string, unknown>) {
        if (typeof metadata.client_id === "string" && fixedClients.has(metadata.client_id)) {
          return;
        }
        const problem = registrationProblem(metadata);
        if (problem) {
          throw new errors.InvalidClientMetadata(problem);
        }
      },
    },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A token request may leave `resource` out when the grant holds one resource only.
        useGrantedResource: async () => true,
        async getResourceServerInfo(_ctx: unknown, indicator: string) {
          if (indicator !== resource) {
            throw new errors.InvalidTarget(`${indicator} is not a resource Example Accounts issues tokens for`);
          }
          return {
            scope: RESOURCE_SCOPES.join(" "),
            audience: resource,
            accessTokenTTL: accessTokenTtl,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "ES256" } },
          };
        },
      },
    },
  });
  // Behind a TLS proxy (an https public URL) the request's scheme is the proxy's to tell.
  provider.proxy = new URL(issuer).protocol === "https:";
  const issuerOrigin = new URL(issuer).origin;

  provider.use(async (ctx, next) => {
    const interaction = /^\/interaction\/([^/]+)(?:\/(login|confirm))?$/.exec(ctx.path);
    if (!interaction) {
      await next();
      return;
    }
    await interact(ctx, interaction[2]).catch((error: unknown) => {
      // An interaction expired or finished already (oidc-provider's SessionNotFound): a page, not Koa's stack.
      ctx.status = (error as { status?: number }).status ?? 500;
      ctx.type = "html";
      ctx.body = page(
        "Example Accounts: error",
        `<p id="error">${escapeHtml(String((error as Error).message ?? error))}</p>`,
      );
    });
  });

  /** The login and consent pages: the interaction's prompt says which one is due. */
  async function interact(ctx: KoaContext, action: string | undefined): Promise<void> {
    ctx.res.setHeader("Cache-Control", "no-store");
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const { uid, prompt, params } = details;
    const base = `${ACCOUNTS_PATH}/interaction/${encodeURIComponent(uid)}`;
    if (ctx.method === "GET" && action === undefined) {
      ctx.type = "html";
      ctx.body =
        prompt.name === "login"
          ? loginPage(base, params.client_id)
          : consentPage(base, params.client_id, typeof params.scope === "string" ? params.scope.split(" ") : []);
      return;
    }
    if (ctx.method !== "POST" || action === undefined) {
      ctx.status = 405;
      return;
    }
    // The interaction's cookie is SameSite=Lax, so another site's form arrives without it; an Origin that is
    // not this one is refused as well.
    const origin = ctx.get("origin");
    if (origin !== "" && origin !== issuerOrigin) {
      ctx.status = 403;
      ctx.type = "html";
      ctx.body = page("Example Accounts: error", `<p id="error">This form was posted from another site.</p>`);
      return;
    }
    const form = await readForm(ctx.req);
    if (action === "login" && prompt.name === "login") {
      if (form.get("login") !== user.id || !samePassword(form.get("password") ?? "", user.password)) {
        ctx.status = 401;
        ctx.type = "html";
        ctx.body = loginPage(base, params.client_id, "Wrong account or password.");
        return;
      }
      await provider.interactionFinished(
        ctx.req,
        ctx.res,
        { login: { accountId: user.id } },
        { mergeWithLastSubmission: false },
      );
      return;
    }
    if (action === "confirm" && prompt.name === "consent") {
      if (form.get("decision") !== "allow") {
        await provider.interactionFinished(
          ctx.req,
          ctx.res,
          { error: "access_denied", error_description: "the user denied the request" },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      await provider.interactionFinished(ctx.req, ctx.res, { consent: { grantId: await grantConsent(details) } });
      return;
    }
    ctx.status = 400;
    ctx.type = "html";
    ctx.body = page(
      "Example Accounts: error",
      `<p id="error">The ${escapeHtml(prompt.name)} step is due, not ${escapeHtml(action)}.</p>`,
    );
  }

  /** Grants what the consent prompt found missing, to the interaction's grant or a new one. */
  async function grantConsent(details: InteractionDetails): Promise<string> {
    const accountId = details.session?.accountId;
    if (!accountId) {
      throw new Error("consent without a signed-in user");
    }
    const grant =
      (details.grantId ? await provider.Grant.find(details.grantId) : undefined) ??
      new provider.Grant({ accountId, clientId: details.params.client_id });
    const missing = details.prompt.details as {
      missingOIDCScope?: string[];
      missingOIDCClaims?: string[];
      missingResourceScopes?: Record<string, string[]>;
    };
    if (missing.missingOIDCScope) {
      grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    }
    if (missing.missingOIDCClaims) {
      grant.addOIDCClaims(missing.missingOIDCClaims);
    }
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(" "));
    }
    return grant.save();
  }

  const handle = provider.callback();
  const metadataPath = `/.well-known/oauth-authorization-server${ACCOUNTS_PATH}`;
  const servePage: PageHandler = (req, res, next) => {
    const url = req.url ?? "/";
    const path = url.split("?")[0] ?? "";
    let inner: string;
    if (path === metadataPath) {
      // RFC 8414's place for an issuer with a path; oidc-provider serves the same document as OpenID's.
      inner = "/.well-known/openid-configuration";
    } else if (path === ACCOUNTS_PATH || path.startsWith(`${ACCOUNTS_PATH}/`)) {
      inner = url.slice(ACCOUNTS_PATH.length) || "/";
    } else {
      next();
      return;
    }
    // Mounted as Express mounts an app: oidc-provider finds its mount path from `originalUrl` and `baseUrl`.
    Object.assign(req, { originalUrl: url, baseUrl: ACCOUNTS_PATH });
    req.url = inner;
    res.setHeader("X-Frame-Options", "DENY");
    res.setHeader(
      "Content-Security-Policy",
      "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
    );
    res.setHeader("X-Content-Type-Options", "nosniff");
    handle(req, res);
  };

  return {
    issuer,
    resource,
    user,
    signIn,
    connections,
    google,
    endpoints: {
      authorization: `${issuer}/auth`,
      token: `${issuer}/token`,
      userinfo: `${issuer}/me`,
    },
    page: servePage,
  };
}

/** Why a client registered by anyone is refused, or undefined: it must be public, native, loopback-redirected. */
function registrationProblem(metadata: Record<string, unknown>): string | undefined {
  if (metadata.token_endpoint_auth_method !== "none") {
    return "only public clients (token_endpoint_auth_method none) may register here";
  }
  if (metadata.application_type !== "native") {
    return "only native clients (application_type native) may register here";
  }
  const uris = Array.isArray(metadata.redirect_uris) ? metadata.redirect_uris : [];
  if (uris.length === 0 || uris.length > 4) {
    return "give one to four redirect_uris";
  }
  for (const uri of uris) {
    const url = typeof uri === "string" ? URL.parse(uri) : null;
    if (url?.protocol !== "http:" || !["127.0.0.1", "[::1]", "localhost"].includes(url.hostname)) {
      return "redirect_uris must be loopback addresses (http://127.0.0.1/...), as RFC 8252 has native clients use";
    }
  }
  const grants = Array.isArray(metadata.grant_types) ? metadata.grant_types : [];
  if (!grants.every((grant) => grant === "authorization_code" || grant === "refresh_token")) {
    return "grant_types may be authorization_code and refresh_token only";
  }
  if (typeof metadata.scope === "string" && metadata.scope.split(" ").some((scope) => GOOGLE_SCOPES.includes(scope))) {
    return "the Gmail scope is the demo's own google client's";
  }
  if (typeof metadata.client_name === "string" && metadata.client_name.length > 200) {
    return "client_name is longer than 200 characters";
  }
  return undefined;
}

function samePassword(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function page(title: string, body: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem}label,input,button{display:block;margin:.4rem 0}input{width:100%;padding:.4rem}button{padding:.4rem 1rem}</style></head>
<body>
<h1>${escapeHtml(title)}</h1>
${body}
</body>
</html>
`;
}

function loginPage(base: string, clientId: string, error?: string): string {
  return page(
    "Sign in to Example Accounts",
    `<p>to continue to <strong id="client">${escapeHtml(clientId)}</strong></p>
${error ? `<p id="error" role="alert">${escapeHtml(error)}</p>\n` : ""}<form id="login-form" method="post" action="${escapeHtml(base)}/login">
<label for="login">Account</label> <input id="login" name="login" type="text" autocomplete="username" required autofocus>
<label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required>
<button id="submit" type="submit">Sign in</button>
</form>`,
  );
}

function consentPage(base: string, clientId: string, scopes: string[]): string {
  const items = scopes.map((scope) => `<li>${escapeHtml(scope)}</li>`).join("");
  return page(
    "Allow access to your Example Accounts account?",
    `<p><strong id="client">${escapeHtml(clientId)}</strong> asks for:</p>
<ul id="scopes">${items}</ul>
<form id="consent-form" method="post" action="${escapeHtml(base)}/confirm">
<button id="submit" type="submit" name="decision" value="allow">Allow</button>
<button id="deny" type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}

/** A posted form, bounded. */
async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  let body = "";
  for await (const chunk of request) {
    body += chunk;
    if (body.length > MAX_FORM_BYTES) {
      throw Object.assign(new Error("The form is too large."), { status: 413 });
    }
  }
  return new URLSearchParams(body);
}

interface Stored {
  payload: Record<string, unknown>;
  expiresAt: number;
}

/**
 * oidc-provider's storage: in memory, at most `max` records (the oldest dropped first), each gone at its expiry.
 * Anyone may register a client or start a sign-in, so nothing here grows without a bound.
 */
class BoundedStore {
  readonly #entries = new Map<string, Stored>();
  readonly #grants = new Map<string, Set<string>>();
  readonly #uids = new Map<string, string>();

  constructor(private readonly max: number) {}

  adapter(model: string) {
    const key = (id: string) => `${model}:${id}`;
    return {
      upsert: async (id: string, payload: Record<string, unknown>, expiresIn?: number) => {
        const expiresAt = typeof expiresIn === "number" ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY;
        this.#entries.delete(key(id));
        this.#entries.set(key(id), { payload, expiresAt });
        if (typeof payload.grantId === "string") {
          const members = this.#grants.get(payload.grantId) ?? new Set<string>();
          members.add(key(id));
          this.#grants.set(payload.grantId, members);
        }
        if (typeof payload.uid === "string") {
          this.#uids.set(payload.uid, id);
        }
        this.#trim();
      },
      find: async (id: string) => this.#find(key(id)),
      findByUid: async (uid: string) => {
        const id = this.#uids.get(uid);
        return id === undefined ? undefined : this.#find(key(id));
      },
      findByUserCode: async () => undefined,
      consume: async (id: string) => {
        const stored = this.#entries.get(key(id));
        if (stored) {
          stored.payload.consumed = Math.floor(Date.now() / 1000);
        }
      },
      destroy: async (id: string) => {
        this.#delete(key(id));
      },
      revokeByGrantId: async (grantId: string) => {
        for (const member of this.#grants.get(grantId) ?? []) {
          this.#delete(member);
        }
        this.#grants.delete(grantId);
      },
    };
  }

  #find(key: string): Record<string, unknown> | undefined {
    const stored = this.#entries.get(key);
    if (stored && stored.expiresAt <= Date.now()) {
      this.#delete(key);
      return undefined;
    }
    return stored?.payload;
  }

  #delete(key: string): void {
    const stored = this.#entries.get(key);
    this.#entries.delete(key);
    if (typeof stored?.payload.uid === "string") {
      this.#uids.delete(stored.payload.uid);
    }
    const grantId = stored?.payload.grantId;
    if (typeof grantId === "string") {
      const members = this.#grants.get(grantId);
      members?.delete(key);
      if (members?.size === 0) {
        this.#grants.delete(grantId);
      }
    }
  }

  #trim(): void {
    for (const key of this.#entries.keys()) {
      if (this.#entries.size <= this.max) {
        return;
      }
      this.#delete(key);
    }
  }
}
