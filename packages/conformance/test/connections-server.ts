// A small OXP server with the connections extension (docs/protocol.md 9.7), behind one API key, its provider never reached, and switches that each break one rule: the kit's connections scenarios must catch every one.
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One deliberate bug, named after what the server does wrong. */
export type ConnectionsBug =
  | "provider-twice"
  | "routes-without-header"
  | "token-listed"
  | "user-optional"
  | "unknown-provider-accepted"
  | "check-url-completed"
  | "plain-pkce"
  | "state-reused"
  | "no-state-check"
  | "framing-allowed"
  | "unknown-delete-204"
  | "lists-every-user"
  | "deletes-others";

/** How the server is set up. */
export interface ConnectionsServerOptions {
  /** The API key every route but health, discovery and the callback needs. */
  apiKey: string;
  /** Whether it applies the connections extension (default true); without it, discovery lists nothing. */
  connections?: boolean;
  /** Users who hold a connection to the provider from the start, as if they had connected in a browser. */
  connected?: readonly string[];
  bugs?: readonly ConnectionsBug[];
}

/** The provider's authorization endpoint: flows point there; nothing here ever calls it. */
const AUTHORIZE = "https://accounts.connections-server.test/authorize";
const PROVIDER = { id: "example", name: "Example Accounts" };
const CALLBACK = "/connections/callback";
const CHECK = "/authorization/check/";

interface Connection {
  id: string;
  userId: string;
  provider: string;
  status: "active";
  scopes: string[];
  account: string;
  created_at: string;
  updated_at: string;
  /** Held, never listed (unless the bug lists it). */
  accessToken: string;
}

interface Flow {
  connectionId: string;
  userId: string;
  secret: string;
  status: "pending" | "completed" | "failed";
}

const random = (bytes = 32) => randomBytes(bytes).toString("base64url");

