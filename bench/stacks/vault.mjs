/**
 * The vault rows (issue 32, docs/protocol.md 9.7): a provider on 127.0.0.1 in the bench's process whose tokens the
 * vault holds, the server options of a tool that needs a user's token for it, and the connect flow run once per server.
 */
// The provider plays "Example Accounts": RFC 8414 metadata, an authorization endpoint that answers a code at once (the
// bench's user has signed in and consented already) and a token endpoint that checks the client, the code, the
// redirect URI and the PKCE verifier. The vault gets its tokens through its own code flow with PKCE, as in a
// deployment (nothing written into its store by hand), and seals them; the access token lives an hour, as Google's
// do, so nothing is refreshed in a run and no request reaches the provider while calls are measured.
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { defineTool } from "@otc/server";

/** The provider's id, as the tool names it in `requirements.authorization[].id`. */
export const VAULT_PROVIDER = "example";
/** The user whose connection the vault holds, named in `context.user_id` by an API-key caller. */
export const VAULT_USER = "bench-user";
/** The tool of the vault rows. */
export const VAULT_TOOL = "Example.TokenSource";
/** The scopes the tool requires; the connection is granted these and `offline_access`. */
const TOOL_SCOPES = ["mail.read"];
const GRANTED_SCOPES = [...TOOL_SCOPES, "offline_access"];
const CLIENT_ID = "oxp-bench-vault";
/** The host application's session cookie, which the server's `verifyBrowser` reads. */
const SESSION_COOKIE = "bench-session";
/** The provider's access tokens' lifetime (seconds): longer than a run, as a real provider's hour is. */
const ACCESS_TOKEN_TTL = 3_600;

/** An opaque token of a real provider's size (Google's access tokens run to about 200 characters). */
const opaqueToken = (prefix) => `${prefix}.${randomBytes(144).toString("base64url")}`;

/**
 * Starts the provider on 127.0.0.1 port 0. It issues `accessToken` to every exchange (one user, one token), so the
 * tool can tell it apart from `clientToken`, a token of the same size that the client rows send. `requests` counts
 * what it was asked, by endpoint.
 */
