/**
 * Scenarios for docs/protocol.md 9.7, the connections extension: the providers discovery names, the routes only for
 * a request that asks for them, the user every request is about, the list that never carries a token, a flow's
 * authorization URL (code flow, PKCE S256, its state and redirect URI), a forged callback that binds nothing, and
 * users kept apart. Not applicable where the server's discovery document does not list `connections`.
 *
 * The kit has no browser and no account at the provider, so it never completes a flow: what happens once one
 * completes (`connections.browser-bound`, `connections.sealed`, `connections.at-call-time`,
 * `connections.client-tokens`, `connections.bounded`, a state good once, a 204 delete with its revocation) is left
 * to the server's own tests. Given a user who already holds a connection (`connectionsUser`), it reads that list for
 * tokens and tries deleting that connection as another user.
 */
import { randomBytes } from "node:crypto";
import {
  CONNECTIONS_PATH,
  CONNECTIONS_PATH_TEMPLATE,
  type ConnectionFlow,
  type DiscoveryDocument,
  WELL_KNOWN_OXP_PATH,
} from "@otc/types";
import { type Answer, type Http, header } from "../http.js";
import {
  type Context,
  check,
  checkError,
  checkSchema,
  checkStatus,
  LEAK,
  need,
  type Scenario,
  truncate,
} from "../scenario.js";
import { appliedBy, needExtension } from "./extensions.js";

/** Asks for the connections extension. */
const CONNECTIONS = { "OXP-Extensions": "connections" };
/** The kit's user where the caller names one (an API key, a section 5 JWT, no authentication). */
export const KIT_USER = "oxp-conformance-user";
/** A second user of the same caller, who holds nothing. */
export const OTHER_USER = "oxp-conformance-other-user";
/** Where a provider sends the browser back, below the server's public URL. */
const CALLBACK_SUFFIX = "/connections/callback";
/** The fewest characters of a state: 128 random bits written in base64url. */
const MIN_STATE_LENGTH = 22;

/** A provider as discovery lists it. */
interface Provider {
  id: string;
  name: string;
}

const listed = new WeakMap<Http, Promise<Provider[]>>();

/** The providers discovery lists, read leniently (`connections.discovery` judges the document). */
function providersOf(ctx: Context): Promise<Provider[]> {
  let found = listed.get(ctx.http);
  if (!found) {
    found = (async () => {
      const answer = await ctx.http.send({ path: WELL_KNOWN_OXP_PATH }, true);
      const providers = (answer.json as DiscoveryDocument | undefined)?.extension_info?.connections?.providers;
      return Array.isArray(providers)
        ? providers.filter((entry): entry is Provider => typeof entry?.id === "string" && entry.id !== "")
        : [];
    })();
    listed.set(ctx.http, found);
  }
  return found;
}

/** The first provider discovery lists, once the server lists `connections`. */
async function needProvider(ctx: Context): Promise<Provider> {
  needExtension(ctx, "connections");
  const [first] = await providersOf(ctx);
  check(first, `${WELL_KNOWN_OXP_PATH} lists connections but no extension_info.connections.providers`);
  return first;
}

/**
 * Whether the kit's requests carry an access token alone: then the user is the token's subject and no `user_id` is
 * sent; with an API key, a JWT or no authentication the kit names its user.
 */
const bySubject = (ctx: Context) => !ctx.auth.apiKey && !ctx.auth.jwtSecret && ctx.oauth !== undefined;

/** The user the kit's requests are about: the `user_id` it names, or undefined for the token's subject. */
const kitUser = (ctx: Context): string | undefined => (bySubject(ctx) ? undefined : (ctx.connectionsUser ?? KIT_USER));

const withUser = (path: string, user: string | undefined) =>
  user === undefined ? path : `${path}?user_id=${encodeURIComponent(user)}`;

/** How a request reads in messages. */
const described = (method: string, path: string, asked = true) =>
  `${method} ${path}${asked ? " (OXP-Extensions: connections)" : ""}`;

/** GET /connections for `user` (the token's subject when undefined). */
const listFor = (ctx: Context, user: string | undefined, headers: Record<string, string> = CONNECTIONS) =>
  ctx.http.send({ path: withUser(CONNECTIONS_PATH, user), headers });

