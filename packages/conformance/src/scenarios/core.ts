/** Scenarios for docs/protocol.md sections 1, 2 and 6: endpoints, headers, errors, versions, tool definitions. */
import type { ToolDefinition } from "@otc/types";
import { header } from "../http.js";
import { type Context, check, checkError, checkSchema, checkStatus, type Scenario, truncate } from "../scenario.js";

const UNKNOWN_PATH = "/oxp-conformance/no-such-path";

export const coreScenarios: Scenario[] = [
  {
    id: "health.ok",
    section: "1",
    rules: ["endpoints.health"],
    level: "MUST",
    title: "GET /health answers 200 (JSON if it has a body)",
    async run(ctx) {
      const answer = await ctx.http.send({ path: "/health" });
      checkStatus(answer, 200);
      if (answer.text !== "") {
        check(answer.json !== undefined, `/health answered a body that is not JSON: ${truncate(answer.text)}`);
      }
    },
  },
  {
    id: "health.no-auth",
    section: "1",
    rules: ["endpoints.health", "auth.guards-all-but-health"],
    level: "MUST",
    title: "GET /health needs no authentication",
    async run(ctx) {
      checkStatus(await ctx.http.send({ path: "/health" }, true), 200);
    },
  },
  {
    id: "headers.oxp-version",
    section: "1",
    rules: ["endpoints.oxp-version-header"],
    level: "project",
    title: "Every response carries OXP-Version: 1.0, errors and 404s included",
    async run(ctx) {
      const answers = [
        await ctx.http.send({ path: "/health" }),
        await ctx.http.send({ path: "/tools" }),
        await ctx.http.send({ path: UNKNOWN_PATH }),
        await ctx.http.send({
          method: "POST",
          path: "/tools/call",
          headers: { "content-type": "application/json" },
          body: "{",
        }),
      ];
      for (const answer of answers) {
        check(
          header(answer, "oxp-version") === "1.0",
          `${answer.label} (${answer.status}) has OXP-Version ${header(answer, "oxp-version") ?? "(none)"}`,
        );
      }
    },
  },
  {
    id: "errors.not-found",
    section: "1",
    rules: ["endpoints.unknown-route", "endpoints.error-json"],
    level: "project",
    title: "An unknown path is a 404 with a JSON ServerErrorResponse",
    async run(ctx) {
      checkError(await ctx.http.send({ path: UNKNOWN_PATH }), 404);
    },
  },
  {
    id: "errors.method-not-allowed",
    section: "1",
    rules: ["endpoints.unknown-route"],
    level: "project",
    title: "A known path with a wrong method is a 405 with Allow",
    async run(ctx) {
      const answer = await ctx.http.send({ method: "DELETE", path: "/tools" });
      checkError(answer, 405);
      check(/\bGET\b/.test(header(answer, "allow") ?? ""), `the 405 has Allow: ${header(answer, "allow") ?? "(none)"}`);
    },
  },
  {
    id: "tools.list",
    section: "1",
    rules: ["endpoints.list-tools"],
    level: "MUST",
    title: "GET /tools answers 200 with a ToolListResponse",
    async run(ctx) {
      const answer = await ctx.http.send({ path: "/tools" });
      checkStatus(answer, 200);
      checkSchema("ToolListResponse", answer.json, "GET /tools");
    },
  },
  {
    id: "tools.query-ignored",
    section: "1",
    rules: ["endpoints.lenient-get"],
    level: "project",
    title: "Unknown query parameters are ignored",
    async run(ctx) {
      const plain = await ctx.http.send({ path: "/tools" });
      const odd = await ctx.http.send({ path: "/tools?oxp_conformance=1&page=2" });
      checkStatus(odd, 200);
      check(odd.text === plain.text, "GET /tools with unknown query parameters answered differently");
    },
  },
  {
    id: "tools.definitions",
    section: "6",
    rules: [
      "definitions.fields",
      "definitions.id-and-version",
      "definitions.name-pattern",
      "definitions.input-schema-flat",
      "definitions.self-contained",
    ],
    level: "MUST",
    title: "Definitions: unique ids with their version, names, flat self-contained input schemas, described properties",
    async run(ctx) {
      const answer = await ctx.http.send({ path: "/tools" });
      const listed = (answer.json as { items?: ToolDefinition[] } | undefined)?.items;
      check(Array.isArray(listed), "GET /tools has no items to check");
      const ids = new Set<string>();
      for (const tool of listed) {
        check(!ids.has(tool.id), `${tool.id} is listed twice`);
        ids.add(tool.id);
        check(tool.id.endsWith(`@${tool.version}`), `${tool.id}: the id does not end in @${tool.version}`);
        check(/^[A-Za-z0-9_-]{1,64}$/.test(tool.name), `${tool.id}: the name '${tool.name}' breaks the pattern`);
        const schema = tool.input_schema as Record<string, unknown>;
        check(
          !("parameters" in schema && Object.keys(schema).length === 1),
          `${tool.id}: input_schema is wrapped in 'parameters'`,
        );
        const text = JSON.stringify([tool.input_schema, tool.output_schema]);
        check(!/"\$ref"|"\$defs"|"definitions"/.test(text), `${tool.id}: a schema uses $ref, $defs or definitions`);
        for (const [name, property] of Object.entries(
          (schema.properties ?? {}) as Record<string, Record<string, unknown>>,
        )) {
          check(typeof property.description === "string", `${tool.id}: input property '${name}' has no description`);
        }
      }
    },
  },
  {
    id: "version.header.accepted",
    section: "2",
    rules: ["versions.header-optional"],
    level: "project",
    title: "OXP-Version 1.0, 1 and 1.0.0 are accepted",
    async run(ctx) {
      for (const version of ["1.0", "1", "1.0.0"]) {
        checkStatus(await ctx.http.send({ path: "/tools", headers: { "OXP-Version": version } }), 200);
      }
    },
  },
  {
    id: "version.header.unsupported",
    section: "2",
    rules: ["versions.unsupported-400"],
    level: "project",
    title: "Another OXP-Version is a 400 whose developer_message lists the supported versions",
    async run(ctx: Context) {
      const answer = await ctx.http.send({ path: "/tools", headers: { "OXP-Version": "2.0" } });
      checkError(answer, 400);
      const body = answer.json as { message: string; developer_message?: string };
      check(/version/i.test(body.message), `the message does not speak of the version: ${body.message}`);
      check(
        /1\.0/.test(body.developer_message ?? ""),
        `developer_message does not list 1.0: ${body.developer_message ?? "(none)"}`,
      );
    },
  },
];
