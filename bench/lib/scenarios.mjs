/** The stacks under test, the scenarios each runs, the request of each, and the check of its answer. */
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
} from "@modelcontextprotocol/client";
import { VAULT_PROVIDER, VAULT_TOOL, VAULT_USER } from "../stacks/vault.mjs";

/** Every stack; `ours` run every scenario, peers the ones that make sense for them. */
export const STACKS = [
  { id: "native", label: "ours: native adapter", module: "ours-native", ours: true },
  { id: "express", label: "ours: Express adapter", module: "ours-express", ours: true },
  { id: "floor", label: "floor: node:http + Ajv", module: "floor" },
  { id: "express-ajv", label: "Express 5 + Ajv", module: "express-ajv" },
  { id: "express-oav", label: "Express 5 + openapi-validator", module: "express-oav" },
  { id: "fastify", label: "Fastify 5", module: "fastify" },
  { id: "mcp", label: "MCP SDK (stateless HTTP)", module: "mcp", mcp: true },
  // Not a stack of its own: where the native adapter's time goes, with its per-call log line off.
  { id: "native-nolog", label: "ours: native, `logger: false`", module: "ours-native-nolog", diagnostic: true },
  // The fetch handler (`@otc/server/fetch`), on the call only (`partial`: no n/a rows elsewhere). On Node through
  // @hono/node-server's bridge, logging through the native adapter's logger; on Bun and Deno through its default,
  // consoleLogger (bench/runtimes), measured from outside (/proc) as they cannot report over Node's IPC.
  {
    id: "fetch-node",
    label: "ours: fetch handler, Node + bridge (pino line)",
    module: "ours-fetch-node",
    partial: true,
  },
  { id: "bun", label: "ours: fetch handler, Bun (console line)", runtime: "bun", partial: true },
  { id: "deno", label: "ours: fetch handler, Deno (console line)", runtime: "deno", partial: true },
];

const ALL = STACKS.filter((stack) => !stack.diagnostic && !stack.partial).map((stack) => stack.id);
const OURS = STACKS.filter((stack) => stack.ours).map((stack) => stack.id);
const FETCH = STACKS.filter((stack) => stack.partial).map((stack) => stack.id);

/**
 * Every scenario: `server` names the server process it runs against (`plain`: demo catalog; `large`: 1,000
 * tools; `search`: 10,000 tools of varied text, bench/stacks/search-catalog.mjs; `auth`: demo catalog with API key +
 * JWT authentication; `oauth` and `oauth-fresh`: demo catalog with API key + OAuth access tokens, the oauth
 * extension, from the bench's own authorization server; `vault`: demo catalog and a tool needing a user's token, API
 * key + the connections extension, the user connected to the bench's own provider), `stacks` who runs it. `strict`:
 * a window with any answer but the expected one is a problem, not only a count.
 */
