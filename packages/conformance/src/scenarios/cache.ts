/**
 * Scenarios for docs/protocol.md 9.9, the cache extension, where the server's discovery document lists `cache`: the
 * ETags, 304s and Cache-Control of the catalog's answers and discovery, their body fields, `no-store` on calls, and
 * the `OXP-Tool` header. The calls sent stop before a tool runs (an unknown tool, a body that is not JSON, an input
 * missing a required property), but for the fixture's safe call.
 */
import { TOOLKITS_PATH, TOOLS_PATH, type ToolDefinition, WELL_KNOWN_OXP_PATH } from "@otc/types";
import { type Answer, header } from "../http.js";
import {
  type Context,
  call,
  check,
  checkError,
  checkSchema,
  checkStatus,
  type Scenario,
  truncate,
} from "../scenario.js";
import { EXTENSIONS_HEADER, listOf, needExtension, swapCase } from "./extensions.js";
import { queryOf, searchTokens } from "./search.js";

/** One answer the cache extension shapes: where it is asked, and how to ask for it without cache. */
interface Form {
  what: string;
  path: string;
  query: string;
  /** The `OXP-Extensions` that asks for it with cache. */
  asked: string;
  /** The `OXP-Extensions` that asks for the same form without cache; undefined for none at all. */
  without: string | undefined;
  /** The schema of its body; undefined for discovery, which has no cache fields. */
  schema: "ToolListResponse" | "ToolSearchResponse" | "ToolkitListResponse" | undefined;
}

/** The answers the cache extension shapes on this server: the list, and the page, searches and toolkits it offers. */
async function formsOf(ctx: Context): Promise<Form[]> {
  const tools = listOf(await ctx.http.send({ path: TOOLS_PATH }), `GET ${TOOLS_PATH}`).items;
  const forms: Form[] = [
    { what: "the list", path: TOOLS_PATH, query: "", asked: "cache", without: undefined, schema: "ToolListResponse" },
  ];
  if (ctx.extensions.includes("pagination")) {
    forms.push({
      what: "a page",
      path: TOOLS_PATH,
      query: "?limit=2",
      asked: "cache, pagination",
      without: "pagination",
      schema: "ToolListResponse",
    });
  }
  if (ctx.extensions.includes("search")) {
    const [tool] = tools as [ToolDefinition?];
    const term = (tool && searchTokens(tool.name)[0]) ?? "oxp";
    forms.push({
      what: "a search",
      path: TOOLS_PATH,
      query: queryOf({ q: term }),
      asked: "cache, search",
      without: "search",
      schema: "ToolSearchResponse",
    });
    if (tool) {
      forms.push({
        what: "ids",
        path: TOOLS_PATH,
        query: queryOf({ ids: tool.id }),
        asked: "cache, search",
        without: "search",
        schema: "ToolListResponse",
      });
    }
    forms.push({
      what: "the toolkits",
      path: TOOLKITS_PATH,
      query: "",
      asked: "cache, search",
      without: "search",
      schema: "ToolkitListResponse",
    });
  }
  forms.push({
    what: "discovery",
    path: WELL_KNOWN_OXP_PATH,
    query: "",
    asked: "cache",
    without: undefined,
    schema: undefined,
  });
  return forms;
}

/** How a request is named in messages. */
const described = (form: Form, asked: string | undefined) =>
  `${form.what}, GET ${form.path}${truncate(form.query, 80)}${asked === undefined ? "" : ` (${EXTENSIONS_HEADER}: ${asked})`}`;

/** GET a form, asking for `asked` (with cache by default). */
const fetchForm = (ctx: Context, form: Form, asked: string | undefined, headers: Record<string, string> = {}) =>
  ctx.http.send({
    path: `${form.path}${form.query}`,
    headers: { ...(asked === undefined ? {} : { [EXTENSIONS_HEADER]: asked }), ...headers },
  });

/** A `Cache-Control` of exactly `public, max-age=N` or `private, max-age=N` (in any order and case), read. */
export function cachePolicyOf(value: string | undefined): { scope: "public" | "private"; maxAge: number } | undefined {
  const directives = (value ?? "")
    .split(",")
    .map((directive) => directive.trim().toLowerCase())
    .filter((directive) => directive !== "");
  const scopes = directives.filter((directive) => directive === "public" || directive === "private");
  const ages = directives.map((directive) => /^max-age=([0-9]{1,10})$/.exec(directive)?.[1]).filter(Boolean);
  if (directives.length !== 2 || scopes.length !== 1 || ages.length !== 1) {
    return undefined;
  }
  return { scope: scopes[0] as "public" | "private", maxAge: Number(ages[0]) };
}

/** The `Cache-Control` directives of an answer, lower-cased. */
const directivesOf = (answer: Answer) =>
  (header(answer, "cache-control") ?? "").split(",").map((directive) => directive.trim().toLowerCase());

/** A tool without requirements whose input has a required property: a call with an empty input stops at its 422. */
function probeOf(tools: readonly ToolDefinition[]): ToolDefinition | undefined {
  return tools.find((tool) => {
    const schema = tool.input_schema as { required?: unknown };
    return !tool.requirements && Array.isArray(schema?.required) && schema.required.length > 0;
  });
}