/** POST /connections for `user` (the token's subject when undefined). */
const startFor = (
  ctx: Context,
  provider: string,
  user: string | undefined,
  headers: Record<string, string> = CONNECTIONS,
) =>
  ctx.http.send({
    method: "POST",
    path: CONNECTIONS_PATH,
    headers: { "content-type": "application/json", ...headers },
    body: { provider, ...(user === undefined ? {} : { user_id: user }) },
  });

/** DELETE /connections/{id} for `user` (the token's subject when undefined). */
const deleteFor = (ctx: Context, id: string, user: string | undefined, headers: Record<string, string> = CONNECTIONS) =>
  ctx.http.send({
    method: "DELETE",
    path: withUser(CONNECTIONS_PATH_TEMPLATE.replace("{connection_id}", encodeURIComponent(id)), user),
    headers,
  });

/** The member names and string values of a body that look like a token, with where they are. */
export function tokenLooking(value: unknown, at = ""): string[] {
  if (typeof value === "string") {
    return /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/.test(value) ? [`${at || "/"} (a JWT)`] : [];
  }
  if (value === null || typeof value !== "object") {
    return [];
  }
  return Object.entries(value).flatMap(([key, item]) => [
    ...(/token|secret/i.test(key) ? [`${at}/${key}`] : []),
    ...tokenLooking(item, `${at}/${key}`),
  ]);
}

/** Fails unless the answer is a 200 ConnectionListResponse with nothing in it that looks like a token. */
function checkConnections(answer: Answer, what: string): void {
  check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
  const tokens = tokenLooking(answer.json);
  check(tokens.length === 0, `${what} carries what looks like a token: ${tokens.slice(0, 5).join(", ")}`);
  checkSchema("ConnectionListResponse", answer.json, what);
}

/**
 * The connection ids of a 200 list, read leniently for the scenarios that compare lists (`connections.list` judges
 * its shape and its tokens).
 */
function idsIn(answer: Answer, what: string): string[] {
  check(answer.status === 200, `${what} answered ${answer.status}: ${truncate(answer.text)}`);
  const items = (answer.json as { items?: unknown } | undefined)?.items;
  check(Array.isArray(items), `${what}: the body has no items: ${truncate(answer.text)}`);
  return items
    .map((item) => (item as { id?: unknown } | null)?.id)
    .filter((id): id is string => typeof id === "string")
    .sort();
}

/** A 201 ConnectionFlow of a listed provider, checked. */
async function newFlow(ctx: Context, provider: Provider): Promise<ConnectionFlow> {
  const answer = await startFor(ctx, provider.id, kitUser(ctx));
  const what = described("POST", CONNECTIONS_PATH);
  check(
    answer.status === 201,
    `${what} for the provider '${provider.id}' answered ${answer.status}: ${truncate(answer.text)}`,
  );
  checkSchema("ConnectionFlow", answer.json, what);
  return answer.json as ConnectionFlow;
}

/** What a check_url answers; the scenario is skipped when it is not on the server under test. */
async function flowStatus(ctx: Context, flow: ConnectionFlow): Promise<string> {
  need(
    new URL(flow.check_url).origin === ctx.http.origin ? true : undefined,
    `the flow's check_url ${flow.check_url} is not on the server under test (its public URL is another)`,
  );
  const answer = await ctx.http.send({ url: flow.check_url });
  check(answer.status === 200, `GET the flow's check_url answered ${answer.status}: ${truncate(answer.text)}`);
  checkSchema("AuthorizationChallengeCheckResponse", answer.json, "the flow's check_url");
  return (answer.json as { status: string }).status;
}

/** The parameters of a flow's authorization URL. */
function authorizationOf(flow: ConnectionFlow): URLSearchParams {
  let url: URL;
  try {
    url = new URL(flow.url);
  } catch {
    check(false, `the flow's url ${truncate(flow.url)} is not an absolute URL`);
  }
  check(/^https?:$/.test(url.protocol), `the flow's url ${truncate(flow.url)} is not http(s)`);
  return url.searchParams;
}

/** `value` with its last characters changed, as long as it was: the same flow named, its secret wrong. */
function tampered(value: string): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const cut = Math.max(0, value.length - Math.min(16, Math.ceil(value.length / 2)));
  const tail = [...value.slice(cut)].map((c) => alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]).join("");
  return `${value.slice(0, cut)}${tail}`;
}