export const SCENARIOS = [
  { id: "call", label: "call Calculator.Add", server: "plain", stacks: [...ALL, "native-nolog", ...FETCH] },
  { id: "invalid", label: "invalid input (422)", server: "plain", stacks: ALL },
  { id: "toolError", label: "tool error (OxpToolError)", server: "plain", stacks: ALL },
  { id: "list", label: "GET /tools, demo catalog", server: "plain", stacks: ALL },
  { id: "list1000", label: "GET /tools, 1,000 tools", server: "large", stacks: ALL },
  // As fetch() asks for it: `Accept-Encoding: gzip, deflate`. Our servers gzip the list once per catalog.
  { id: "listGzip", label: "GET /tools, demo catalog, gzip accepted", server: "plain", stacks: OURS, gzip: true },
  { id: "list1000Gzip", label: "GET /tools, 1,000 tools, gzip accepted", server: "large", stacks: OURS, gzip: true },
  { id: "list304", label: "GET /tools, If-None-Match (304)", server: "plain", stacks: OURS, needsEtag: true },
  {
    id: "list1000_304",
    label: "GET /tools, 1,000 tools, If-None-Match (304)",
    server: "large",
    stacks: OURS,
    needsEtag: true,
  },
  // The search extension (docs/protocol.md 9.5) on 10,000 tools: a query as an agent words a task, the summary view.
  // Its index is built when the server starts; not in `--quick`: that server takes a minute to start. `settle`: each
  // window waits for the server to finish the requests it left unanswered (an answer took 0.1 s on 2026-12-03).
  {
    id: "search10k",
    label: "GET /tools?q=, 10,000 tools, summary view",
    server: "search",
    stacks: OURS,
    search: true,
    settle: true,
  },
  { id: "apiKey", label: "call, API key", server: "auth", stacks: OURS },
  { id: "jwt", label: "call, JWT HS256", server: "auth", stacks: OURS },
  { id: "replay", label: "call, idempotent replay", server: "plain", stacks: OURS },
  { id: "fresh", label: "call, a fresh call_id each time", server: "plain", stacks: OURS },
  // Issue 36: a tools/call through the MCP bridge (and the OXP server behind it) beside a bare MCP SDK v2 server serving
  // the same tool, both sent what a 2026-07-28 client sends (the stacks are bench/run.mjs's). `own`: no n/a rows;
  // `warmup`: seconds of load before the rounds (the bridge's CPU per call falls by half over its first few seconds:
  // its code, the SDK's, @otc/client's and fetch's, is still being compiled).
  {
    id: "mcpBridge",
    label: "MCP tools/call Calculator_Add (2026-07-28, HTTP)",
    server: "plain",
    stacks: ["mcp-bridge", "mcp-v2"],
    own: true,
    warmup: 4,
  },
  // The same over stdio, newline-delimited JSON-RPC, as many requests in flight as the HTTP rows have connections.
  {
    id: "mcpBridgeStdio",
    label: "MCP tools/call Calculator_Add (2026-07-28, stdio)",
    server: "plain",
    stacks: ["mcp-bridge-stdio", "mcp-v2-stdio"],
    own: true,
    warmup: 4,
  },
  // The oauth extension (docs/protocol.md 9.6). The API key row is the baseline, on the same server process with the
  // same options as the reused token's. An agent reuses its access token until it expires: the server verifies it
  // once (the issuer's metadata and key set read once too) and remembers it, so the reused row is the steady state.
  { id: "oauthApiKey", label: "call, API key (server with oauth)", server: "oauth", stacks: OURS },
  { id: "oauthToken", label: "call, OAuth access token (ES256), reused", server: "oauth", stacks: OURS },
  // Worst case: a token never seen before on every request, each verified in full (signature, claims, scopes). On a
  // process of its own: the 10,000 tokens it leaves remembered, and their garbage, would weigh on the two rows above.
  {
    id: "oauthFresh",
    label: "call, a new OAuth access token (ES256) every request: worst case",
    server: "oauth-fresh",
    stacks: OURS,
  },
  // The connections extension (docs/protocol.md 9.7): an API-key caller names `context.user_id`, and the tool needs
  // that user's token for a provider. The baseline sends the token in `context.authorization`, as an OXP 1.0 client
  // does; the vault row sends none, and the vault puts the user's (connected once, before the run, through the
  // server's own code flow) into the call. One server process for both: client tokens stay accepted. The tool answers
  // where its token came from, and every answer of a window must be a 200 (`strict`).
  {
    id: "vaultClientToken",
    label: "call, token sent by the client (server with connections)",
    server: "vault",
    stacks: OURS,
    strict: true,
  },
  {
    id: "vaultToken",
    label: "call, token from the vault (sealed, in-memory store)",
    server: "vault",
    stacks: OURS,
    strict: true,
  },
];

/** `--quick`: every stack's call, and what our ratios need (not the fetch handler's rows: no Bun or Deno in `npm test`). */
export const QUICK_SCENARIOS = new Set([
  "call",
  "list",
  "list1000",
  "listGzip",
  "list1000Gzip",
  "list304",
  "list1000_304",
  "jwt",
  "replay",
  "fresh",
]);
export const quickRuns = (scenario, stackId) =>
  (scenario.id === "call" && ALL.includes(stackId)) || OURS.includes(stackId);

/** Why a peer does not run a scenario. */
export function notApplicable(scenario) {
  if (scenario.needsEtag) {
    return "n/a: no ETag";
  }
  if (scenario.gzip) {
    return "n/a: no compression";
  }
  if (scenario.id === "replay") {
    return "n/a: no idempotency";
  }
  if (scenario.search) {
    return "n/a: no search";
  }
  if (scenario.server === "vault") {
    return "n/a: no vault";
  }
  return "n/a: no auth";
}

