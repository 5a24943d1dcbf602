/** Scenarios for docs/protocol.md section 7: hostile input always gets a 4xx JSON answer and leaves the server healthy. */
import { TOOLKITS_PATH, TOOLS_CALLS_PATH_TEMPLATE, TOOLS_PATH, WELL_KNOWN_OXP_PATH } from "@otc/types";
import type { Answer } from "../http.js";
import {
  type Context,
  call,
  check,
  checkError,
  checkSchema,
  checkStatus,
  LEAK,
  type Scenario,
  truncate,
} from "../scenario.js";

/** Where the tasks extension's paths start: a call's status below it is a CallStatus (its event stream is not JSON). */
const TASK_PATH_PREFIX = TOOLS_CALLS_PATH_TEMPLATE.replace("{call_id}", "");

/**
 * The schema a JSON answer must match, by its route and status; undefined when the spec sets none. `searching`: the
 * server lists the search extension, so that a `q` asked for with it is answered a ToolSearchResponse.
 */
function schemaFor(answer: Answer, searching: boolean): string | undefined {
  const [method, path = ""] = answer.label.split(" ");
  if (answer.status === 422) {
    return "ValidationErrorResponse";
  }
  if (answer.status >= 400) {
    return "ServerErrorResponse";
  }
  if (answer.status === 202 && method === "POST" && path === "/tools/call") {
    return "CallStatus";
  }
  if (answer.status !== 200) {
    return undefined;
  }
  if (path.startsWith(TASK_PATH_PREFIX)) {
    // One segment below it: the call's status; a segment further: its events, not JSON.
    return path.slice(TASK_PATH_PREFIX.length).includes("/") ? undefined : "CallStatus";
  }
  if (method === "GET" && path === TOOLS_PATH) {
    const asked = (answer.askedExtensions ?? "").split(",").map((id) => id.trim().toLowerCase());
    return searching && asked.includes("search") && new URL(answer.url).searchParams.has("q")
      ? "ToolSearchResponse"
      : "ToolListResponse";
  }
  if (method === "GET" && path === TOOLKITS_PATH) {
    return "ToolkitListResponse";
  }
  if (method === "GET" && path === WELL_KNOWN_OXP_PATH) {
    return "DiscoveryDocument";
  }
  if (method === "GET" && path.startsWith("/.well-known/oauth-protected-resource")) {
    return "ProtectedResourceMetadata";
  }
  if (method === "POST" && path === "/tools/call") {
    return typeof answer.json === "object" && answer.json !== null && "result" in answer.json
      ? "CallToolResultEnvelope"
      : "CallToolResponse";
  }
  if (method === "GET" && path !== "/health") {
    return "AuthorizationChallengeCheckResponse";
  }
  return undefined;
}

async function healthy(ctx: Context): Promise<void> {
  checkStatus(await ctx.http.send({ path: "/health" }), 200);
}

const hostile = (
  { id, title, rules }: Pick<Scenario, "id" | "title" | "rules">,
  run: (ctx: Context) => Promise<void>,
): Scenario => ({
  id: `hostile.${id}`,
  section: "7",
  rules,
  level: "project",
  title,
  async run(ctx) {
    await run(ctx);
    await healthy(ctx);
  },
});

