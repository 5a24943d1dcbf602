/**
 * Scenarios for docs/protocol.md 9.6, the oauth extension: the protected resource metadata, the challenges of a 401
 * and a 403, the scopes of the routes and of tools, the catalog an access token sees, and the user a token binds a
 * call to. Not applicable where the server's discovery document does not list `oauth`; those that send access tokens
 * take them from the kit's `oauth` option (the user's authorization server) and are skipped without one. How tokens
 * are verified (signatures, audiences, key sets) is left to the server's own tests: the kit sees only refusals.
 */
import { randomBytes } from "node:crypto";
import {
  type DiscoveryDocument,
  type ProtectedResourceMetadata,
  TOOLS_CALL_PATH,
  TOOLS_CALLS_PATH_TEMPLATE,
  TOOLS_PATH,
  type ToolDefinition,
  WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH,
  WELL_KNOWN_OXP_PATH,
} from "@otc/types";
import { type Answer, type Http, header } from "../http.js";
import { minimalObject, wrongTypeFor } from "../inputs.js";
import {
  type Context,
  check,
  checkError,
  checkSchema,
  checkStatus,
  Failure,
  need,
  notApplicable,
  type OAuthTokens,
  type Scenario,
  truncate,
} from "../scenario.js";
import { canonical, needExtension } from "./extensions.js";

/** The scope `GET /tools` needs. */
export const READ_SCOPE = "oxp:tools:read";
/** The scope a call (and a challenge's check, and the tasks routes) needs. */
export const CALL_SCOPE = "oxp:tools:call";

/**
 * Tokens given as they are (the command line's `--oauth-token-*`): `read` for exactly `oxp:tools:read`, `call` for
 * exactly `oxp:tools:call`, and `all` for any other set (it must hold `oxp:tools:read`, `oxp:tools:call` and every
 * scope the server's metadata lists, so that it covers whatever a scenario asks).
 */
export function fixedTokens(tokens: {
  read?: string | undefined;
  call?: string | undefined;
  all?: string | undefined;
}): OAuthTokens {
  return {
    token: async (scopes) => {
      const [only, ...more] = scopes;
      if (more.length === 0 && only === READ_SCOPE) {
        return tokens.read;
      }
      if (more.length === 0 && only === CALL_SCOPE) {
        return tokens.call;
      }
      return tokens.all;
    },
  };
}

/** The tokens of one run: each set of scopes asked for once, whatever the order its scopes are named in. */
export function cachedTokens(source: OAuthTokens): OAuthTokens {
  const kept = new Map<string, Promise<string | undefined>>();
  return {
    token: (scopes) => {
      const key = [...new Set(scopes)].sort().join(" ");
      let token = kept.get(key);
      if (!token) {
        token = source.token(scopes);
        kept.set(key, token);
      }
      return token;
    },
  };
}

/** What the kit reads of the server's metadata, and the URL the metadata has by its `resource`. */
interface Resource {
  /** The canonical URL, as the metadata gives it. */
  resource: string;
  /** Where RFC 9728 puts the metadata of that resource: what discovery and every challenge must name. */
  metadataUrl: string;
  authorizationServers: string[];
  scopesSupported: string[];
}

/** The metadata URL of a canonical URL: the well-known path inserted between its origin and its path. */
export function metadataUrlOf(resource: string): URL {
  const url = new URL(resource);
  const path = url.pathname.replace(/\/+$/, "");
  return new URL(`${url.origin}${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH}${path}`);
}

const read = new WeakMap<Http, Promise<Resource | undefined>>();

/**
 * The server's metadata, read leniently for the scenarios that need its facts: at the path discovery names, then at
 * the well-known one, without credentials, then with the kit's, then with an access token. `oauth.metadata` judges
 * how it is served; a scenario that needs it fails only when none of these can be read.
 */