/** Starts the server on 127.0.0.1, port 0. */
export async function startConnectionsServer(
  options: ConnectionsServerOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  const bugs = new Set(options.bugs ?? []);
  const offered = options.connections ?? true;
  const connections = new Map<string, Connection>();
  const flows = new Map<string, Flow>();
  let lastState: string | undefined;
  const now = new Date().toISOString();
  for (const userId of options.connected ?? []) {
    const id = `c_${random(12)}`;
    connections.set(id, {
      id,
      userId,
      provider: PROVIDER.id,
      status: "active",
      scopes: ["openid", "email"],
      account: `${userId}@example.com`,
      created_at: now,
      updated_at: now,
      accessToken: `eyJhbGciOiJSUzI1NiJ9.${random(24)}.${random(24)}`,
    });
  }

  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const common = { "OXP-Version": "1.0", ...headers };
    if (body === undefined) {
      return res.writeHead(status, common).end();
    }
    return res.writeHead(status, { "content-type": "application/json", ...common }).end(JSON.stringify(body));
  };
  const page = (res: ServerResponse, status: number, title: string) =>
    res
      .writeHead(status, {
        "OXP-Version": "1.0",
        "content-type": "text/html; charset=utf-8",
        ...(bugs.has("framing-allowed") ? {} : { "X-Frame-Options": "DENY" }),
      })
      .end(`<!doctype html><title>${title}</title><h1>${title}</h1>`);
  const applied = { "OXP-Extensions": "connections" };
  const listed = ({ accessToken, userId: _user, ...wire }: Connection) =>
    bugs.has("token-listed") ? { ...wire, access_token: accessToken } : wire;

  /** Binds a flow's connection, as a completed code exchange would. */
  const bind = (flow: Flow) => {
    flow.status = "completed";
    const at = new Date().toISOString();
    connections.set(flow.connectionId, {
      id: flow.connectionId,
      userId: flow.userId,
      provider: PROVIDER.id,
      status: "active",
      scopes: ["openid"],
      account: `${flow.userId}@example.com`,
      created_at: at,
      updated_at: at,
      accessToken: random(),
    });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const base = `http://${req.headers.host}`;
      const url = new URL(req.url ?? "/", base);
      const path = url.pathname;
      if (path === "/health") {
        return send(res, 200, { status: "healthy" });
      }
      if (path === "/.well-known/oxp") {
        const providers = bugs.has("provider-twice") ? [PROVIDER, PROVIDER] : [PROVIDER];
        return send(
          res,
          200,
          offered
            ? { oxp_versions: ["1.0"], extensions: ["connections"], extension_info: { connections: { providers } } }
            : { oxp_versions: ["1.0"], extensions: [] },
        );
      }
      if (offered && path === CALLBACK && req.method === "GET") {
        const state = url.searchParams.get("state") ?? "";
        const cut = state.lastIndexOf("~");
        const flow = flows.get(state.slice(0, Math.max(cut, 0)));
        if (bugs.has("no-state-check") && url.searchParams.has("code")) {
          const latest = [...flows.values()].at(-1);
          if (latest) {
            bind(latest);
            return page(res, 200, "Connected");
          }
        }
        if (!flow || flow.secret !== state.slice(cut + 1) || flow.status !== "pending") {
          return page(res, 400, "This link is not valid");
        }
        // A real server would exchange the code now; none is ever good here.
        flow.status = "failed";
        return page(res, 400, "The provider did not connect");
      }
      if (req.headers["oxp-api-key"] !== options.apiKey) {
        return send(res, 401, { message: "Unauthorized" }, { "WWW-Authenticate": 'Bearer realm="oxp"' });
      }
      if (path.startsWith(CHECK) && req.method === "GET") {
        const flow = flows.get(decodeURIComponent(path.slice(CHECK.length)));
        if (!flow) {
          return send(res, 404, { message: "No such challenge" });
        }
        return send(res, 200, { status: bugs.has("check-url-completed") ? "completed" : flow.status });
      }
      const asked = /\bconnections\b/i.test(String(req.headers["oxp-extensions"] ?? ""));
      const isList = path === "/connections";
      const one = /^\/connections\/([^/]+)$/.exec(path);
      if (!(isList || one) || !(offered && (asked || bugs.has("routes-without-header")))) {
        return send(res, 404, { message: "Not found" });
      }
      let body: { provider?: unknown; user_id?: unknown } = {};
      if (req.method === "POST") {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
          return send(res, 400, { message: "The body is not JSON" });
        }
      }
      const named = req.method === "POST" ? body.user_id : (url.searchParams.get("user_id") ?? undefined);
      let userId: string;
      if (typeof named === "string" && named !== "") {
        userId = named;
      } else if (bugs.has("user-optional")) {
        userId = "anonymous";
      } else {
        return send(res, 400, { message: "A user id is required" });
      }
      if (one && req.method === "DELETE") {
        const id = decodeURIComponent(one[1] as string);
        const found = connections.get(id);
        if (found && (found.userId === userId || bugs.has("deletes-others"))) {
          connections.delete(id);
          return send(res, 204, undefined, applied);
        }
        if (!found && bugs.has("unknown-delete-204")) {
          return send(res, 204, undefined, applied);
        }
        return send(res, 404, { message: "No such connection" });
      }
      if (isList && req.method === "GET") {
        const items = [...connections.values()]
          .filter((entry) => bugs.has("lists-every-user") || entry.userId === userId)
          .map(listed);
        return send(res, 200, { items }, applied);
      }
      if (isList && req.method === "POST") {
        if (body.provider !== PROVIDER.id && !bugs.has("unknown-provider-accepted")) {
          return send(res, 400, {
            message: `No provider '${String(body.provider).slice(0, 64)}' can be connected here`,
          });
        }
        const challengeId = `${PROVIDER.id}.${random(12)}`;
        const flow: Flow = { connectionId: `c_${random(12)}`, userId, secret: random(), status: "pending" };
        flows.set(challengeId, flow);
        const verifier = random();
        const state = bugs.has("state-reused") && lastState ? lastState : `${challengeId}~${flow.secret}`;
        lastState = state;
        const plain = bugs.has("plain-pkce");
        const authorize = new URL(AUTHORIZE);
        for (const [name, value] of Object.entries({
          response_type: "code",
          client_id: "oxp-vault",
          redirect_uri: `${base}${CALLBACK}`,
          scope: "openid email",
          state,
          code_challenge: plain ? verifier : createHash("sha256").update(verifier).digest("base64url"),
          code_challenge_method: plain ? "plain" : "S256",
        })) {
          authorize.searchParams.set(name, value);
        }
        return send(
          res,
          201,
          {
            id: flow.connectionId,
            status: "pending",
            url: authorize.href,
            check_url: `${base}${CHECK}${encodeURIComponent(challengeId)}`,
          },
          applied,
        );
      }
      return send(res, 405, { message: "Method not allowed" });
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
