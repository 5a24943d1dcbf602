/** The demo's own signed-in session: a sign-in at /demo/signin through Example Accounts (authorization code with PKCE, then userinfo), an HttpOnly cookie naming the user, and the connections vault's browser check against it. Web APIs only. */
import type { BrowserCheck, FetchPage } from "@otc/server/fetch";
import { constantTimeEqual } from "@otc/types";
import escapeHtml from "escape-html";

/** The sign-in page; it sends the browser to Example Accounts. */
export const SIGNIN_PATH = "/demo/signin";
const SESSION_COOKIE = "demo_session";
const FLOW_COOKIE = "demo_signin";
/** How long a session lasts, in seconds. */
const SESSION_SECONDS = 8 * 3600;
/** How long a sign-in may take at Example Accounts, in seconds. */
const FLOW_SECONDS = 600;

/** What the sign-in needs of Example Accounts. */
export interface DemoSessionOptions {
  /** The demo's public base URL, without a trailing `/`. */
  publicUrl: string;
  /** Example Accounts' issuer, which its authorization responses name in `iss` (RFC 9207). */
  issuer: string;
  client: { clientId: string; clientSecret: string; redirectUri: string };
  endpoints: { authorization: string; token: string; userinfo: string };
  /** Epoch milliseconds. Default `Date.now`. */
  now?: () => number;
}