/** Fails unless a callback's answer is a page for the person that refuses: 4xx HTML, never framed, no stack. */
function checkRefusalPage(answer: Answer, what: string): void {
  check(
    answer.status >= 400 && answer.status < 500,
    `${what} answered ${answer.status}: a state the server did not make binds nothing (${truncate(answer.text)})`,
  );
  check(
    /^text\/html/i.test(header(answer, "content-type") ?? ""),
    `${what}: the ${answer.status} is not an HTML page for the person (${header(answer, "content-type") ?? "no content type"})`,
  );
  check(
    (header(answer, "x-frame-options") ?? "").trim().toUpperCase() === "DENY",
    `${what}: X-Frame-Options is ${header(answer, "x-frame-options") ?? "(none)"}, not DENY: the page can be framed`,
  );
  check(header(answer, "oxp-version") === "1.0", `${what}: the page has no OXP-Version: 1.0`);
  check(!LEAK.test(answer.text), `${what}: the page shows a stack trace or an internal path`);
}

export const connectionScenarios: Scenario[] = [
  {
    id: "connections.discovery",
    section: "9.7",
    rules: ["connections.discovery"],
    level: "project",
    title: "Discovery gives extension_info.connections.providers: at least one, each an id and a name, ids unique",
    async run(ctx) {
      needExtension(ctx, "connections");
      const answer = await ctx.http.send({ path: WELL_KNOWN_OXP_PATH }, true);
      checkStatus(answer, 200);
      checkSchema("DiscoveryDocument", answer.json, `GET ${WELL_KNOWN_OXP_PATH}`);
      const providers = (answer.json as DiscoveryDocument).extension_info?.connections?.providers ?? [];
      check(providers.length > 0, `GET ${WELL_KNOWN_OXP_PATH} lists connections without a provider`);
      const ids = providers.map((provider) => provider.id);
      const twice = ids.filter((id, index) => ids.indexOf(id) !== index);
      check(twice.length === 0, `GET ${WELL_KNOWN_OXP_PATH} lists the provider ${twice[0]} twice`);
    },
  },
  {
    id: "connections.off-without-header",
    section: "9.7",
    rules: ["connections.discovery", "extensions.off-without-header"],
    level: "project",
    title: "Without OXP-Extensions: connections, GET and POST /connections and DELETE /connections/{id} are 404s",
    async run(ctx) {
      const provider = await needProvider(ctx);
      const user = kitUser(ctx);
      const answers: [string, Answer][] = [
        [described("GET", CONNECTIONS_PATH, false), await listFor(ctx, user, {})],
        [described("POST", CONNECTIONS_PATH, false), await startFor(ctx, provider.id, user, {})],
        [
          described("DELETE", CONNECTIONS_PATH_TEMPLATE, false),
          await deleteFor(ctx, "oxp-conformance-no-such-connection", user, {}),
        ],
      ];
      for (const [what, answer] of answers) {
        check(answer.status === 404, `${what} answered ${answer.status}: without the header the route is unknown`);
        checkError(answer, 404);
      }
    },
  },
  {
    id: "connections.list",
    section: "9.7",
    rules: ["connections.list", "connections.write-only", "extensions.applied-header"],
    level: "project",
    title: "GET /connections answers a ConnectionListResponse that names connections and carries no token",
    async run(ctx) {
      await needProvider(ctx);
      const user = kitUser(ctx);
      const what = described("GET", withUser(CONNECTIONS_PATH, user));
      const answer = await listFor(ctx, user);
      checkConnections(answer, what);
      check(
        appliedBy(answer).includes("connections"),
        `${what}: OXP-Extensions is ${header(answer, "oxp-extensions") ?? "(none)"}, without connections`,
      );
    },
  },
  {
    id: "connections.user",
    section: "9.7",
    rules: ["connections.user"],
    level: "project",
    title: "Every request names its user: without user_id a 400 (by an access token, another user's is a 403)",
    async run(ctx) {
      const provider = await needProvider(ctx);
      const other = `${OTHER_USER}-not-the-subject`;
      const [status, named] = bySubject(ctx) ? [403, other] : [400, undefined];
      const why = named === undefined ? "without a user_id" : `with the user_id '${other}', not the token's subject`;
      const answers: [string, Answer][] = [
        [described("GET", CONNECTIONS_PATH), await listFor(ctx, named)],
        [described("POST", CONNECTIONS_PATH), await startFor(ctx, provider.id, named)],
        [
          described("DELETE", CONNECTIONS_PATH_TEMPLATE),
          await deleteFor(ctx, "oxp-conformance-no-such-connection", named),
        ],
      ];
      for (const [what, answer] of answers) {
        check(
          answer.status === status,
          `${what} ${why}: expected ${status}, got ${answer.status} ${truncate(answer.text)}`,
        );
        checkError(answer, status);
      }
    },
  },
  {
    id: "connections.create.unknown-provider",
    section: "9.7",
    rules: ["connections.create"],
    level: "project",
    title: "POST /connections for a provider discovery does not list is a 400",
    async run(ctx) {
      await needProvider(ctx);
      const listedIds = (await providersOf(ctx)).map((provider) => provider.id);
      let unknown = "oxpConformanceNoSuchProvider";
      while (listedIds.includes(unknown)) {
        unknown = `${unknown}X`;
      }
      const answer = await startFor(ctx, unknown, kitUser(ctx));
      const what = `${described("POST", CONNECTIONS_PATH)} for the provider '${unknown}'`;
      check(answer.status === 400, `${what}: expected 400, got ${answer.status} ${truncate(answer.text)}`);
      checkError(answer, 400);
    },
  },
  {
    id: "connections.create",
    section: "9.7",
    rules: ["connections.create", "endpoints.check-url-status", "extensions.applied-header"],
    level: "project",
    title:
      "POST /connections for a listed provider answers 201 with a pending ConnectionFlow whose check_url says pending",
    async run(ctx) {
      const provider = await needProvider(ctx);
      const answer = await startFor(ctx, provider.id, kitUser(ctx));
      const what = `${described("POST", CONNECTIONS_PATH)} for the provider '${provider.id}'`;
      check(answer.status === 201, `${what}: expected 201, got ${answer.status} ${truncate(answer.text)}`);
      checkSchema("ConnectionFlow", answer.json, what);
      check(
        appliedBy(answer).includes("connections"),
        `${what}: OXP-Extensions is ${header(answer, "oxp-extensions") ?? "(none)"}, without connections`,
      );
      const status = await flowStatus(ctx, answer.json as ConnectionFlow);
      check(status === "pending", `the flow's check_url says ${status} before anybody opened its url`);
    },
  },
  {
    id: "connections.flow",
    section: "9.7",
    rules: ["connections.flow"],
    level: "project",
    title:
      "A flow's url is a code flow with PKCE S256, a long state of its own and redirect_uri .../connections/callback",
    async run(ctx) {
      const provider = await needProvider(ctx);
      const [first, second] = [await newFlow(ctx, provider), await newFlow(ctx, provider)];
      const params = authorizationOf(first);
      const named = (name: string) => params.get(name) ?? "(none)";
      check(
        params.get("response_type") === "code",
        `the flow's url has response_type ${named("response_type")}, not code`,
      );
      check(params.get("client_id"), "the flow's url has no client_id");
      check(
        params.get("code_challenge_method") === "S256",
        `the flow's url has code_challenge_method ${named("code_challenge_method")}, not S256`,
      );
      check(
        /^[A-Za-z0-9_-]{43}$/.test(params.get("code_challenge") ?? ""),
        `the flow's code_challenge ${truncate(named("code_challenge"), 60)} is not a SHA-256 in base64url (43 characters)`,
      );
      const state = params.get("state") ?? "";
      check(
        state.length >= MIN_STATE_LENGTH,
        `the flow's state has ${state.length} characters: too few to be unguessable (at least ${MIN_STATE_LENGTH})`,
      );
      const redirect = params.get("redirect_uri") ?? "";
      let uri: URL | undefined;
      try {
        uri = new URL(redirect);
      } catch {
        uri = undefined;
      }
      check(
        uri && /^https?:$/.test(uri.protocol) && !uri.search && !uri.hash && uri.pathname.endsWith(CALLBACK_SUFFIX),
        `the flow's redirect_uri ${truncate(redirect || "(none)")} is not an absolute URL ending in ${CALLBACK_SUFFIX}`,
      );
      const again = authorizationOf(second);
      check(again.get("state") !== state, "two flows have the same state: each is bound to its flow");
      check(
        again.get("code_challenge") !== params.get("code_challenge"),
        "two flows have the same code_challenge: each has a verifier of its own",
      );
      check(second.id !== first.id, `two flows have the same id ${first.id}`);
    },
  },
  {
    id: "connections.callback.forged-state",
    section: "9.7",
    rules: ["connections.flow", "endpoints.oxp-version-header"],
    level: "project",
    title: "The callback with a state the server did not make is a 4xx page, never framed, and binds nothing",
    async run(ctx) {
      const provider = await needProvider(ctx);
      const user = kitUser(ctx);
      const what = described("GET", withUser(CONNECTIONS_PATH, user));
      const before = idsIn(await listFor(ctx, user), what);
      const flow = await newFlow(ctx, provider);
      const pendingBefore = (await flowStatus(ctx, flow)) === "pending";
      const params = authorizationOf(flow);
      const callback = new URL(params.get("redirect_uri") ?? "");
      need(
        callback.origin === ctx.http.origin ? true : undefined,
        `the flow's redirect_uri ${callback.href} is not on the server under test (its public URL is another)`,
      );
      const state = params.get("state") ?? "";
      const cases: [string, string | undefined][] = [
        ["the flow's state with its end changed", tampered(state)],
        ["a state of the kit's own", randomBytes(32).toString("base64url")],
        ["no state", undefined],
      ];
      for (const [how, forged] of cases) {
        const url = new URL(callback.href);
        url.searchParams.set("code", "oxp-conformance-forged-code");
        if (forged !== undefined) {
          url.searchParams.set("state", forged);
        }
        // As a browser comes back: no credentials of the kit's.
        const answer = await ctx.http.raw({ url: url.href, headers: { accept: "text/html" } });
        checkRefusalPage(answer, `GET ${callback.pathname} with ${how}`);
      }
      // A check_url that never said pending is connections.create's to judge.
      const status = await flowStatus(ctx, flow);
      check(
        !pendingBefore || status !== "completed",
        "the flow's check_url says completed after callbacks with forged states",
      );
      const after = idsIn(await listFor(ctx, user), what);
      check(
        JSON.stringify(after) === JSON.stringify(before),
        `${what} lists ${after.filter((id) => !before.includes(id)).join(", ") || "other connections"} after callbacks with forged states: they bound something`,
      );
    },
  },
  {
    id: "connections.delete.unknown",
    section: "9.7",
    rules: ["connections.delete", "connections.user"],
    level: "project",
    title: "DELETE /connections/{id} of an id that never was is a 404",
    async run(ctx) {
      await needProvider(ctx);
      const id = `c_oxp-conformance-${randomBytes(8).toString("hex")}`;
      const answer = await deleteFor(ctx, id, kitUser(ctx));
      const what = described("DELETE", `${CONNECTIONS_PATH}/${id}`);
      check(answer.status === 404, `${what}: expected 404, got ${answer.status} ${truncate(answer.text)}`);
      checkError(answer, 404);
    },
  },
  {
    id: "connections.users-apart",
    section: "9.7",
    rules: ["connections.user", "connections.delete"],
    level: "project",
    title: "Another user lists none of a user's connections or flows, and deleting one of the connections is a 404",
    async run(ctx) {
      const provider = await needProvider(ctx);
      need(
        bySubject(ctx) ? undefined : true,
        "the kit's requests carry an access token alone: its subject is the one user the kit can be",
      );
      const user = kitUser(ctx);
      const own = described("GET", withUser(CONNECTIONS_PATH, user));
      const held = idsIn(await listFor(ctx, user), own);
      const flow = await newFlow(ctx, provider);
      const theirs = [...held, flow.id];
      const what = described("GET", withUser(CONNECTIONS_PATH, OTHER_USER));
      const seen = idsIn(await listFor(ctx, OTHER_USER), what).filter((id) => theirs.includes(id));
      check(seen.length === 0, `${what} lists ${seen.join(", ")}, of the user '${user}'`);
      // The flow's id names no connection yet: deleting it is connections.delete.unknown's case.
      for (const id of held) {
        const answer = await deleteFor(ctx, id, OTHER_USER);
        const deleting = `${described("DELETE", withUser(`${CONNECTIONS_PATH}/${id}`, OTHER_USER))}, of the user '${user}'`;
        check(answer.status === 404, `${deleting}: expected 404, got ${answer.status} ${truncate(answer.text)}`);
        checkError(answer, 404);
      }
      const after = idsIn(await listFor(ctx, user), own);
      const gone = held.filter((id) => !after.includes(id));
      check(gone.length === 0, `${own} no longer lists ${gone.join(", ")} after another user deleted it`);
    },
  },
];
