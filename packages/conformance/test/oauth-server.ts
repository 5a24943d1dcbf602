// A small OXP server with the oauth extension (docs/protocol.md 9.6), its access tokens HS256 JWTs of a test secret, and switches that each break one rule: the kit's oauth scenarios must catch every one.
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One deliberate bug, named after what the server does wrong. */
export type OAuthBug =
  | "metadata-needs-auth"
  | "metadata-not-path-inserted"
  | "discovery-wrong-url"
  | "challenge-without-metadata"
  | "challenge-wrong-scope"
  | "invalid-token-unnamed"
  | "accepts-unsigned"
  | "list-scope-401"
  | "call-without-scope"
  | "only-missing-scope"
  | "lists-uncallable"
  | "list-not-private"
  | "scopes-without-header"
  | "user-mismatch-accepted";

/** How the server is set up. */
export interface OAuthServerOptions {
  /** The HS256 secret of its access tokens (the test's authorization server, in effect). */
  secret: string;
  /** Whether it applies the oauth extension (default true); without it, discovery lists nothing. */
  oauth?: boolean;
  bugs?: readonly OAuthBug[];
}

/** The server's canonical URL: a path, so that the metadata has a path-inserted form. */
export const RESOURCE = "https://tools.oauth-server.test/oxp";
/** The issuer its tokens must name. */
export const ISSUER = "https://as.oauth-server.test";
const WELL_KNOWN = "/.well-known/oauth-protected-resource";
const METADATA_URL = `https://tools.oauth-server.test${WELL_KNOWN}/oxp`;
const READ = "oxp:tools:read";
const CALL = "oxp:tools:call";

const tool = (id: string, properties: Record<string, string>, requiredScopes?: string[]) => ({
  id,
  name: id.replace(/@.*/, "").replace(".", "_"),
  description: `The tool ${id}.`,
  version: id.replace(/.*@/, ""),
  input_schema: {
    type: "object",
    properties: Object.fromEntries(
      Object.entries(properties).map(([name, type]) => [name, { type, description: name.toUpperCase() }]),
    ),
    required: Object.keys(properties),
    additionalProperties: false,
  },
  output_schema: { type: "object" },
  ...(requiredScopes ? { required_scopes: requiredScopes } : {}),
});

/** A sum anyone with oxp:tools:call may run, and a mail that needs mail:send besides. */
export const CATALOG = [
  tool("Calc.Add@1.0.0", { a: "number", b: "number" }),
  tool("Mail.Send@1.0.0", { to: "string" }, ["mail:send"]),
];

/** An access token of this server: HS256, signed with `secret`, for the server's resource. */
export function signToken(secret: string, claims: { sub: string; scope: string }): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const now = Math.floor(Date.now() / 1000);
  const unsigned = `${encode({ alg: "HS256", typ: "at+jwt" })}.${encode({ iss: ISSUER, aud: RESOURCE, iat: now, exp: now + 300, ...claims })}`;
  return `${unsigned}.${createHmac("sha256", secret).update(unsigned).digest("base64url")}`;
}

/** The grant of a bearer token: its `sub` and scopes; undefined when it is not a valid access token of the server. */
function grantOf(token: string, secret: string, acceptUnsigned: boolean) {
  const [head, body, signature = ""] = token.split(".");
  if (!head || !body) {
    return undefined;
  }
  try {
    const alg = (JSON.parse(Buffer.from(head, "base64url").toString("utf8")) as { alg?: unknown }).alg;
    if (!(acceptUnsigned && alg === "none")) {
      const expected = createHmac("sha256", secret).update(`${head}.${body}`).digest();
      const given = Buffer.from(signature, "base64url");
      if (alg !== "HS256" || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return undefined;
      }
    }
    const claims = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Record<string, unknown>;
    const fresh = typeof claims.exp === "number" && claims.exp * 1000 > Date.now();
    if (!fresh || claims.iss !== ISSUER || claims.aud !== RESOURCE || typeof claims.sub !== "string") {
      return undefined;
    }
    return { sub: claims.sub, scopes: new Set(String(claims.scope ?? "").split(" ")) };
  } catch {
    return undefined;
  }
}