export async function startVaultProvider() {
  const accessToken = opaqueToken("vault");
  const clientToken = opaqueToken("clnt");
  const clientSecret = randomBytes(24).toString("base64url");
  const codes = new Map();
  const requests = { metadata: 0, authorize: 0, code: 0, refresh: 0, other: 0 };
  let issuer = "";
  const json = (response, status, body) =>
    response
      .writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
      .end(JSON.stringify(body));
  // HTTP Basic over the form-encoded id and secret (RFC 6749 2.3.1), as oauth4webapi sends them.
  const clientAuthenticated = (header) => {
    const [scheme, encoded] = (header ?? "").split(" ");
    try {
      const [id, secret] = Buffer.from(encoded ?? "", "base64")
        .toString()
        .split(":")
        .map((part) => decodeURIComponent(part.replaceAll("+", " ")));
      return scheme === "Basic" && id === CLIENT_ID && secret === clientSecret;
    } catch {
      return false; // a malformed escape
    }
  };
  const tokens = (scope) => ({
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: ACCESS_TOKEN_TTL,
    refresh_token: opaqueToken("refresh"),
    scope,
  });
  const server = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", issuer);
    if (request.method === "GET" && url.pathname === "/.well-known/oauth-authorization-server") {
      requests.metadata++;
      json(response, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["client_secret_basic"],
        authorization_response_iss_parameter_supported: true,
      });
    } else if (request.method === "GET" && url.pathname === "/authorize") {
      requests.authorize++;
      const asked = url.searchParams;
      const redirectUri = asked.get("redirect_uri");
      if (
        asked.get("client_id") !== CLIENT_ID ||
        asked.get("response_type") !== "code" ||
        asked.get("code_challenge_method") !== "S256" ||
        !asked.get("code_challenge") ||
        !redirectUri
      ) {
        json(response, 400, { error: "invalid_request" });
        return;
      }
      const code = randomBytes(24).toString("base64url");
      codes.set(code, { redirectUri, challenge: asked.get("code_challenge"), scope: asked.get("scope") ?? "" });
      const back = new URL(redirectUri);
      back.searchParams.set("code", code);
      back.searchParams.set("state", asked.get("state") ?? "");
      back.searchParams.set("iss", issuer);
      response.writeHead(302, { location: back.href }).end();
    } else if (request.method === "POST" && url.pathname === "/token") {
      let body = "";
      for await (const chunk of request) {
        body += chunk;
      }
      const form = new URLSearchParams(body);
      if (!clientAuthenticated(request.headers.authorization)) {
        json(response, 401, { error: "invalid_client" });
        return;
      }
      if (form.get("grant_type") === "refresh_token") {
        requests.refresh++;
        json(response, 200, tokens(GRANTED_SCOPES.join(" ")));
        return;
      }
      requests.code++;
      const flow = codes.get(form.get("code") ?? "");
      codes.delete(form.get("code") ?? "");
      const verifier = form.get("code_verifier") ?? "";
      if (
        form.get("grant_type") !== "authorization_code" ||
        !flow ||
        form.get("redirect_uri") !== flow.redirectUri ||
        createHash("sha256").update(verifier).digest("base64url") !== flow.challenge
      ) {
        json(response, 400, { error: "invalid_grant" });
        return;
      }
      json(response, 200, tokens(flow.scope));
    } else {
      requests.other++;
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${server.address().port}`;
  return {
    url: issuer,
    accessToken,
    clientToken,
    clientSecret,
    requests,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}

/** What a vault server's config carries from the bench's process (`config.vault`). */
export const vaultConfig = (provider) => ({
  issuer: provider.url,
  clientSecret: provider.clientSecret,
  accessToken: provider.accessToken,
  clientToken: provider.clientToken,
});

/**
 * The tool of the vault rows: it needs the user's token for the provider, and answers where the token it was given
 * came from (the client's, the vault's, another), never the token.
 */
function tokenSourceTool({ accessToken, clientToken }) {
  const [toolkit, name] = VAULT_TOOL.split(".");
  return defineTool({
    toolkit,
    name,
    version: "1.0.0",
    description: "Tells whether the call's Example Accounts token is the one the client sent or the vault's.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    outputSchema: {
      type: "object",
      properties: { source: { type: "string", enum: ["client", "vault", "other"] } },
      required: ["source"],
      additionalProperties: false,
    },
    requirements: { user_id: true, authorization: [{ id: VAULT_PROVIDER, oauth2: { scopes: TOOL_SCOPES } }] },
    run: (_input, ctx) => {
      const token = ctx.tokens[VAULT_PROVIDER];
      return { source: token === clientToken ? "client" : token === accessToken ? "vault" : "other" };
    },
  });
}

/**
 * The options a vault server adds to its catalog and API key: the tool, and the connections extension with one
 * provider, a fresh key-encryption key and its default store (this process's memory: `MemoryConnectionStore`).
 * Client tokens are accepted (the default), so both rows run against the same process.
 */
export function vaultServerOptions(vault) {
  return {
    tools: [tokenSourceTool(vault)],
    connections: {
      providers: [
        {
          id: VAULT_PROVIDER,
          name: "Example Accounts",
          issuer: vault.issuer,
          clientId: CLIENT_ID,
          clientSecret: vault.clientSecret,
          scopes: GRANTED_SCOPES,
        },
      ],
      keys: [{ id: "bench-k1", key: randomBytes(32).toString("base64url") }],
      verifyBrowser: (request, owner) => request.headers.get("cookie") === `${SESSION_COOKIE}=${owner.userId}`,
    },
  };
}

/**
 * Connects {@link VAULT_USER}'s account on the server at `url` through its public API, as the user's browser would:
 * `POST /connections`, the provider's authorization page, the callback with the app's session cookie. Then checks
 * that `GET /connections` lists it active. Throws on any other answer.
 */
export async function connectVaultUser(url, apiKey) {
  const headers = { "oxp-api-key": apiKey, "oxp-extensions": "connections", "content-type": "application/json" };
  const started = await fetch(`${url}/connections`, {
    method: "POST",
    headers,
    body: JSON.stringify({ provider: VAULT_PROVIDER, user_id: VAULT_USER }),
  });
  if (started.status !== 201) {
    throw new Error(`POST /connections: ${started.status} ${(await started.text()).slice(0, 200)}`);
  }
  const authorized = await fetch((await started.json()).url, { redirect: "manual" });
  const callback = authorized.headers.get("location");
  if (authorized.status !== 302 || !callback) {
    throw new Error(`the provider's authorization page: ${authorized.status}`);
  }
  const page = await fetch(callback, { headers: { cookie: `${SESSION_COOKIE}=${VAULT_USER}` } });
  if (page.status !== 200) {
    throw new Error(`the callback: ${page.status} ${(await page.text()).slice(0, 200)}`);
  }
  const listed = await fetch(`${url}/connections?user_id=${VAULT_USER}`, { headers });
  const items = (await listed.json()).items ?? [];
  if (!items.some((item) => item.provider === VAULT_PROVIDER && item.status === "active")) {
    throw new Error(`GET /connections lists no active connection: ${JSON.stringify(items).slice(0, 200)}`);
  }
}