function resourceOf(ctx: Context): Promise<Resource | undefined> {
  let found = read.get(ctx.http);
  if (!found) {
    found = (async () => {
      const discovery = await ctx.http.send({ path: WELL_KNOWN_OXP_PATH }, true);
      const named = (discovery.json as DiscoveryDocument | undefined)?.extension_info?.oauth?.resource_metadata;
      let namedPath: string | undefined;
      try {
        namedPath = typeof named === "string" ? new URL(named).pathname : undefined;
      } catch {
        namedPath = undefined;
      }
      const paths = [...new Set([namedPath, WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH])].filter(
        (path): path is string => path?.startsWith(WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH) ?? false,
      );
      const token = await ctx.oauth?.token([READ_SCOPE]);
      const ways: ((path: string) => Promise<Answer>)[] = [
        (path) => ctx.http.send({ path }, true),
        (path) => ctx.http.send({ path }),
        ...(token ? [(path: string) => ctx.http.raw({ path, headers: { Authorization: `Bearer ${token}` } })] : []),
      ];
      for (const way of ways) {
        for (const path of paths) {
          const body = (await way(path)).json as Partial<ProtectedResourceMetadata> | undefined;
          if (typeof body?.resource !== "string") {
            continue;
          }
          let url: URL;
          try {
            url = metadataUrlOf(body.resource);
          } catch {
            continue;
          }
          return {
            resource: body.resource,
            metadataUrl: url.href,
            authorizationServers: strings(body.authorization_servers),
            scopesSupported: strings(body.scopes_supported),
          };
        }
      }
      return undefined;
    })();
    read.set(ctx.http, found);
  }
  return found;
}

const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];

/** The server's metadata once the server lists `oauth`; a failure when it cannot be read at all. */
async function needResource(ctx: Context): Promise<Resource> {
  needExtension(ctx, "oauth");
  const resource = await resourceOf(ctx);
  if (!resource) {
    throw new Failure(
      `the protected resource metadata cannot be read at ${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH}, nor where discovery names it`,
    );
  }
  return resource;
}

/** An access token for exactly `scopes`; the scenario is skipped when the kit has none. */
async function tokenFor(ctx: Context, scopes: readonly string[]): Promise<string> {
  const tokens = need(ctx.oauth, "no access tokens given (the oauth option, or --oauth-token-read/-call/-all)");
  return need(await tokens.token(scopes), `no access token given for the scopes ${scopes.join(" ")}`);
}

/** The scopes of a token that can list and call everything: both routes' and every scope the metadata lists. */
const everyScope = (resource: Resource) => [...new Set([READ_SCOPE, CALL_SCOPE, ...resource.scopesSupported])];

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** GET /tools with exactly these headers. */
const listWith = (ctx: Context, headers: Record<string, string>) => ctx.http.raw({ path: TOOLS_PATH, headers });

/** POST /tools/call with exactly these headers (and a JSON body). */
const callWith = (ctx: Context, body: unknown, headers: Record<string, string>) =>
  ctx.http.raw({
    method: "POST",
    path: TOOLS_CALL_PATH,
    headers: { "content-type": "application/json", ...headers },
    body,
  });

/** The items of a 200 tool list. */
function itemsOf(answer: Answer, what: string): ToolDefinition[] {
  check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
  const items = (answer.json as { items?: unknown } | undefined)?.items;
  check(Array.isArray(items), `${what}: the body has no items: ${truncate(answer.text)}`);
  return items as ToolDefinition[];
}

/**
 * The catalog as a token with every scope sees it, `required_scopes` listed (`OXP-Extensions: oauth`): the tools
 * the scenarios pick from.
 */
async function fullCatalog(ctx: Context, resource: Resource): Promise<ToolDefinition[]> {
  const token = await tokenFor(ctx, everyScope(resource));
  const what = `GET ${TOOLS_PATH} (OXP-Extensions: oauth) with a token of every scope`;
  return itemsOf(await listWith(ctx, { ...bearer(token), "OXP-Extensions": "oauth" }), what);
}

const scopesOfTool = (tool: ToolDefinition) => tool.required_scopes ?? [];