/** Starts the server on 127.0.0.1, port 0. */
export async function startOAuthServer(options: OAuthServerOptions): Promise<{ url: string; close(): Promise<void> }> {
  const bugs = new Set(options.bugs ?? []);
  const offersOAuth = options.oauth ?? true;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    res
      .writeHead(status, { "OXP-Version": "1.0", "content-type": "application/json", ...headers })
      .end(JSON.stringify(body));
  const metadata = {
    resource: RESOURCE,
    authorization_servers: [ISSUER],
    scopes_supported: [READ, CALL, "mail:send"],
    bearer_methods_supported: ["header"],
  };
  /** A 401, its challenge saying where to sign in and what to ask for. */
  const unauthorized = (res: ServerResponse, scopes: string[], tokenSent: boolean) => {
    const error = tokenSent && !bugs.has("invalid-token-unnamed") ? 'error="invalid_token", ' : "";
    const where = !tokenSent && bugs.has("challenge-without-metadata") ? "" : `resource_metadata="${METADATA_URL}", `;
    return send(
      res,
      401,
      { message: "Unauthorized" },
      { "WWW-Authenticate": `Bearer ${error}${where}scope="${scopes.join(" ")}"` },
    );
  };
  /** A 403 of too few scopes: one challenge naming every scope the operation needs (with the bug, the missing ones). */
  const forbidden = (res: ServerResponse, needed: string[], granted: Set<string>) => {
    const named = bugs.has("only-missing-scope") ? needed.filter((scope) => !granted.has(scope)) : needed;
    return send(
      res,
      403,
      { message: "The access token does not allow this", developer_message: `This needs ${named.join(" ")}.` },
      {
        "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${named.join(" ")}", resource_metadata="${METADATA_URL}"`,
      },
    );
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const path = url.pathname;
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
      const grant = token === undefined ? undefined : grantOf(token, options.secret, bugs.has("accepts-unsigned"));
      if (path === "/health") {
        return send(res, 200, { status: "healthy" });
      }
      if (path === "/.well-known/oxp") {
        const where = bugs.has("discovery-wrong-url") ? `https://tools.oauth-server.test${WELL_KNOWN}` : METADATA_URL;
        return send(
          res,
          200,
          offersOAuth
            ? { oxp_versions: ["1.0"], extensions: ["oauth"], extension_info: { oauth: { resource_metadata: where } } }
            : { oxp_versions: ["1.0"], extensions: [] },
        );
      }
      const inserted = path === `${WELL_KNOWN}/oxp` && !bugs.has("metadata-not-path-inserted");
      if (offersOAuth && (path === WELL_KNOWN || inserted)) {
        if (bugs.has("metadata-needs-auth") && !grant) {
          return unauthorized(res, [READ, CALL], token !== undefined);
        }
        return send(res, 200, metadata);
      }
      const route = path === "/tools" && req.method === "GET" ? "list" : path === "/tools/call" ? "call" : undefined;
      const routeScopes = route === "list" ? [READ] : [CALL];
      if (!grant) {
        const wrong = route === "call" && token === undefined && bugs.has("challenge-wrong-scope");
        return unauthorized(res, wrong ? [READ] : routeScopes, token !== undefined);
      }
      if (route === "list") {
        if (!grant.scopes.has(READ)) {
          return bugs.has("list-scope-401") ? unauthorized(res, [READ], true) : forbidden(res, [READ], grant.scopes);
        }
        const asked = /\boauth\b/i.test(String(req.headers["oxp-extensions"] ?? ""));
        const items = CATALOG.filter(
          (entry) =>
            bugs.has("lists-uncallable") || (entry.required_scopes ?? []).every((scope) => grant.scopes.has(scope)),
        ).map(({ required_scopes, ...rest }) =>
          required_scopes && (asked || bugs.has("scopes-without-header")) ? { ...rest, required_scopes } : rest,
        );
        return send(
          res,
          200,
          { items },
          {
            ...(bugs.has("list-not-private") ? {} : { "Cache-Control": "private" }),
            ...(asked ? { "OXP-Extensions": "oauth" } : {}),
            Vary: "Accept-Encoding, OXP-Extensions",
          },
        );
      }
      if (route !== "call") {
        return send(res, 404, { message: "Not found" });
      }
      let body: {
        tool_id?: unknown;
        call_id?: unknown;
        input?: Record<string, unknown>;
        context?: { user_id?: unknown };
      };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return send(res, 400, { message: "The body is not JSON" });
      }
      const definition = CATALOG.find(
        (entry) => entry.id === body.tool_id || entry.id.replace(/@.*/, "") === body.tool_id,
      );
      if (!definition) {
        return send(res, 400, { message: "Unknown tool" });
      }
      const needed = [CALL, ...(definition.required_scopes ?? [])];
      const checked = definition.required_scopes !== undefined || !bugs.has("call-without-scope");
      if (checked && !needed.every((scope) => grant.scopes.has(scope))) {
        return forbidden(res, needed, grant.scopes);
      }
      const userId = body.context?.user_id;
      if (userId !== undefined && userId !== grant.sub && !bugs.has("user-mismatch-accepted")) {
        return send(res, 403, { message: "The access token is not the user's the call names" });
      }
      const input = body.input ?? {};
      const types = definition.input_schema.properties as Record<string, { type: string }>;
      const errors = Object.fromEntries(
        Object.entries(types)
          .filter(([name, schema]) => typeof input[name] !== schema.type)
          .map(([name, schema]) => [name, `Must be a ${schema.type}`]),
      );
      if (Object.keys(errors).length > 0) {
        return send(res, 422, { message: "Some input parameters are invalid", parameter_errors: errors });
      }
      const value = definition.id.startsWith("Calc.")
        ? { sum: Number(input.a) + Number(input.b) }
        : { sent: String(input.to) };
      return send(res, 200, {
        call_id: typeof body.call_id === "string" ? body.call_id : randomUUID(),
        duration: 0,
        success: true,
        value,
      });
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