/** The demo's sessions: a page serving the sign-in, and the browser check of the vault. */
export class DemoSession {
  private readonly key = crypto.subtle.generateKey({ name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
  private readonly now: () => number;
  private readonly secure: boolean;

  constructor(private readonly options: DemoSessionOptions) {
    this.now = options.now ?? Date.now;
    this.secure = new URL(options.publicUrl).protocol === "https:";
  }

  /** `[connections.browser-bound]`: the browser's signed-in user is the flow's. */
  readonly verifyBrowser: BrowserCheck = async (request, owner) => (await this.userOf(request)) === owner.userId;

  /** The user the request's session cookie names, when it holds a valid one. */
  async userOf(request: Request): Promise<string | undefined> {
    const session = await this.open(cookieOf(request, SESSION_COOKIE), "session");
    return typeof session?.user === "string" ? session.user : undefined;
  }

  /** Serves `/demo/signin` (starts a sign-in) and `/demo/signin/callback` (finishes it). */
  page(): FetchPage {
    const callbackPath = new URL(this.options.client.redirectUri).pathname;
    return (request) => {
      const { pathname } = new URL(request.url);
      if (request.method !== "GET" || (pathname !== SIGNIN_PATH && pathname !== callbackPath)) {
        return undefined;
      }
      return pathname === SIGNIN_PATH ? this.start() : this.finish(request);
    };
  }

  private async start(): Promise<Response> {
    const state = randomText();
    const verifier = randomText();
    const flow = await this.seal({ kind: "flow", state, verifier, exp: this.now() / 1000 + FLOW_SECONDS });
    const { client, endpoints } = this.options;
    const url = new URL(endpoints.authorization);
    url.search = new URLSearchParams({
      response_type: "code",
      client_id: client.clientId,
      redirect_uri: client.redirectUri,
      scope: "openid profile",
      state,
      code_challenge: await challengeOf(verifier),
      code_challenge_method: "S256",
    }).toString();
    return new Response(null, {
      status: 303,
      headers: {
        Location: url.href,
        "Set-Cookie": this.cookie(FLOW_COOKIE, flow, FLOW_SECONDS, new URL(client.redirectUri).pathname),
        "Cache-Control": "no-store",
      },
    });
  }

  private async finish(request: Request): Promise<Response> {
    const parameters = new URL(request.url).searchParams;
    const flow = await this.open(cookieOf(request, FLOW_COOKIE), "flow");
    const state = parameters.get("state") ?? "";
    if (!flow || typeof flow.state !== "string" || !constantTimeEqual(state, flow.state)) {
      return htmlPage(
        400,
        "This sign-in is not valid",
        `It expired or was started in another browser. <a href="${SIGNIN_PATH}">Sign in again</a>.`,
      );
    }
    const iss = parameters.get("iss");
    if (iss !== null && iss !== this.options.issuer) {
      return htmlPage(400, "This sign-in is not valid", "It names another issuer than Example Accounts.");
    }
    const error = parameters.get("error");
    const code = parameters.get("code");
    if (error !== null || code === null) {
      return htmlPage(
        400,
        "You are not signed in",
        `Example Accounts answered ${escapeHtml((error ?? "no code").slice(0, 64))}.`,
      );
    }
    const user = await this.userFor(code, String(flow.verifier));
    if (!user) {
      return htmlPage(502, "You are not signed in", "Example Accounts did not confirm who you are. Sign in again.");
    }
    const session = await this.seal({ kind: "session", user, exp: this.now() / 1000 + SESSION_SECONDS });
    const headers = new Headers({ "Cache-Control": "no-store" });
    headers.append("Set-Cookie", this.cookie(SESSION_COOKIE, session, SESSION_SECONDS, "/"));
    headers.append("Set-Cookie", this.cookie(FLOW_COOKIE, "", 0, new URL(this.options.client.redirectUri).pathname));
    return htmlPage(
      200,
      "Signed in",
      `<p>You are signed in to the demo as <strong id="user">${escapeHtml(user)}</strong>. Connections you finish in this browser are this user's.</p>`,
      headers,
    );
  }

  /** The user of an authorization code: the code exchanged (the client's secret, the PKCE verifier), then userinfo's `sub`. */
  private async userFor(code: string, verifier: string): Promise<string | undefined> {
    const { client, endpoints } = this.options;
    const basic = btoa(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`);
    const tokens = await fetch(endpoints.token, {
      method: "POST",
      headers: { Authorization: `Basic ${basic}`, "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: client.redirectUri,
        code_verifier: verifier,
      }),
      signal: AbortSignal.timeout(10_000),
    });
    const token = ((await tokens.json().catch(() => ({}))) as { access_token?: unknown }).access_token;
    if (!tokens.ok || typeof token !== "string") {
      return undefined;
    }
    const info = await fetch(endpoints.userinfo, {
      headers: { Authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    const sub = ((await info.json().catch(() => ({}))) as { sub?: unknown }).sub;
    return info.ok && typeof sub === "string" && sub.length > 0 && sub.length <= 256 ? sub : undefined;
  }

  private cookie(name: string, value: string, maxAge: number, path: string): string {
    return `${name}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${this.secure ? "; Secure" : ""}`;
  }

  /** A value signed with the key made at start: `<payload>.<mac>`, both base64url. */
  private async seal(payload: Record<string, unknown>): Promise<string> {
    const body = base64url(new TextEncoder().encode(JSON.stringify(payload)));
    const mac = await crypto.subtle.sign("HMAC", await this.key, new TextEncoder().encode(body));
    return `${body}.${base64url(new Uint8Array(mac))}`;
  }

  /** A sealed value's payload when its mac holds, its kind is `kind` and it has not expired. */
  private async open(value: string | undefined, kind: string): Promise<Record<string, unknown> | undefined> {
    const [body, mac, extra] = (value ?? "").split(".");
    if (!body || !mac || extra !== undefined || value === undefined || value.length > 4096) {
      return undefined;
    }
    let signature: Uint8Array<ArrayBuffer>;
    let payload: Record<string, unknown>;
    try {
      signature = fromBase64url(mac);
      if (!(await crypto.subtle.verify("HMAC", await this.key, signature, new TextEncoder().encode(body)))) {
        return undefined;
      }
      payload = JSON.parse(new TextDecoder().decode(fromBase64url(body))) as Record<string, unknown>;
    } catch {
      return undefined;
    }
    return payload.kind === kind && typeof payload.exp === "number" && payload.exp > this.now() / 1000
      ? payload
      : undefined;
  }
}

function cookieOf(request: Request, name: string): string | undefined {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [key, ...value] = part.trim().split("=");
    if (key === name) {
      return value.join("=");
    }
  }
  return undefined;
}

function htmlPage(status: number, title: string, body: string, headers = new Headers()): Response {
  headers.set("Content-Type", "text/html; charset=utf-8");
  headers.set("Cache-Control", "no-store");
  headers.set("X-Frame-Options", "DENY");
  headers.set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'");
  headers.set("X-Content-Type-Options", "nosniff");
  const html = `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>
<body>
<h1>${escapeHtml(title)}</h1>
${body.startsWith("<p") ? body : `<p>${body}</p>`}
</body>
</html>
`;
  return new Response(html, { status, headers });
}

function randomText(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function challengeOf(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier))));
}

function base64url(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) {
    text += String.fromCharCode(byte);
  }
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (character) => character.charCodeAt(0));
}