/**
 * A call that stops before its tool runs on a server that refuses it: the fixture's safe call when there is one
 * (harmless if a server wrongly runs it), else `tool` with an input of a wrong type (a server that wrongly admits it
 * refuses the input).
 */
function probeCall(ctx: Context, tool: ToolDefinition | undefined): Record<string, unknown> {
  const safe = ctx.fixture.safeCall;
  if (safe && (!tool || tool.id === safe.tool_id)) {
    return { tool_id: safe.tool_id, input: safe.input };
  }
  const chosen = need(tool, "no tool to call: the fixture names no safe call, and the token lists no tool");
  return { tool_id: chosen.id, input: invalidInput(chosen) ?? minimalObject(chosen.input_schema) ?? {} };
}

/** An input that the tool's schema refuses (a required property of the wrong type); undefined when none is known. */
function invalidInput(tool: ToolDefinition): Record<string, unknown> | undefined {
  const schema = tool.input_schema as Record<string, unknown>;
  const wrong = wrongTypeFor(schema);
  return wrong && { ...(minimalObject(schema) ?? {}), [wrong.name]: wrong.value };
}

/**
 * The parameters of the `Bearer` challenge in a `WWW-Authenticate` header (RFC 9110 11.6.1 auth-params, quoted or
 * not), lower-cased names; undefined when the header has no Bearer challenge. Parameters of a challenge after it are
 * not read.
 */
export function bearerChallenge(value: string | undefined): Record<string, string> | undefined {
  const start = /(?:^|,)\s*Bearer(?=\s|,|$)/i.exec(value ?? "");
  if (!value || !start) {
    return undefined;
  }
  // The names are the server's: no key of theirs may reach the object's prototype.
  const params: Record<string, string> = Object.create(null);
  const param = /\s*,?\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*)))?/y;
  param.lastIndex = start.index + start[0].length;
  for (;;) {
    const match = param.exec(value);
    // A name without `=` is the scheme of the next challenge.
    if (!match || match[2] === undefined) {
      return params;
    }
    params[(match[1] as string).toLowerCase()] = match[3]?.replace(/\\(.)/g, "$1") ?? match[4] ?? "";
  }
}

const scopeList = (value: string | undefined) => (value ?? "").split(" ").filter((scope) => scope !== "");

/** Fails unless the answer is a JSON error of `status` (a ServerErrorResponse), saying what was sent. */
function checkStatusOf(answer: Answer, status: number, what: string): void {
  check(answer.status === status, `${what}: expected ${status}, got ${answer.status} ${truncate(answer.text)}`);
  checkError(answer, status);
}

/** Fails unless the answer carries a Bearer challenge; returns its parameters. */
function challengeOf(answer: Answer, what: string): Record<string, string> {
  const value = header(answer, "www-authenticate");
  const params = bearerChallenge(value);
  check(params, `${what}: the ${answer.status} has no WWW-Authenticate: Bearer challenge (${value ?? "none"})`);
  return params;
}

/**
 * Fails unless the answer is a 401 whose Bearer challenge names the metadata URL and exactly the route's `scopes`,
 * with `error="invalid_token"` exactly when a token was sent.
 */
function checkUnauthorized(
  answer: Answer,
  expected: { scopes: readonly string[]; resource: Resource; tokenSent: boolean },
  what: string,
): void {
  checkStatusOf(answer, 401, what);
  const params = challengeOf(answer, what);
  check(
    params.resource_metadata === expected.resource.metadataUrl,
    `${what}: the challenge's resource_metadata is ${params.resource_metadata ?? "missing"}, not ${expected.resource.metadataUrl}`,
  );
  const named = scopeList(params.scope);
  check(
    canonical([...named].sort()) === canonical([...expected.scopes].sort()),
    `${what}: the challenge's scope is "${params.scope ?? "(missing)"}", where the route needs "${expected.scopes.join(" ")}"`,
  );
  if (expected.tokenSent) {
    check(
      params.error === "invalid_token",
      `${what}: the challenge's error is ${params.error ?? "missing"}, not invalid_token, for a refused token`,
    );
  } else {
    check(
      params.error === undefined,
      `${what}: the challenge names error="${params.error}" for a request without a token`,
    );
  }
}