const json = (path, body, headers = {}) => ({
  method: "POST",
  path,
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body),
});
const mcpCall = (method, params) =>
  json("/mcp", { jsonrpc: "2.0", id: 1, method, params }, { accept: "application/json, text/event-stream" });

const ADD = { tool_id: "Calculator.Add", input: { a: 1, b: 2 } };
/** The search rows' query: a task as an agent words it, its small words included (the index keeps them). */
export const SEARCH_QUERY = "send an email to a contact";

/**
 * The request of a scenario on a stack, the status every answer must have, and a check of one answer's body
 * (returns a problem, or undefined). `ctx` holds the ETag, the credentials and the catalogs' sizes.
 */
export function requestFor(stack, scenario, ctx) {
  const isSum = (body) => (body?.success === true && body.value === 3 ? undefined : "not a successful sum");
  if (stack.mcp) {
    const text = (body) => body?.result?.content?.[0]?.text;
    switch (scenario.id) {
      case "call":
      case "mcpBridge":
      case "mcpBridgeStdio":
        return {
          request: mcpCall("tools/call", { name: "Calculator_Add", arguments: { a: 1, b: 2 } }),
          status: 200,
          check: (body) => (text(body) === "3" ? undefined : "not the sum"),
        };
      case "invalid":
        return {
          request: mcpCall("tools/call", { name: "Calculator_Add", arguments: { a: "x", b: 2 } }),
          status: 200,
          check: (body) => (body?.result?.isError === true ? undefined : "not an input error"),
        };
      case "toolError":
        return {
          request: mcpCall("tools/call", { name: "Doorbell_Ring", arguments: { doorbell_id: "doorbell-0" } }),
          status: 200,
          check: (body) =>
            body?.result?.isError === true && text(body)?.includes("Doorbell ID not found")
              ? undefined
              : "no tool error",
        };
      case "list":
      case "list1000": {
        const want = scenario.id === "list" ? ctx.mcpTools.demo : ctx.mcpTools.large;
        return {
          request: mcpCall("tools/list", {}),
          status: 200,
          check: (body) => (body?.result?.tools?.length === want ? undefined : `not ${want} tools`),
        };
      }
    }
    return undefined;
  }
  switch (scenario.id) {
    case "call":
      return { request: json("/tools/call", ADD), status: 200, check: isSum };
    case "invalid":
      return {
        request: json("/tools/call", { tool_id: "Calculator.Add", input: { a: "x", b: 2 } }),
        status: 422,
        check: (body) => (body?.parameter_errors?.a ? undefined : "no parameter error for a"),
      };
    case "toolError":
      return {
        request: json("/tools/call", { tool_id: "Doorbell.Ring", input: { doorbell_id: "doorbell-0" } }),
        status: 200,
        check: (body) =>
          body?.success === false && body.error?.message === "Doorbell ID not found" ? undefined : "no tool error",
      };
    case "list":
    case "list1000":
    case "listGzip":
    case "list1000Gzip": {
      const want = scenario.server === "plain" ? ctx.oxpTools.demo : ctx.oxpTools.large;
      return {
        request: {
          method: "GET",
          path: "/tools",
          ...(scenario.gzip ? { headers: { "accept-encoding": "gzip, deflate" } } : {}),
        },
        status: 200,
        check: (body) => (body?.items?.length === want ? undefined : `not ${want} tools`),
      };
    }
    case "list304":
    case "list1000_304": {
      const etag = ctx.etags.get(`${stack.id}/${scenario.server}`);
      if (!etag) {
        return undefined;
      }
      return {
        request: { method: "GET", path: "/tools", headers: { "if-none-match": etag } },
        status: 304,
        check: () => undefined,
      };
    }
    case "search10k":
      return {
        request: {
          method: "GET",
          path: `/tools?q=${encodeURIComponent(SEARCH_QUERY)}&view=summary`,
          headers: { "oxp-extensions": "search" },
        },
        status: 200,
        check: (body) => {
          const items = body?.items;
          if (items?.length !== 10) {
            return `not 10 items but ${items?.length}`;
          }
          if (!items.every((item) => item.score > 0 && typeof item.toolkit === "string")) {
            return "an item without a positive score or its toolkit";
          }
          if (items.some((item) => item.input_schema !== undefined)) {
            return "not the summary view: an item has its input_schema";
          }
          return typeof body.next_cursor === "string" ? undefined : "no next_cursor, though more tools match";
        },
      };
    case "apiKey":
      return { request: json("/tools/call", ADD, { "oxp-api-key": ctx.apiKey }), status: 200, check: isSum };
    case "jwt":
      return {
        request: json("/tools/call", ADD, { authorization: `Bearer ${ctx.jwt}` }),
        status: 200,
        check: isSum,
      };
    case "oauthApiKey":
      return { request: json("/tools/call", ADD, { "oxp-api-key": ctx.apiKey }), status: 200, check: isSum };
    case "oauthToken":
      return {
        request: json("/tools/call", ADD, { authorization: `Bearer ${ctx.accessToken}` }),
        status: 200,
        check: isSum,
      };
    case "oauthFresh": {
      // A new token for every request, minted as the request is built (`headersFor`, in the load generator).
      const request = json("/tools/call", ADD, { authorization: `Bearer ${ctx.freshAccessToken()}` });
      const headersFor = () => ({ ...request.headers, authorization: `Bearer ${ctx.freshAccessToken()}` });
      return { request: { ...request, headersFor }, status: 200, check: isSum };
    }
    case "vaultClientToken":
    case "vaultToken": {
      const client = scenario.id === "vaultClientToken";
      const context = {
        user_id: VAULT_USER,
        ...(client ? { authorization: [{ id: VAULT_PROVIDER, token: ctx.vaultClientToken }] } : {}),
      };
      const want = client ? "client" : "vault";
      return {
        request: json("/tools/call", { tool_id: VAULT_TOOL, input: {}, context }, { "oxp-api-key": ctx.apiKey }),
        status: 200,
        check: (body) =>
          body?.success === true && body.value?.source === want
            ? undefined
            : `not a successful call given the ${want}'s token (${body?.value?.source ?? body?.message ?? "no answer"})`,
      };
    }
    case "fresh": {
      // A new call_id for every request: the call runs, and its record is claimed and kept.
      let next = 0;
      const prefix = `bench-fresh-${stack.id}-${process.pid}-${Date.now()}-`;
      return {
        request: {
          ...json("/tools/call", { ...ADD, call_id: `${prefix}check` }),
          bodyFor: () => JSON.stringify({ ...ADD, call_id: `${prefix}${next++}` }),
        },
        status: 200,
        check: isSum,
      };
    }
    case "replay":
      return {
        request: json("/tools/call", { ...ADD, call_id: `bench-replay-${stack.id}` }),
        status: 200,
        check: (body) => isSum(body) ?? (body.call_id === `bench-replay-${stack.id}` ? undefined : "another call_id"),
      };
  }
  return undefined;
}