/** A 400 JSON error's message and developer message, as one text to look for names in. */
const errorText = (answer: Answer) => {
  const body = (answer.json ?? {}) as { message?: unknown; developer_message?: unknown };
  return `${String(body.message ?? "")} ${String(body.developer_message ?? "")}`;
};

export const cacheScenarios: Scenario[] = [
  {
    id: "cache.etag",
    section: "9.9",
    rules: ["cache.etag"],
    level: "project",
    title:
      "Asked for cache, lists, pages, searches, ids, toolkits and discovery carry a strong ETag of their bytes; If-None-Match gets a 304",
    async run(ctx) {
      needExtension(ctx, "cache");
      const tags = new Map<string, { what: string; text: string }>();
      const tagged = (etag: string, what: string, text: string) => {
        const other = tags.get(etag);
        check(
          other === undefined || other.text === text,
          `${what} and ${other?.what} answer other bytes with the same ETag ${etag}`,
        );
        tags.set(etag, { what, text });
      };
      for (const form of await formsOf(ctx)) {
        const what = described(form, form.asked);
        const first = await fetchForm(ctx, form, form.asked);
        checkStatus(first, 200);
        const etag = header(first, "etag");
        check(etag !== undefined, `${what} has no ETag`);
        check(/^"[\x21\x23-\x7e\x80-\xff]*"$/.test(etag), `${what} has the ETag ${etag}, not a strong one`);
        tagged(etag, what, first.text);
        const again = await fetchForm(ctx, form, form.asked);
        check(
          (header(again, "etag") === etag) === (again.text === first.text),
          `${what} answered ${again.text === first.text ? "the same bytes with another" : "other bytes with the same"} ETag the second time`,
        );
        const revalidated = await fetchForm(ctx, form, form.asked, { "If-None-Match": etag });
        check(
          revalidated.status === 304,
          `${what} with If-None-Match: ${etag} answered ${revalidated.status}, not 304`,
        );
        check(
          header(revalidated, "etag") === etag,
          `${what}'s 304 has the ETag ${header(revalidated, "etag")}, not ${etag}`,
        );
        check(
          header(revalidated, "cache-control") === header(first, "cache-control"),
          `${what}'s 304 has Cache-Control ${header(revalidated, "cache-control") ?? "(none)"}, its 200 ${header(first, "cache-control") ?? "(none)"}`,
        );
        check(revalidated.text === "", `${what}'s 304 has a body: ${truncate(revalidated.text)}`);
        const changed = await fetchForm(ctx, form, form.asked, { "If-None-Match": '"oxp-conformance-another-tag"' });
        check(changed.status === 200, `${what} with If-None-Match naming another ETag answered ${changed.status}`);
        // Without cache its bytes differ (no ttl_ms, cache_scope): an ETag it has is its own.
        if (form.schema !== undefined) {
          const plain = await fetchForm(ctx, form, form.without);
          const plainTag = header(plain, "etag");
          if (plainTag !== undefined) {
            tagged(plainTag, described(form, form.without), plain.text);
          }
        }
      }
    },
  },
  {
    id: "cache.control",
    section: "9.9",
    rules: ["cache.control", "cache.etag"],
    level: "project",
    title:
      "Asked for cache, discovery answers Cache-Control: public, max-age=N; the lists public without authentication, private with it",
    async run(ctx) {
      needExtension(ctx, "cache");
      // Whether the server authenticates: its list without credentials.
      const anonymous = await ctx.http.send({ path: TOOLS_PATH }, true);
      const expected =
        anonymous.status === 200 ? "public" : [401, 403].includes(anonymous.status) ? "private" : undefined;
      const ages = new Map<number, string>();
      for (const form of await formsOf(ctx)) {
        const what = described(form, form.asked);
        const answer = await fetchForm(ctx, form, form.asked);
        checkStatus(answer, 200);
        const value = header(answer, "cache-control");
        const policy = cachePolicyOf(value);
        check(
          policy !== undefined,
          `${what} answered Cache-Control: ${value ?? "(none)"}, not 'public, max-age=N' or 'private, max-age=N'`,
        );
        ages.set(policy.maxAge, what);
        if (form.schema === undefined) {
          check(
            policy.scope === "public",
            `${what} answered Cache-Control: ${value}: discovery is the same for every caller`,
          );
        } else if (expected !== undefined) {
          check(
            policy.scope === expected,
            expected === "public"
              ? `${what} answered Cache-Control: ${value}, on a server that lists its tools without credentials: every caller gets the same answer`
              : `${what} answered Cache-Control: ${value}, on a server that asks for credentials (GET ${TOOLS_PATH} without them is a ${anonymous.status}): a shared cache would hand it to callers the server did not admit`,
          );
        }
      }
      check(
        ages.size <= 1,
        `the answers give max-age ${[...ages].map(([age, what]) => `${age} (${what})`).join(", ")}: N is the server's one setting`,
      );
    },
  },
  {
    id: "cache.body-fields",
    section: "9.9",
    rules: ["cache.body-fields"],
    level: "project",
    title:
      "Asked for cache, list, search and toolkit bodies add ttl_ms (max-age in ms) and cache_scope; without it, neither",
    async run(ctx) {
      needExtension(ctx, "cache");
      for (const form of await formsOf(ctx)) {
        if (form.schema === undefined) {
          continue;
        }
        const what = described(form, form.asked);
        const answer = await fetchForm(ctx, form, form.asked);
        checkStatus(answer, 200);
        checkSchema(form.schema, answer.json, what);
        const body = answer.json as { ttl_ms?: unknown; cache_scope?: unknown };
        check(typeof body.ttl_ms === "number", `${what} has no ttl_ms`);
        check(typeof body.cache_scope === "string", `${what} has no cache_scope`);
        const policy = cachePolicyOf(header(answer, "cache-control"));
        if (policy) {
          check(
            body.ttl_ms === policy.maxAge * 1000,
            `${what} has ttl_ms ${body.ttl_ms}, where Cache-Control says max-age=${policy.maxAge} (${policy.maxAge * 1000} ms)`,
          );
          check(
            body.cache_scope === policy.scope,
            `${what} has cache_scope ${body.cache_scope}, where Cache-Control says ${policy.scope}`,
          );
        }
        const plain = await fetchForm(ctx, form, form.without);
        const plainWhat = described(form, form.without);
        checkStatus(plain, 200);
        const fields = ["ttl_ms", "cache_scope"].filter((field) => field in ((plain.json ?? {}) as object));
        check(fields.length === 0, `${plainWhat}, without cache asked for, has ${fields.join(" and ")}`);
      }
    },
  },
  {
    id: "cache.no-store",
    section: "9.9",
    rules: ["cache.no-store"],
    level: "project",
    title: "Asked for cache, every answer of POST /tools/call says Cache-Control: no-store",
    async run(ctx) {
      needExtension(ctx, "cache");
      const probe = probeOf(ctx.tools);
      const safe = ctx.fixture.safeCall;
      const calls: [string, unknown][] = [
        ["an unknown tool", { tool_id: "OxpConformance.NoSuchTool", input: {} }],
        ["a body that is not JSON", "{"],
        ...(probe
          ? [[`${probe.id} without its required input`, { tool_id: probe.id, input: {} }] as [string, unknown]]
          : []),
        ...(safe
          ? [["the fixture's safe call", { tool_id: safe.tool_id, input: safe.input }] as [string, unknown]]
          : []),
      ];
      for (const [what, body] of calls) {
        const answer = await call(ctx, body, { [EXTENSIONS_HEADER]: "cache" });
        check(
          directivesOf(answer).includes("no-store"),
          `POST /tools/call of ${what} (${EXTENSIONS_HEADER}: cache) answered ${answer.status} with Cache-Control: ${header(answer, "cache-control") ?? "(none)"}, without no-store`,
        );
      }
    },
  },
  {
    id: "cache.tool-header",
    section: "9.9",
    rules: ["cache.tool-header", "call.order-of-checks"],
    level: "project",
    title:
      "A call whose OXP-Tool is not its body's tool_id, character for character, is a 400 naming both, before the tool is looked up",
    async run(ctx) {
      needExtension(ctx, "cache");
      const probe = probeOf(ctx.tools);
      for (const asked of [{}, { [EXTENSIONS_HEADER]: "cache" }] as Record<string, string>[]) {
        const how = EXTENSIONS_HEADER in asked ? ` (${EXTENSIONS_HEADER}: cache)` : "";
        const mismatched = async (toolId: string, routed: string) => {
          const what = `POST /tools/call of ${toolId} with OXP-Tool: ${routed}${how}`;
          const answer = await call(ctx, { tool_id: toolId, input: {} }, { "OXP-Tool": routed, ...asked });
          check(answer.status === 400, `${what} answered ${answer.status}, not 400: ${truncate(answer.text)}`);
          checkError(answer, 400);
          const text = errorText(answer);
          check(
            text.includes(routed) && text.includes(toolId),
            `${what}: the 400 does not name both '${routed}' and '${toolId}': ${truncate(answer.text)}`,
          );
        };
        // The body names no tool: a server that looks it up first answers for the tool, not the header.
        await mismatched("OxpConformance.NoSuchTool", "OxpConformance.OtherTool");
        await mismatched("OxpConformance.NoSuchTool", "oxpconformance.nosuchtool");
        if (probe) {
          // A tool that exists: without the check, its input's 422.
          const qualified = probe.id.split("@")[0] ?? probe.id;
          await mismatched(probe.id, swapCase(probe.id));
          if (qualified !== probe.id) {
            await mismatched(probe.id, qualified);
          }
          const what = `POST /tools/call of ${probe.id} with OXP-Tool: ${probe.id}${how}`;
          const agreeing = await call(ctx, { tool_id: probe.id, input: {} }, { "OXP-Tool": probe.id, ...asked });
          check(
            agreeing.status === 422,
            `${what} and an input missing a required property answered ${agreeing.status}, not 422`,
          );
        }
      }
    },
  },
];