/**
 * Fails unless the answer is a 403 ServerErrorResponse whose Bearer challenge is `insufficient_scope`, names every
 * scope in `needed` and the metadata URL.
 */
function checkInsufficientScope(answer: Answer, needed: readonly string[], resource: Resource, what: string): void {
  check(
    answer.status !== 401,
    `${what} answered 401: a valid token with too few scopes is a 403 (${truncate(answer.text)})`,
  );
  checkStatusOf(answer, 403, what);
  const params = challengeOf(answer, what);
  check(
    params.error === "insufficient_scope",
    `${what}: the challenge's error is ${params.error ?? "missing"}, not insufficient_scope`,
  );
  const named = scopeList(params.scope);
  const missing = needed.filter((scope) => !named.includes(scope));
  check(
    missing.length === 0,
    `${what}: the challenge's scope "${params.scope ?? ""}" leaves out ${missing.join(" ")}: it names every scope the operation needs`,
  );
  check(
    params.resource_metadata === resource.metadataUrl,
    `${what}: the challenge's resource_metadata is ${params.resource_metadata ?? "missing"}, not ${resource.metadataUrl}`,
  );
}

/** The `sub` of a JWT, read without verifying it; undefined when the token is not a JWT with a string `sub`. */
export function subjectOf(token: string): string | undefined {
  const payload = token.split(".")[1];
  if (payload === undefined) {
    return undefined;
  }
  try {
    const sub = (JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as { sub?: unknown }).sub;
    return typeof sub === "string" && sub !== "" ? sub : undefined;
  } catch {
    return undefined;
  }
}

/** An unsigned or HMAC-signed JWT; a server that verifies access tokens refuses either. */
function forgedToken(claims: Record<string, unknown>, alg: "none" | "HS256"): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const unsigned = `${encode({ alg, typ: "at+jwt" })}.${encode(claims)}`;
  return `${unsigned}.${alg === "none" ? "" : randomBytes(32).toString("base64url")}`;
}

