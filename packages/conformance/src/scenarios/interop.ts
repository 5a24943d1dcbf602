/**
 * Interop with the published draft clients (generated from the 1.0 draft): their exact request shapes
 * and headers. They wrap bodies in {"request": ...} and read {"result": ...}, send no OXP-Version, send
 * their key as a bearer token, send Content-Type: application/json even on GETs (the Go client with a
 * {} body, and an empty Accept on /health), and retry POSTs with the same body.
 */
import { header } from "../http.js";
import {
  type Context,
  check,
  checkError,
  checkSchema,
  checkStatus,
  need,
  type Scenario,
  Skip,
  truncate,
} from "../scenario.js";

/** The headers a draft client sends: its "api key" as a bearer token, JSON content type, nothing else. */
function draftHeaders(ctx: Context): Record<string, string> {
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "User-Agent": "OpenAPI-Generator/0.1.1/python",
  };
  if (ctx.auth.apiKey) {
    headers.Authorization = `Bearer ${ctx.auth.apiKey}`;
  }
  return headers;
}

/** POST /tools/call exactly as a draft client sends it. */
const draftPost = (ctx: Context, body: unknown) =>
  ctx.http.raw({ method: "POST", path: "/tools/call", headers: draftHeaders(ctx), body });

/** Interop scenarios need credentials a draft client can send: none, or an API key (they cannot sign JWTs). */
function needDraftAuth(ctx: Context): void {
  if (ctx.auth.jwtSecret && !ctx.auth.apiKey) {
    throw new Skip("the server takes JWTs only: the draft clients send an API key as their bearer token");
  }
}

const interop = (
  { id, title, rules }: Pick<Scenario, "id" | "title" | "rules">,
  run: (ctx: Context) => Promise<void>,
): Scenario => ({
  id: `interop.${id}`,
  section: "3.2",
  rules,
  level: "project",
  title,
  async run(ctx) {
    needDraftAuth(ctx);
    await run(ctx);
  },
});

export const interopScenarios: Scenario[] = [
  interop(
    {
      id: "health",
      title: "GET /health with an empty Accept and a JSON Content-Type is a 200",
      rules: ["endpoints.health", "versions.header-optional"],
    },
    async (ctx) => {
      checkStatus(await ctx.http.raw({ path: "/health", headers: { ...draftHeaders(ctx), Accept: "" } }), 200);
    },
  ),
  interop(
    {
      id: "list-tools",
      title: "GET /tools with a {} body (the Go client) is a 200 ToolListResponse",
      rules: ["endpoints.lenient-get", "endpoints.list-tools"],
    },
    async (ctx) => {
      const answer = await ctx.http.raw({ path: "/tools", headers: draftHeaders(ctx), body: "{}" });
      checkStatus(answer, 200);
      checkSchema("ToolListResponse", answer.json, "GET /tools");
    },
  ),
  interop(
    {
      id: "call",
      title: 'POST {"request": ...} without OXP-Version is answered {"$schema", "result": CallToolResponse}',
      rules: ["envelope.accept", "envelope.answer-in-kind", "versions.header-optional", "auth.api-key-as-bearer"],
    },
    async (ctx) => {
      const safe = need(ctx.fixture.safeCall, "the fixture names no safe call");
      const answer = await draftPost(ctx, {
        request: { tool_id: safe.tool_id, call_id: `interop-${Date.now()}`, input: safe.input },
      });
      checkStatus(answer, 200);
      checkSchema("CallToolResultEnvelope", answer.json, "the envelope answer");
      check(header(answer, "oxp-version") === "1.0", "no OXP-Version on the answer");
    },
  ),
  interop(
    {
      id: "call-with-schema",
      title: 'POST {"$schema": "otc://1.0", "request": ...} is answered in the envelope',
      rules: ["versions.envelope-schema", "envelope.answer-in-kind"],
    },
    async (ctx) => {
      const safe = need(ctx.fixture.safeCall, "the fixture names no safe call");
      const answer = await draftPost(ctx, {
        $schema: "otc://1.0",
        request: { tool_id: safe.tool_id, input: safe.input },
      });
      checkStatus(answer, 200);
      checkSchema("CallToolResultEnvelope", answer.json, "the envelope answer");
    },
  ),
  interop(
    {
      id: "errors",
      title: "Their 400 and 422 bodies are the flat ServerErrorResponse and ValidationErrorResponse",
      rules: ["envelope.errors-unwrapped"],
    },
    async (ctx) => {
      const unknown = await draftPost(ctx, { request: { tool_id: "OxpConformance.NoSuchTool" } });
      checkError(unknown, 400);
      const safe = need(ctx.fixture.safeCall, "the fixture names no safe call");
      const invalid = await draftPost(ctx, { request: { tool_id: safe.tool_id, input: { oxp_conformance: [] } } });
      checkError(invalid, 422);
    },
  ),
  interop(
    {
      id: "retry",
      title: "A POST retried with the same body (as on a 5xx) gets the same answer and runs once",
      rules: ["idempotency.replay"],
    },
    async (ctx) => {
      const fixture = need(ctx.fixture.idempotent, "the fixture names no idempotency probe");
      const body = {
        request: { tool_id: fixture.tool_id, call_id: `interop-retry-${Date.now()}`, input: fixture.input },
      };
      const first = await draftPost(ctx, body);
      const again = await draftPost(ctx, body);
      checkStatus(first, 200);
      check(
        first.text === again.text,
        `the retry answered differently: ${truncate(first.text)} then ${truncate(again.text)}`,
      );
    },
  ),
];