export const hostileScenarios: Scenario[] = [
  hostile(
    {
      id: "malformed-json",
      title: "Malformed JSON bodies are 400s",
      rules: ["call.body-checks", "limits.no-5xx-for-requests"],
    },
    async (ctx) => {
      for (const body of ["{", '{"tool_id": ', "[]", "null", '"text"', "\u0000"]) {
        checkError(await call(ctx, body), 400);
      }
    },
  ),
  hostile(
    { id: "wrong-types", title: "Fields of the wrong type are 400s", rules: ["request.flat-shape", "request.context"] },
    async (ctx) => {
      for (const body of [
        { tool_id: 42 },
        { tool_id: "A.B", input: [1] },
        { tool_id: "A.B", context: "x" },
        { tool_id: "A.B", call_id: 7 },
      ]) {
        checkError(await call(ctx, body), 400);
      }
    },
  ),
  hostile(
    { id: "content-type", title: "A body not sent as application/json is a 415", rules: ["call.body-checks"] },
    async (ctx) => {
      const answer = await ctx.http.send({
        method: "POST",
        path: "/tools/call",
        headers: { "content-type": "text/plain" },
        body: '{"tool_id": "A.B"}',
      });
      checkError(answer, 415);
    },
  ),
  hostile({ id: "too-large", title: "A body over 1 MiB is a 413", rules: ["call.body-checks"] }, async (ctx) => {
    checkError(await call(ctx, { tool_id: "A.B", input: { blob: "x".repeat(1_100_000) } }), 413);
  }),
  hostile(
    {
      id: "deep-nesting",
      title: "Deeply nested bodies are answered with 400, 413 or 422",
      rules: ["limits.nesting-depth", "limits.no-5xx-for-requests"],
    },
    async (ctx) => {
      for (const depth of [1_000, 100_000]) {
        checkError(
          await call(ctx, `{"tool_id": "A.B", "input": {"a": ${"[".repeat(depth)}${"]".repeat(depth)}}}`),
          [400, 413, 422],
        );
      }
    },
  ),
  hostile(
    {
      id: "prototype-keys",
      title: "__proto__, constructor and prototype keys are data, never a crash",
      rules: ["limits.prototype-keys-are-data"],
    },
    async (ctx) => {
      const tool = ctx.tools[0]?.id ?? "A.B";
      for (const body of [
        `{"tool_id": "${tool}", "__proto__": {"polluted": true}}`,
        `{"tool_id": "${tool}", "input": {"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}}`,
        `{"tool_id": "${tool}", "context": {"__proto__": {"polluted": true}, "secrets": [{"id": "__proto__", "value": "x"}]}}`,
      ]) {
        const answer = await call(ctx, body);
        check(answer.status >= 200 && answer.status < 500, `${answer.label} answered ${answer.status}`);
      }
    },
  ),
  hostile(
    {
      id: "long-ids",
      title: "Very long tool ids and call ids are answered with a 4xx",
      rules: ["limits.identifier-length"],
    },
    async (ctx) => {
      checkError(await call(ctx, { tool_id: `A.${"B".repeat(200_000)}` }), 400);
      const answer = await call(ctx, { tool_id: "OxpConformance.NoSuchTool", call_id: "c".repeat(200_000) });
      checkError(answer, 400);
    },
  ),
  hostile(
    {
      id: "concurrent-garbage",
      title: "Many concurrent bad requests all get 4xx JSON answers",
      rules: ["limits.no-5xx-for-requests"],
    },
    async (ctx) => {
      const bodies = ["{", '{"tool_id": 1}', '{"tool_id": "A.B", "input": 5}', "[]"];
      const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => call(ctx, bodies[i % bodies.length])));
      for (const answer of answers) {
        check(answer.status >= 400 && answer.status < 500, `a bad request answered ${answer.status}`);
      }
    },
  ),
  {
    id: "errors.no-leaks",
    section: "7",
    rules: ["limits.no-5xx-for-requests", "endpoints.error-json"],
    level: "project",
    title: "No answer so far carried a stack trace or an internal path, and none was a 5xx but 503",
    async run(ctx) {
      for (const answer of ctx.http.answers) {
        check(!LEAK.test(answer.text), `${answer.label} (${answer.status}) leaks internals: ${truncate(answer.text)}`);
        check(
          answer.status < 500 || answer.status === 503,
          `${answer.label} answered ${answer.status}: ${truncate(answer.text)}`,
        );
      }
    },
  },
  {
    id: "answers.schemas",
    section: "1",
    rules: ["endpoints.error-json", "spec.closed-bodies"],
    level: "project",
    title: "Every JSON answer of the run matches the spec's schema for its route and status",
    async run(ctx) {
      for (const answer of ctx.http.answers) {
        const title = schemaFor(answer, ctx.extensions.includes("search"));
        if (title && answer.json !== undefined) {
          checkSchema(title, answer.json, `${answer.label} (${answer.status})`);
        }
      }
    },
  },
];