export const oauthScenarios: Scenario[] = [
  {
    id: "oauth.metadata",
    section: "9.6",
    rules: ["oauth.resource-metadata"],
    level: "project",
    title: `${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH} answers ProtectedResourceMetadata without credentials, also in its path-inserted form`,
    async run(ctx) {
      needExtension(ctx, "oauth");
      const plain = await ctx.http.send({ path: WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH }, true);
      const what = `GET ${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH} without credentials`;
      check(plain.status !== 401, `${what} answered 401: the metadata is never authenticated`);
      checkStatus(plain, 200);
      check(
        /^application\/json/i.test(header(plain, "content-type") ?? ""),
        `${what} is not JSON: ${header(plain, "content-type") ?? "(no content type)"}`,
      );
      checkSchema("ProtectedResourceMetadata", plain.json, what);
      const metadata = plain.json as ProtectedResourceMetadata;
      let resource: URL;
      try {
        resource = new URL(metadata.resource);
      } catch {
        throw new Failure(`${what}: resource ${metadata.resource} is not an absolute URL`);
      }
      check(
        /^https?:$/.test(resource.protocol) && !resource.search && !resource.hash && !resource.username,
        `${what}: resource ${metadata.resource} is not an http(s) URL without query, fragment or credentials`,
      );
      for (const scope of [READ_SCOPE, CALL_SCOPE]) {
        check(
          metadata.scopes_supported.includes(scope),
          `${what}: scopes_supported ${canonical(metadata.scopes_supported)} lacks ${scope}`,
        );
      }
      const inserted = metadataUrlOf(metadata.resource).pathname;
      if (inserted !== WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH) {
        const there = await ctx.http.send({ path: inserted }, true);
        const where = `GET ${inserted} (the path-inserted form for ${metadata.resource}) without credentials`;
        check(there.status === 200, `${where} answered ${there.status}: ${truncate(there.text)}`);
        checkSchema("ProtectedResourceMetadata", there.json, where);
        check(
          canonical(there.json) === canonical(metadata),
          `${where} differs from ${WELL_KNOWN_OAUTH_PROTECTED_RESOURCE_PATH}: ${truncate(there.text)}`,
        );
      }
    },
  },
  {
    id: "oauth.discovery",
    section: "9.6",
    rules: ["oauth.discovery"],
    level: "project",
    title: "The discovery document gives extension_info.oauth.resource_metadata, the metadata's URL",
    async run(ctx) {
      const resource = await needResource(ctx);
      const answer = await ctx.http.send({ path: WELL_KNOWN_OXP_PATH }, true);
      checkStatus(answer, 200);
      const named = (answer.json as DiscoveryDocument | undefined)?.extension_info?.oauth?.resource_metadata;
      check(
        named === resource.metadataUrl,
        `GET ${WELL_KNOWN_OXP_PATH}: extension_info.oauth.resource_metadata is ${named ?? "missing"}, where the metadata of ${resource.resource} is at ${resource.metadataUrl}`,
      );
    },
  },
  {
    id: "oauth.challenge",
    section: "9.6",
    rules: ["oauth.challenge-401", "auth.401-response"],
    level: "project",
    title: "Without credentials, the 401 challenge names the metadata URL and the route's scope",
    async run(ctx) {
      const resource = await needResource(ctx);
      checkUnauthorized(
        await listWith(ctx, {}),
        { scopes: [READ_SCOPE], resource, tokenSent: false },
        `GET ${TOOLS_PATH} without credentials`,
      );
      checkUnauthorized(
        await callWith(ctx, { tool_id: "OxpConformance.NoSuchTool", input: {} }, {}),
        { scopes: [CALL_SCOPE], resource, tokenSent: false },
        `POST ${TOOLS_CALL_PATH} without credentials`,
      );
    },
  },
  {
    id: "oauth.challenge.invalid-token",
    section: "9.6",
    rules: ["oauth.challenge-401", "oauth.access-token"],
    level: "project",
    title: 'A refused bearer token (garbage, alg none, HS256) is a 401 with error="invalid_token"',
    async run(ctx) {
      const resource = await needResource(ctx);
      const issuer = resource.authorizationServers[0] ?? "https://oxp-conformance.invalid";
      const claims = {
        iss: issuer,
        aud: resource.resource,
        sub: "oxp-conformance",
        scope: `${READ_SCOPE} ${CALL_SCOPE}`,
        iat: Math.floor(Date.now() / 1000),
        exp: Math.floor(Date.now() / 1000) + 300,
      };
      const cases: [string, string][] = [
        ["a token that is no JWT", "oxp-conformance-not-a-token"],
        [`an unsigned (alg none) token of ${issuer}`, forgedToken(claims, "none")],
        [`an HS256 token of ${issuer}`, forgedToken(claims, "HS256")],
      ];
      for (const [what, token] of cases) {
        checkUnauthorized(
          await listWith(ctx, bearer(token)),
          { scopes: [READ_SCOPE], resource, tokenSent: true },
          `GET ${TOOLS_PATH} with ${what}`,
        );
      }
      checkUnauthorized(
        await callWith(ctx, { tool_id: "OxpConformance.NoSuchTool", input: {} }, bearer("oxp-conformance-not-a-token")),
        { scopes: [CALL_SCOPE], resource, tokenSent: true },
        `POST ${TOOLS_CALL_PATH} with a token that is no JWT`,
      );
    },
  },
  {
    id: "oauth.scopes.read",
    section: "9.6",
    rules: ["oauth.scopes"],
    level: "project",
    title: `A token of ${READ_SCOPE} alone lists the tools; its call is a 403 naming ${CALL_SCOPE}`,
    async run(ctx) {
      const resource = await needResource(ctx);
      const token = await tokenFor(ctx, [READ_SCOPE]);
      const tools = itemsOf(await listWith(ctx, bearer(token)), `GET ${TOOLS_PATH} with a token of ${READ_SCOPE}`);
      const body = probeCall(ctx, tools[0]);
      checkInsufficientScope(
        await callWith(ctx, body, bearer(token)),
        [CALL_SCOPE],
        resource,
        `POST ${TOOLS_CALL_PATH} ${String(body.tool_id)} with a token of ${READ_SCOPE} alone`,
      );
      if (ctx.extensions.includes("tasks")) {
        const path = TOOLS_CALLS_PATH_TEMPLATE.replace("{call_id}", "oxp-conformance-no-such-call");
        checkInsufficientScope(
          await ctx.http.raw({ path, headers: { ...bearer(token), "OXP-Extensions": "tasks" } }),
          [CALL_SCOPE],
          resource,
          `GET ${path} (OXP-Extensions: tasks) with a token of ${READ_SCOPE} alone`,
        );
      }
    },
  },
  {
    id: "oauth.scopes.call",
    section: "9.6",
    rules: ["oauth.scopes"],
    level: "project",
    title: `A token of ${CALL_SCOPE} alone cannot list: a 403 naming ${READ_SCOPE}`,
    async run(ctx) {
      const resource = await needResource(ctx);
      const token = await tokenFor(ctx, [CALL_SCOPE]);
      checkInsufficientScope(
        await listWith(ctx, bearer(token)),
        [READ_SCOPE],
        resource,
        `GET ${TOOLS_PATH} with a token of ${CALL_SCOPE} alone`,
      );
    },
  },
  {
    id: "oauth.scopes.tool",
    section: "9.6",
    rules: ["oauth.scopes", "oauth.required-scopes", "oauth.resource-metadata"],
    level: "project",
    title: `A tool's required_scopes: in scopes_supported, and a call without them a 403 naming ${CALL_SCOPE} and all of them`,
    async run(ctx) {
      const resource = await needResource(ctx);
      const tool =
        (await fullCatalog(ctx, resource)).find((candidate) => scopesOfTool(candidate).length > 0) ??
        notApplicable("no tool lists required_scopes");
      const scopes = scopesOfTool(tool);
      const unlisted = scopes.filter((scope) => !resource.scopesSupported.includes(scope));
      check(
        unlisted.length === 0,
        `${tool.id} requires ${unlisted.join(" ")}, which the metadata's scopes_supported leaves out`,
      );
      const input = invalidInput(tool);
      const body = { tool_id: tool.id, input: input ?? minimalObject(tool.input_schema) ?? {} };
      const needed = [CALL_SCOPE, ...scopes];
      for (const granted of [[CALL_SCOPE], [READ_SCOPE]]) {
        checkInsufficientScope(
          await callWith(ctx, body, bearer(await tokenFor(ctx, granted))),
          needed,
          resource,
          `POST ${TOOLS_CALL_PATH} ${tool.id} (requires ${scopes.join(" ")}) with a token of ${granted.join(" ")}`,
        );
      }
      if (input) {
        // The control: with every scope the call passes the scopes and stops at its input.
        const admitted = await callWith(ctx, body, bearer(await tokenFor(ctx, everyScope(resource))));
        check(
          admitted.status !== 401 && admitted.status !== 403,
          `POST ${TOOLS_CALL_PATH} ${tool.id} with a token of every scope answered ${admitted.status}: ${truncate(admitted.text)}`,
        );
      }
    },
  },
  {
    id: "oauth.required-scopes.listed",
    section: "9.6",
    rules: ["oauth.required-scopes", "extensions.applied-header"],
    level: "project",
    title: "required_scopes are listed only with OXP-Extensions: oauth, which the answer names",
    async run(ctx) {
      const resource = await needResource(ctx);
      const token = await tokenFor(ctx, everyScope(resource));
      const plain = itemsOf(await listWith(ctx, bearer(token)), `GET ${TOOLS_PATH} with a token of every scope`);
      const listing = plain.find((tool) => tool.required_scopes !== undefined);
      check(
        !listing,
        `GET ${TOOLS_PATH} without OXP-Extensions lists required_scopes (${listing?.id}): only oauth asked for lists them`,
      );
      const what = `GET ${TOOLS_PATH} (OXP-Extensions: oauth) with a token of every scope`;
      const asked = await listWith(ctx, { ...bearer(token), "OXP-Extensions": "oauth" });
      itemsOf(asked, what);
      checkSchema("ToolListResponse", asked.json, what);
      const applied = (header(asked, "oxp-extensions") ?? "").split(",").map((id) => id.trim().toLowerCase());
      check(
        applied.includes("oauth"),
        `${what}: OXP-Extensions is ${header(asked, "oxp-extensions") ?? "(none)"}, without oauth`,
      );
    },
  },
  {
    id: "oauth.catalog-by-scope",
    section: "9.6",
    rules: ["oauth.catalog-by-scope"],
    level: "project",
    title: "A token lists only the tools its scopes can call, with Cache-Control: private",
    async run(ctx) {
      const resource = await needResource(ctx);
      const scoped = (await fullCatalog(ctx, resource)).filter((tool) => scopesOfTool(tool).length > 0);
      const token = await tokenFor(ctx, [READ_SCOPE]);
      const what = `GET ${TOOLS_PATH} with a token of ${READ_SCOPE} alone`;
      const answer = await listWith(ctx, bearer(token));
      const listed = itemsOf(answer, what).map((tool) => tool.id);
      const cacheControl = header(answer, "cache-control") ?? "";
      check(
        cacheControl.split(",").some((directive) => directive.trim().toLowerCase() === "private"),
        `${what}: Cache-Control is ${cacheControl || "(none)"}, not private: the list depends on the token`,
      );
      const uncallable = scoped.filter((tool) => listed.includes(tool.id));
      check(
        uncallable.length === 0,
        `${what} lists ${uncallable.map((tool) => `${tool.id} (requires ${scopesOfTool(tool).join(" ")})`).join(", ")}, which the token cannot call`,
      );
    },
  },
  {
    id: "oauth.user-is-subject",
    section: "9.6",
    rules: ["oauth.user-is-subject"],
    level: "project",
    title: "A call admitted by an access token is its subject's: a context.user_id other than sub is a 403",
    async run(ctx) {
      const resource = await needResource(ctx);
      const safe = need(ctx.fixture.safeCall, "the fixture names no safe call");
      // The safe call's tool may require scopes of its own: the token holds them too, so that only the user differs.
      const tokens = need(ctx.oauth, "no access tokens given (the oauth option, or --oauth-token-read/-call/-all)");
      const catalog = (await tokens.token(everyScope(resource))) ? await fullCatalog(ctx, resource) : [];
      const toolScopes = catalog.find((tool) => tool.id === safe.tool_id)?.required_scopes ?? [];
      const token = await tokenFor(ctx, [CALL_SCOPE, ...toolScopes]);
      const sub = need(subjectOf(token), "the access token is not a JWT with a sub the kit can read");
      const body = (userId: string) => ({ tool_id: safe.tool_id, input: safe.input, context: { user_id: userId } });
      const own = await callWith(ctx, body(sub), bearer(token));
      check(
        own.status === 200,
        `POST ${TOOLS_CALL_PATH} ${safe.tool_id} with context.user_id the token's sub answered ${own.status}: ${truncate(own.text)}`,
      );
      checkSchema("CallToolResponse", own.json, `POST ${TOOLS_CALL_PATH} ${safe.tool_id}`);
      const other = `${sub}-oxp-conformance-other`;
      const refused = await callWith(ctx, body(other), bearer(token));
      const what = `POST ${TOOLS_CALL_PATH} ${safe.tool_id} with context.user_id '${other}', not the token's sub '${sub}'`;
      check(refused.status !== 200, `${what} answered 200: the call ran for another user`);
      checkStatusOf(refused, 403, what);
    },
  },
];