/** The ratios, each within one round: `a` over `b` on a metric, against its target (none: a figure to read). */
export const RATIOS = [
  {
    label: "native vs floor, CPU/call",
    a: ["native", "call"],
    b: ["floor", "call"],
    metric: "cpu",
    op: "<=",
    target: 1.3,
  },
  {
    label: "native vs Fastify, CPU/call",
    a: ["native", "call"],
    b: ["fastify", "call"],
    metric: "cpu",
    op: "<=",
    target: 1,
  },
  {
    label: "diagnostic: native with `logger: false` vs floor, CPU/call",
    a: ["native-nolog", "call"],
    b: ["floor", "call"],
    metric: "cpu",
    op: "<=",
    target: 1.3,
    diagnostic: true,
  },
  { label: "native vs MCP, calls/s", a: ["native", "call"], b: ["mcp", "call"], metric: "rps", op: ">=", target: 12 },
  {
    label: "Express adapter vs Express + openapi-validator, CPU/call",
    a: ["express", "call"],
    b: ["express-oav", "call"],
    metric: "cpu",
    op: "<=",
    target: 1.1,
  },
  {
    label: "fetch handler on Node (bridge) vs native adapter, CPU/call",
    a: ["fetch-node", "call"],
    b: ["native", "call"],
    metric: "cpu",
    op: "<=",
    target: 1.5,
    fullOnly: true,
  },
  ...["bun", "deno"].map((runtime) => ({
    label: `fetch handler on ${runtime === "bun" ? "Bun" : "Deno"} vs native adapter on Node, CPU/call`,
    a: [runtime, "call"],
    b: ["native", "call"],
    metric: "cpu",
    fullOnly: true,
  })),
  {
    label: "Express adapter vs MCP, calls/s",
    a: ["express", "call"],
    b: ["mcp", "call"],
    metric: "rps",
    op: ">=",
    target: 3,
  },
  ...OURS.flatMap((id) => [
    { label: `JWT vs no auth, ${id}, CPU/call`, a: [id, "jwt"], b: [id, "call"], metric: "cpu", op: "<=", target: 1.1 },
    // Not in `--quick` (`npm test`): the oauth rows start a server process per adapter and an authorization server.
    {
      label: `OAuth access token (reused) vs API key, ${id}, CPU/call`,
      a: [id, "oauthToken"],
      b: [id, "oauthApiKey"],
      metric: "cpu",
      op: "<=",
      target: 1.15,
      fullOnly: true,
    },
    {
      label: `worst case: a new OAuth access token every call vs API key, ${id}, CPU/call`,
      a: [id, "oauthFresh"],
      b: [id, "oauthApiKey"],
      metric: "cpu",
      fullOnly: true,
    },
    // Not in `--quick` either: a server process per adapter, and the vault's provider.
    {
      label: `token from the vault vs token sent by the client, ${id}, CPU/call`,
      a: [id, "vaultToken"],
      b: [id, "vaultClientToken"],
      metric: "cpu",
      op: "<=",
      target: 1.15,
      fullOnly: true,
    },
    {
      label: `1,000-tool vs demo list, ${id}, CPU/request`,
      a: [id, "list1000"],
      b: [id, "list"],
      metric: "cpu",
      op: "<=",
      target: 1.5,
    },
    {
      label: `1,000-tool vs demo list, gzip accepted, ${id}, CPU/request`,
      a: [id, "list1000Gzip"],
      b: [id, "listGzip"],
      metric: "cpu",
      op: "<=",
      target: 1.5,
    },
    {
      label: `1,000-tool vs demo list, If-None-Match (304), ${id}, CPU/request`,
      a: [id, "list1000_304"],
      b: [id, "list304"],
      metric: "cpu",
      op: "<=",
      target: 1.5,
    },
    // Not in `--quick`: the search server takes a minute to start (compiling 10,000 tools' validators).
    {
      label: `search over 10,000 tools vs GET /tools on the demo catalog, ${id}, CPU/call`,
      a: [id, "search10k"],
      b: [id, "list"],
      metric: "cpu",
      op: "<=",
      target: 2,
      fullOnly: true,
    },
    {
      label: `replay vs real call, ${id}, CPU/call`,
      a: [id, "replay"],
      b: [id, "call"],
      metric: "cpu",
      op: "<=",
      target: 0.7,
    },
    {
      label: `replay vs a call with a fresh call_id (both idempotent), ${id}, CPU/call`,
      a: [id, "replay"],
      b: [id, "fresh"],
      metric: "cpu",
      op: "<=",
      target: 0.7,
    },
  ]),
];

/** A 2025 MCP request (of {@link requestFor}) as a client in `revision` sends it: the revision and client in `_meta`, the method in headers. */
export function inRevision(spec, revision) {
  if (!spec) {
    return spec;
  }
  const message = JSON.parse(spec.request.body);
  const _meta = {
    [PROTOCOL_VERSION_META_KEY]: revision,
    [CLIENT_INFO_META_KEY]: { name: "bench", version: "1.0.0" },
    [CLIENT_CAPABILITIES_META_KEY]: {},
  };
  const headers = {
    ...spec.request.headers,
    "mcp-protocol-version": revision,
    "mcp-method": message.method,
    ...(message.params?.name === undefined ? {} : { "mcp-name": message.params.name }),
  };
  const body = JSON.stringify({ ...message, params: { ...message.params, _meta } });
  return { ...spec, request: { ...spec.request, headers, body } };
}
