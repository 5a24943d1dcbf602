// Test helper: an OXP server holding users' connections (docs/protocol.md 9.7) against a real provider, oidc-provider on loopback
// playing "Example Accounts", and a tool that needs its token; the flow is finished over HTTP as the user's browser would.
import { randomBytes } from "node:crypto";
import { createHandler, defineTool, listen, type RunningServer } from "@otc/server/node";
import { freePort } from "@otc/test-helpers/free-port";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";

/** The agent platform's credential at the tool server: the only secret the agent's side holds. */
export const VAULT_API_KEY = "key-of-the-agent-platform";
/** The provider's id, as the tool's `requirements.authorization` names it. */
export const PROVIDER_ID = "example";
/** The host application's session cookie: its value names the signed-in user (the server's `verifyBrowser`). */
const SESSION = "session";

/** What the tool saw on one call: the token the vault put in its context (the canary), and the user it ran for. */
export interface HandedToken {
  userId: string | undefined;
  token: string;
}

/** The running tool server and provider. */
export interface VaultFixture {
  server: RunningServer;
  provider: AuthorizationServer;
  /** Every token the tool was given, in order: what the agent's side must never hold. */
  handed: HandedToken[];
  /**
   * The user's browser finishing a flow from its `url` (the provider's authorization page): signs `user` in, consents,
   * and comes back to the server's callback with the host application's session of `user`. Answers the callback's status.
   */
  completeFlow(url: string, user: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * Starts the provider, then the tool server on a port known first (the provider's registered redirect URI names it
 * exactly), with the connections extension and one provider, and the tool `Example.WhoAmI`.
 */
export async function startVaultFixture(users: readonly string[]): Promise<VaultFixture> {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const provider = await startAuthorizationServer({
    clients: [
      {
        clientId: "oxp-vault",
        clientSecret: "vault-secret",
        redirectUris: [`${publicUrl}/connections/callback`],
        grantTypes: ["authorization_code", "refresh_token"],
      },
    ],
    users: users.map((id) => ({ id, password: `${id}-password`, email: `${id}@example.com` })),
  });
  const handed: HandedToken[] = [];
  const whoAmI = defineTool({
    toolkit: "Example",
    name: "WhoAmI",
    version: "1.0.0",
    description: "Reads the user's connected Example account's profile at the provider.",
    inputSchema: { type: "object", properties: {} },
    outputSchema: {},
    requirements: { user_id: true, authorization: [{ id: PROVIDER_ID, oauth2: { scopes: ["openid"] } }] },
    annotations: { read_only: true },
    // What a real tool does with its token: asks the provider. It answers what the provider said, and the token's
    // length as a fact derived from it; never the token.
    run: async (_input, context) => {
      const token = context.tokens[PROVIDER_ID] as string;
      handed.push({ userId: context.userId, token });
      const response = await fetch(provider.url("/me"), { headers: { Authorization: `Bearer ${token}` } });
      const profile = (await response.json()) as { sub?: string };
      return { status: response.status, sub: profile.sub ?? null, length: token.length };
    },
  });
  const app = createHandler({
    tools: [whoAmI],
    publicUrl,
    auth: { apiKeys: [VAULT_API_KEY] },
    logger: false,
    connections: {
      providers: [
        {
          id: PROVIDER_ID,
          name: "Example Accounts",
          issuer: provider.issuer,
          clientId: "oxp-vault",
          clientSecret: "vault-secret",
          scopes: ["openid", "email", "offline_access"],
        },
      ],
      keys: [{ id: "k1", key: randomBytes(32).toString("base64url") }],
      verifyBrowser: (request, owner) => request.headers.get("cookie") === `${SESSION}=${owner.userId}`,
      // The vault alone: a token the agent sent would not be used, so a call that succeeds used the vault's.
      acceptClientTokens: false,
    },
  });
  let server: RunningServer;
  try {
    server = await listen(app, { port });
  } catch (error) {
    await provider.stop();
    throw error;
  }
  return {
    server,
    provider,
    handed,
    async completeFlow(url, user) {
      const authorized = await provider.completeAuthorization(url, {
        user: { id: user, password: `${user}-password` },
      });
      const callback = await fetch(authorized.redirectUrl, { headers: { cookie: `${SESSION}=${user}` } });
      await callback.body?.cancel();
      return callback.status;
    },
    async close() {
      await server.close();
      await provider.stop();
    },
  };
}
