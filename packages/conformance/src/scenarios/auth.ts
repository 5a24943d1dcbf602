/** Scenarios for docs/protocol.md section 5: server authentication (run when the kit is given credentials). */
import { createHmac } from "node:crypto";
import { SignJWT } from "jose";
import { header } from "../http.js";
import { type Context, check, checkError, checkStatus, need, type Scenario } from "../scenario.js";

const now = () => Math.floor(Date.now() / 1000);

/** The `sub` of the kit's valid tokens: a server refuses a JWT that names no client (docs/protocol.md 5). */
const SUBJECT = "oxp-conformance";

/** An HS256 JWT with exactly these claims. */
export function signJwt(secret: string, claims: Record<string, unknown>): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(new TextEncoder().encode(secret));
}

/** A token with any header, HMAC-signed where jose would refuse to sign. */
function rawJwt(
  secret: string,
  head: Record<string, unknown>,
  claims: Record<string, unknown>,
  hash?: "sha512",
): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const unsigned = `${encode(head)}.${encode(claims)}`;
  return `${unsigned}.${hash ? createHmac(hash, secret).update(unsigned).digest("base64url") : ""}`;
}

/**
 * The credentials of a principal other than the kit's own, or undefined when the kit cannot make one: a JWT whose
 * `sub` differs from the kit's (a JWT principal is never an API key's either). One API key is one principal, and
 * without authentication every client is the same one.
 */
export async function otherPrincipal(ctx: Context): Promise<Record<string, string> | undefined> {
  const secret = ctx.auth.jwtSecret;
  if (secret === undefined) {
    return undefined;
  }
  const claims: Record<string, unknown> = { sub: `${SUBJECT}-other`, exp: now() + 300 };
  if (ctx.auth.jwtAudience) {
    claims.aud = ctx.auth.jwtAudience;
  }
  return { Authorization: `Bearer ${await signJwt(secret, claims)}` };
}

const tools = (ctx: Context, headers: Record<string, string>) => ctx.http.raw({ path: "/tools", headers });

function checkUnauthorized(answer: Awaited<ReturnType<typeof tools>>, what: string): void {
  checkError(answer, 401);
  check(/^Bearer/i.test(header(answer, "www-authenticate") ?? ""), `${what}: the 401 has no WWW-Authenticate: Bearer`);
}

const needAuth = (ctx: Context) =>
  need(ctx.auth.apiKey ?? ctx.auth.jwtSecret, "no credentials given: authentication is not under test");

export const authScenarios: Scenario[] = [
  {
    id: "auth.required",
    section: "5",
    rules: ["auth.401-response", "auth.guards-all-but-health", "call.order-of-checks"],
    level: "MUST",
    title: "Without credentials: 401 with WWW-Authenticate: Bearer and a ServerErrorResponse",
    async run(ctx) {
      needAuth(ctx);
      checkUnauthorized(await tools(ctx, {}), "no credentials");
      checkUnauthorized(
        await ctx.http.raw({
          method: "POST",
          path: "/tools/call",
          headers: { "content-type": "application/json" },
          body: "{",
        }),
        "no credentials, bad body",
      );
    },
  },
  {
    id: "auth.api-key",
    section: "5",
    rules: ["auth.api-key-header", "auth.api-key-as-bearer"],
    level: "MUST",
    title: "The API key is admitted in OXP-API-Key and as a bearer token; a wrong one is a 401",
    async run(ctx) {
      const key = need(ctx.auth.apiKey, "no API key given");
      checkStatus(await tools(ctx, { "OXP-API-Key": key }), 200);
      checkStatus(await tools(ctx, { Authorization: `Bearer ${key}` }), 200);
      checkUnauthorized(await tools(ctx, { "OXP-API-Key": `${key}-wrong` }), "a wrong key");
    },
  },
  {
    id: "auth.jwt.valid",
    section: "5",
    rules: ["auth.jwt-hs256-only"],
    level: "MUST",
    title: "A valid HS256 JWT is admitted",
    async run(ctx) {
      const secret = need(ctx.auth.jwtSecret, "no JWT secret given");
      const claims: Record<string, unknown> = { sub: "oxp-conformance", exp: now() + 300 };
      if (ctx.auth.jwtAudience) {
        claims.aud = ctx.auth.jwtAudience;
      }
      checkStatus(await tools(ctx, { Authorization: `Bearer ${await signJwt(secret, claims)}` }), 200);
    },
  },
  {
    id: "auth.jwt.refused",
    section: "5",
    rules: ["auth.jwt-hs256-only", "auth.jwt-claims"],
    level: "MUST",
    title: "Expired, exp-less, too long-lived, alg none, HS512, badly signed and wrong-aud JWTs are 401s",
    async run(ctx) {
      const secret = need(ctx.auth.jwtSecret, "no JWT secret given");
      // Each token is valid but for the one thing named, so its 401 can only be for that.
      const aud = ctx.auth.jwtAudience ? { aud: ctx.auth.jwtAudience } : {};
      const base = { ...aud, sub: SUBJECT };
      const cases: [string, string][] = [
        ["expired", await signJwt(secret, { ...base, exp: now() - 300 })],
        ["without exp", await signJwt(secret, base)],
        ["exp 20 minutes ahead", await signJwt(secret, { ...base, exp: now() + 1_200 })],
        ["alg none", rawJwt(secret, { alg: "none", typ: "JWT" }, { ...base, exp: now() + 300 })],
        ["alg HS512", rawJwt(secret, { alg: "HS512", typ: "JWT" }, { ...base, exp: now() + 300 }, "sha512")],
        ["signed with another secret", await signJwt(`${secret}-other`, { ...base, exp: now() + 300 })],
        [
          "with an aud the server does not allow",
          await signJwt(secret, { sub: SUBJECT, exp: now() + 300, aud: "oxp-conformance-nobody" }),
        ],
      ];
      for (const [what, token] of cases) {
        checkUnauthorized(await tools(ctx, { Authorization: `Bearer ${token}` }), what);
      }
    },
  },
  {
    id: "auth.jwt.subject",
    section: "5",
    rules: ["auth.jwt-subject", "auth.principal-identity"],
    level: "MUST",
    title: "A JWT without sub, or with an empty, non-string or over-long sub, is a 401",
    async run(ctx) {
      const secret = need(ctx.auth.jwtSecret, "no JWT secret given");
      const aud = ctx.auth.jwtAudience ? { aud: ctx.auth.jwtAudience } : {};
      const token = (sub: unknown) =>
        signJwt(secret, { ...aud, exp: now() + 300, ...(sub === undefined ? {} : { sub }) });
      // The control: the same token with a proper sub is admitted.
      checkStatus(await tools(ctx, { Authorization: `Bearer ${await token(SUBJECT)}` }), 200);
      const cases: [string, unknown][] = [
        ["without sub", undefined],
        ["with an empty sub", ""],
        ["with a numeric sub", 5],
        ["with an object sub", { id: SUBJECT }],
        ["with a sub of 257 characters", "s".repeat(257)],
      ];
      for (const [what, sub] of cases) {
        checkUnauthorized(await tools(ctx, { Authorization: `Bearer ${await token(sub)}` }), what);
      }
    },
  },
];
