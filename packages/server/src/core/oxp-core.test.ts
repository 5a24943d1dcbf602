// The protocol core, exercised directly: definitions at start-up, tool failures, output checks, idempotency stores.
import { createHash } from "node:crypto";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import type { CallToolRequest } from "@otc/types";
import { describe, expect, it } from "vitest";
import { MemoryTokenStore } from "./authorization.js";
import { ServerConfigError, WireError } from "./errors.js";
import { type IdempotencyStore, MemoryIdempotencyStore } from "./idempotency-store.js";
import { type CallMeta, type CoreLogger, InProcessTaskStore, OxpCore } from "./oxp-core.js";
import { defineTool, OxpToolError, type Tool } from "./tool.js";

const meta: CallMeta = { principal: "anonymous", baseUrl: "http://127.0.0.1" };

/** A tool built without defineTool's inference: these tests feed it schemas of every shape. */
const tool = (
  overrides: Partial<Omit<Tool, "inputSchema" | "outputSchema">> & {
    run: Tool["run"];
    inputSchema?: object;
    outputSchema?: object | null;
  },
): Tool => ({
  toolkit: "Test",
  name: "Tool",
  version: "1.0.0",
  description: "A tool for tests.",
  requirements: undefined,
  timeoutMs: undefined,
  ...overrides,
  inputSchema: (overrides.inputSchema ?? {}) as Tool["inputSchema"],
  outputSchema: (overrides.outputSchema === undefined ? {} : overrides.outputSchema) as Tool["outputSchema"],
});

describe("defineTool", () => {
  it("keeps what it is given", () => {
    const run = () => 1;
    const defined = defineTool({
      toolkit: "A",
      name: "B",
      version: "1.2.3",
      description: "d",
      inputSchema: {},
      outputSchema: { type: "number" },
      timeoutMs: 5,
      run,
    });
    expect(defined).toMatchObject({ toolkit: "A", name: "B", version: "1.2.3", timeoutMs: 5, run });
  });
});

async function callOne(t: Tool, request: Partial<CallToolRequest> = {}, options = {}) {
  const core = new OxpCore({ tools: [t], ...options });
  return core.call({ tool_id: "Test.Tool", ...request }, meta);
}

describe("tool definitions at start-up (docs/protocol.md 6)", () => {
  const base = { run: () => null };
  verifies.each<[string, Parameters<typeof tool>[0] | Omit<Parameters<typeof tool>[0], "run">, RegExp]>([
    ["a name with a space", { name: "My Tool" }, /Tool 'Test.My Tool@1.0.0' is refused/],
    ["a two-part version", { version: "1.0" }, /does not match the ToolDefinition schema/],
    ["a toolkit with a dash", { toolkit: "My-Kit" }, /toolkit must be letters, digits and '_'/],
    ["an empty description", { description: "" }, /does not match the ToolDefinition schema/],
    [
      "a $ref in the input schema",
      { inputSchema: { type: "object", properties: { a: { $ref: "#/x", description: "A." } } } },
      /input_schema must be self-contained, but has \/properties\/a\/\$ref/,
    ],
    [
      "$defs in the output schema",
      { outputSchema: { $defs: { x: {} }, type: "object" } },
      /does not match the ToolDefinition schema|output_schema must be self-contained/,
    ],
    [
      "a property without a description",
      { inputSchema: { type: "object", properties: { a: { type: "number" } } } },
      /description/,
    ],
    [
      "an invalid JSON Schema",
      { inputSchema: { type: "object", minProperties: -1 } },
      /input_schema is not a valid JSON Schema/,
    ],
    [
      "an unknown format",
      { inputSchema: { type: "object", properties: { a: { type: "string", format: "nope", description: "A." } } } },
      /uses a format this server does not know, at \/properties\/a\/format/,
    ],
    ["a zero time limit", { timeoutMs: 0 }, /timeoutMs must be a positive number/],
  ])(
    [
      "definitions.refused-at-start",
      "definitions.name-pattern",
      "definitions.self-contained",
      "definitions.input-schema-flat",
      "definitions.id-and-version",
    ],
    "refuses %s, naming the tool and the rule",
    (_case, overrides, message) => {
      const build = () => new OxpCore({ tools: [tool({ ...base, ...overrides })] });
      expect(build).toThrow(ServerConfigError);
      expect(build).toThrow(message);
    },
  );

  verifies(["definitions.id-and-version", "definitions.refused-at-start"], "refuses two tools with the same id", () => {
    expect(() => new OxpCore({ tools: [tool(base), tool(base)] })).toThrow(/Tool 'Test.Tool@1.0.0' is defined twice/);
  });

  verifies(
    "definitions.legacy-parameters",
    "unwraps the older {parameters: ...} input schema and never lists it",
    async () => {
      const wrapped = tool({
        ...base,
        inputSchema: {
          parameters: { type: "object", properties: { a: { type: "number", description: "A." } }, required: ["a"] },
        },
      });
      const core = new OxpCore({ tools: [wrapped] });
      expect(core.listTools().items[0]?.input_schema).toEqual({
        type: "object",
        properties: { a: { type: "number", description: "A." } },
        required: ["a"],
      });
      await expect(core.call({ tool_id: "Test.Tool", input: {} }, meta)).rejects.toMatchObject({ status: 422 });
    },
  );
});

describe("the tool list (GET /tools)", () => {
  it("is made once: every call resolves to the same object, its ETag the quoted SHA-256 of its body", async () => {
    const core = new OxpCore({ tools: [tool({ run: () => null })] });
    const list = await core.toolList();
    expect(await core.toolList()).toBe(list);
    expect(JSON.parse(list.body)).toEqual(core.listTools());
    expect(list.etag).toBe(`"${createHash("sha256").update(list.body).digest("base64url")}"`);
    expect(Object.isFrozen(list)).toBe(true);
  });
});

describe("callNow: the adapters' entry, without a promise where nothing waits", () => {
  const lines: Record<string, unknown>[] = [];
  const logger: CoreLogger = {
    debug() {},
    info(line: object) {
      lines.push(line as Record<string, unknown>);
    },
    warn() {},
    error() {},
    child() {
      return logger;
    },
  };
  const sync = tool({
    name: "Sync",
    inputSchema: {
      type: "object",
      properties: { a: { type: "number", description: "A number." } },
      additionalProperties: false,
    },
    run: ({ a }) => a,
  });
  const later = tool({ name: "Later", run: async ({ a }) => a });
  const needsKey = tool({
    name: "Keyed",
    requirements: { secrets: [{ id: "K" }] },
    run: (_input, ctx) => ctx.secrets.K,
  });
  const core = new OxpCore({ tools: [sync, later, needsKey], logger, secrets: { K: "k" } });

  it("answers a synchronous tool without a call_id at once, and logs its line before it returns", () => {
    lines.length = 0;
    const answered = core.callNow({ tool_id: "Test.Sync", input: { a: 1 } }, meta);
    expect(answered).not.toBeInstanceOf(Promise);
    expect(answered).toMatchObject({ success: true, value: 1 });
    expect(lines).toMatchObject([{ tool_id: "Test.Sync@1.0.0", outcome: "success" }]);
  });

  it("answers through a promise where something waits: an async tool, a call_id, a requirement", async () => {
    for (const request of [
      { tool_id: "Test.Later", input: { a: 2 } },
      { tool_id: "Test.Sync", call_id: "now-1", input: { a: 2 } },
      { tool_id: "Test.Keyed", input: {} },
    ]) {
      const answered = core.callNow(request, meta);
      expect(answered).toBeInstanceOf(Promise);
      expect(await answered).toMatchObject({ success: true });
    }
  });

  it("throws a refusal at once, logged once, where call rejects with it", async () => {
    lines.length = 0;
    expect(() => core.callNow({ tool_id: "Test.Nope", input: {} }, meta)).toThrow(/was not found/);
    expect(() => core.callNow({ tool_id: "Test.Sync", input: { a: 1, b: 2 } }, meta)).toThrow(
      "Some input parameters are invalid",
    );
    expect(lines).toMatchObject([
      { outcome: "rejected", status: 400 },
      { outcome: "rejected", status: 422 },
    ]);
    const rejected = core.call({ tool_id: "Test.Nope", input: {} }, meta);
    expect(rejected).toBeInstanceOf(Promise);
    await expect(rejected).rejects.toBeInstanceOf(WireError);
  });
});

describe("tool failures (docs/protocol.md 3.6)", () => {
  verifies(
    "tool-failure.tool-error-passthrough",
    "passes OxpToolError fields through, retry_after_ms rounded up to an integer",
    async () => {
      const response = await callOne(
        tool({
          run: () => {
            throw new OxpToolError("Nope", {
              developerMessage: "d",
              canRetry: true,
              additionalPromptContent: "p",
              retryAfterMs: 12.2,
            });
          },
        }),
      );
      expect(response).toMatchObject({
        success: false,
        error: {
          message: "Nope",
          developer_message: "d",
          can_retry: true,
          additional_prompt_content: "p",
          retry_after_ms: 13,
        },
      });
    },
  );

  verifies.each<[string, () => unknown, string]>([
    [
      "an Error",
      () => {
        throw new TypeError("x is not a function");
      },
      "TypeError: x is not a function",
    ],
    ["a rejected promise", () => Promise.reject(new Error("boom")), "Error: boom"],
    [
      "a string",
      () => {
        throw "raw string";
      },
      "raw string",
    ],
    [
      "undefined",
      () => {
        throw undefined;
      },
      "undefined",
    ],
  ])(
    "tool-failure.unexpected-exception",
    "turns %s thrown into a generic message, its text only in developer_message",
    async (_case, run, developer) => {
      const response = await callOne(tool({ run }));
      expect(response).toMatchObject({
        success: false,
        error: { message: "The tool failed to run", developer_message: developer, can_retry: false },
      });
    },
  );

  verifies("tool-failure.timeout", "abandons a hung tool at its time limit and aborts its signal", async () => {
    let aborted: unknown;
    const hang = tool({
      timeoutMs: 50,
      run: (_input, ctx) =>
        new Promise((_resolve, reject) => {
          ctx.signal.addEventListener("abort", () => {
            aborted = ctx.signal.reason;
            reject(new Error("too late"));
          });
        }),
    });
    const response = await callOne(hang);
    expect(response).toMatchObject({
      success: false,
      error: { message: "The tool did not finish in time", can_retry: true },
    });
    expect(aborted).toBeInstanceOf(Error);
  });

  verifies("tool-failure.timeout", "uses the server's default time limit when the tool sets none", async () => {
    const response = await callOne(tool({ run: () => new Promise(() => {}) }), {}, { defaultTimeoutMs: 30 });
    expect(response).toMatchObject({ success: false, error: { can_retry: true } });
  });

  verifies.each<[string, object, () => unknown, RegExp]>([
    ["the wrong type", { type: "number" }, () => "seven", /does not match the tool's output_schema/],
    ["a missing property", { type: "object", required: ["a"] }, () => ({}), /does not match/],
    ["nothing where a value is due", { type: "number" }, () => undefined, /does not match/],
    ["a BigInt", {}, () => 10n, /The result is not JSON/],
    [
      "a cycle",
      {},
      () => {
        const a: Record<string, unknown> = {};
        a.self = a;
        return a;
      },
      /The result is not JSON/,
    ],
  ])(
    "tool-failure.invalid-output",
    "answers a result of %s with 'invalid result'",
    async (_case, outputSchema, run, developer) => {
      const response = await callOne(tool({ outputSchema, run }));
      expect(response).toMatchObject({
        success: false,
        error: { message: "The tool returned an invalid result", can_retry: false },
      });
      expect(response.success === false && response.error.developer_message).toMatch(developer);
    },
  );

  verifies(
    ["response.exactly-one-outcome", "definitions.output-schema"],
    "returns null for a tool whose output schema is null, whatever it returns",
    async () => {
      expect(await callOne(tool({ outputSchema: null, run: () => "ignored" }))).toMatchObject({
        success: true,
        value: null,
      });
      expect(await callOne(tool({ outputSchema: null, run: () => undefined }))).toMatchObject({
        success: true,
        value: null,
      });
    },
  );

  it("serializes the result as JSON (dates become strings, undefined properties vanish)", async () => {
    const response = await callOne(
      tool({
        outputSchema: { type: "object", properties: { at: { type: "string", format: "date-time" } } },
        run: () => ({ at: new Date(0), gone: undefined }),
      }),
    );
    expect(response).toMatchObject({ success: true, value: { at: "1970-01-01T00:00:00.000Z" } });
    expect(response.success && response.value).not.toHaveProperty("gone");
  });

  verifies(
    ["request.context", "requirements.tool-context", "trace.passed-and-logged", "requirements.server-held-secrets"],
    "gives the tool its context: call id, trace id, user id, secrets, tokens, extra keys",
    async () => {
      let seen: unknown;
      const spy = tool({
        requirements: { secrets: [{ id: "S" }] },
        run: (_input, ctx) => {
          seen = { ...ctx, signal: undefined, logger: undefined };
          return null;
        },
      });
      await new OxpCore({ tools: [spy], secrets: { S: "server-value", OTHER: "not for this tool" } }).call(
        {
          tool_id: "Test.Tool",
          call_id: "c1",
          trace_id: "t1",
          context: { user_id: "u1", authorization: [{ id: "p", token: "tok" }], locale: "fr" },
        },
        meta,
      );
      expect(seen).toEqual({
        callId: "c1",
        traceId: "t1",
        userId: "u1",
        tokens: { p: "tok" },
        secrets: { S: "server-value" },
        extra: { user_id: "u1", authorization: [{ id: "p", token: "tok" }], locale: "fr" },
        signal: undefined,
        logger: undefined,
      });
    },
  );
});

describe("idempotency (docs/protocol.md 3.7)", () => {
  verifies(
    "idempotency.what-is-stored",
    "stores a failure that cannot be retried: the tool does not run again",
    async () => {
      let runs = 0;
      const failing = tool({
        run: () => {
          runs++;
          throw new OxpToolError("Permanent", { canRetry: false });
        },
      });
      const core = new OxpCore({ tools: [failing] });
      const first = await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
      const second = await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
      expect(second).toEqual(first);
      expect(runs).toBe(1);
    },
  );

  verifies(
    "requirements.secrets-never-leak",
    "stores nothing secret: the record holds a hash and the response",
    async () => {
      const store = new MemoryIdempotencyStore();
      const core = new OxpCore({
        tools: [tool({ requirements: { secrets: [{ id: "S" }] }, run: () => 1 })],
        idempotencyStore: store,
      });
      await core.call(
        { tool_id: "Test.Tool", call_id: "k", context: { secrets: [{ id: "S", value: "hunter2" }] } },
        meta,
      );
      const entry = await store.get({ principal: "anonymous", callId: "k" });
      expect(JSON.stringify(entry)).not.toContain("hunter2");
      expect(entry?.fingerprint).toMatch(/^[A-Za-z0-9_-]{43}$/);
    },
  );

  verifies(
    "idempotency.shared-store",
    "fingerprints a call as earlier versions did, so a shared store's records stay valid across an upgrade",
    async () => {
      const store = new MemoryIdempotencyStore();
      const core = new OxpCore({ tools: [tool({ run: () => 1 })], idempotencyStore: store });
      await core.call({ tool_id: "Test.Tool", call_id: "k", input: { b: 1, a: [2] }, context: { user_id: "u" } }, meta);
      // SHA-256 of the canonical JSON of [resolved id, input (keys sorted), user_id], in base64url.
      const canonical = JSON.stringify(["Test.Tool@1.0.0", { a: [2], b: 1 }, "u"]);
      expect((await store.get({ principal: "anonymous", callId: "k" }))?.fingerprint).toBe(
        createHash("sha256").update(canonical).digest("base64url"),
      );
    },
  );

  verifies("idempotency.replay", "expires records after the retention window", async () => {
    let now = 0;
    const store = new MemoryIdempotencyStore({ now: () => now });
    let runs = 0;
    const core = new OxpCore({
      tools: [tool({ run: () => ++runs })],
      idempotencyStore: store,
      idempotencyRetentionMs: 1_000,
    });
    await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
    now = 999;
    await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
    expect(runs).toBe(1);
    now = 1_000;
    await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
    expect(runs).toBe(2);
  });

  verifies(
    "idempotency.shared-store",
    "waits, through a shared store, for a call another instance is running",
    async () => {
      // Two cores sharing one store stand for two instances behind a load balancer.
      const shared = new MemoryIdempotencyStore();
      const slowStore: IdempotencyStore = {
        claim: (key, fingerprint, ttl) => shared.claim(key, fingerprint, ttl),
        complete: (key, entry, ttl) => shared.complete(key, entry, ttl),
        abandon: (key, fingerprint, ttl) => shared.abandon(key, fingerprint, ttl),
        release: (key) => shared.release(key),
        get: (key) => shared.get(key),
        waitFor: (key, fingerprint, maxMs) => shared.waitFor(key, fingerprint, maxMs),
      };
      let runs = 0;
      // The first run goes on until the second instance has been asked for the same call.
      let started: () => void = () => {};
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      let release: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const slow = () =>
        tool({
          run: async () => {
            runs++;
            started();
            await gate;
            return runs;
          },
        });
      const one = new OxpCore({ tools: [slow()], idempotencyStore: slowStore, taskStore: new InProcessTaskStore() });
      const two = new OxpCore({ tools: [slow()], idempotencyStore: slowStore, taskStore: new InProcessTaskStore() });
      const first = one.call({ tool_id: "Test.Tool", call_id: "shared" }, meta);
      await running;
      const second = two.call({ tool_id: "Test.Tool", call_id: "shared" }, meta);
      release();
      const [a, b] = await Promise.all([first, second]);
      expect(b).toEqual(a);
      expect(runs).toBe(1);
    },
  );

  it("refuses an idempotency store that is not a task store unless a task store is given", () => {
    const shared = new MemoryIdempotencyStore();
    const recordsOnly: IdempotencyStore = {
      claim: (key, fingerprint, ttl) => shared.claim(key, fingerprint, ttl),
      complete: (key, entry, ttl) => shared.complete(key, entry, ttl),
      abandon: (key, fingerprint, ttl) => shared.abandon(key, fingerprint, ttl),
      release: (key) => shared.release(key),
      get: (key) => shared.get(key),
      waitFor: (key, fingerprint, maxMs) => shared.waitFor(key, fingerprint, maxMs),
    };
    expect(() => new OxpCore({ tools: [tool({ run: () => 1 })], idempotencyStore: recordsOnly })).toThrow(
      ServerConfigError,
    );
    expect(
      () =>
        new OxpCore({
          tools: [tool({ run: () => 1 })],
          idempotencyStore: recordsOnly,
          taskStore: new InProcessTaskStore(),
        }),
    ).not.toThrow();
  });

  it("refuses a reused call_id before running anything", async () => {
    let runs = 0;
    const core = new OxpCore({ tools: [tool({ run: () => ++runs })] });
    await core.call({ tool_id: "Test.Tool", call_id: "k", input: { x: 1 } }, meta);
    await expect(core.call({ tool_id: "Test.Tool", call_id: "k", input: { x: 2 } }, meta)).rejects.toBeInstanceOf(
      WireError,
    );
    expect(runs).toBe(1);
  });

  it("treats an empty user_id as none when comparing retries, as the requirement checks do", async () => {
    let runs = 0;
    const core = new OxpCore({ tools: [tool({ run: () => ++runs })] });
    const first = await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
    const retry = await core.call({ tool_id: "Test.Tool", call_id: "k", context: { user_id: "" } }, meta);
    expect(retry).toEqual(first);
    expect(runs).toBe(1);
  });

  it("keys call_ids by principal: another principal's equal call_id is its own call", async () => {
    let runs = 0;
    const core = new OxpCore({ tools: [tool({ run: () => ++runs })] });
    const mine = await core.call({ tool_id: "Test.Tool", call_id: "k", input: { x: 1 } }, meta);
    const theirs = await core.call(
      { tool_id: "Test.Tool", call_id: "k", input: { x: 2 } },
      { ...meta, principal: "other" },
    );
    expect(mine).toMatchObject({ success: true, value: 1 });
    expect(theirs).toMatchObject({ success: true, value: 2 });
    expect(await core.call({ tool_id: "Test.Tool", call_id: "k", input: { x: 1 } }, meta)).toEqual(mine);
    expect(runs).toBe(2);
  });

  verifies(
    "idempotency.abandoned-run-holds-key",
    "holds the call_id of a run abandoned at its time limit until the tool settles",
    async () => {
      let runs = 0;
      let finish: () => void = () => {};
      const stubborn = tool({
        timeoutMs: 30,
        // Ignores its AbortSignal on purpose.
        run: () => {
          runs++;
          return new Promise<number>((resolve) => {
            finish = () => resolve(runs);
          });
        },
      });
      const store = new MemoryIdempotencyStore();
      const core = new OxpCore({ tools: [stubborn], idempotencyStore: store });
      const first = await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
      expect(first).toMatchObject({ success: false, error: { can_retry: true } });
      const retry = await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
      expect(retry).toMatchObject({ call_id: "k", success: false, error: { can_retry: true } });
      expect(retry.success === false && retry.error.retry_after_ms).toBeGreaterThan(0);
      expect(runs).toBe(1);
      finish();
      // Once the tool settles, the core frees the call_id.
      await until(async () => (await store.get({ principal: meta.principal, callId: "k" })) === undefined);
      await core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
      expect(runs).toBe(2);
    },
  );

  verifies(
    "idempotency.full-store-503",
    "answers 503 with Retry-After when the store cannot take a new call_id",
    async () => {
      const store = new MemoryIdempotencyStore({ maxEntries: 1 });
      const core = new OxpCore({ tools: [tool({ run: () => 1 })], idempotencyStore: store });
      await core.call({ tool_id: "Test.Tool", call_id: "a" }, { ...meta, principal: "p1" });
      const refused = core.call({ tool_id: "Test.Tool", call_id: "b" }, { ...meta, principal: "p2" });
      await expect(refused).rejects.toMatchObject({
        status: 503,
        details: { headers: { "Retry-After": expect.any(String) } },
      });
      // A call without a call_id needs no record and still runs.
      expect(await core.call({ tool_id: "Test.Tool" }, { ...meta, principal: "p2" })).toMatchObject({ success: true });
    },
  );

  verifies(
    "limits.drain-answers-every-caller",
    "aborts running calls at shutdown and answers each with a retryable failure",
    async () => {
      let aborted = false;
      let started: () => void = () => {};
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      const slow = tool({
        run: (_input, ctx) =>
          new Promise((_, reject) => {
            started();
            ctx.signal.addEventListener("abort", () => {
              aborted = true;
              reject(ctx.signal.reason);
            });
          }),
      });
      const core = new OxpCore({ tools: [slow] });
      const call = core.call({ tool_id: "Test.Tool", call_id: "k" }, meta);
      await running;
      await core.abortAll();
      expect(await call).toMatchObject({
        success: false,
        error: { message: "The server is shutting down", can_retry: true },
      });
      expect(aborted).toBe(true);
    },
  );
});

describe("shutdown before a run starts", () => {
  verifies(
    "limits.drain-answers-every-caller",
    "stops at once a run that starts after abortAll (its call_id claim was still pending)",
    async () => {
      const slow = tool({
        run: (_input, ctx) =>
          new Promise((_, reject) => {
            ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
          }),
      });
      const core = new OxpCore({ tools: [slow] });
      const call = core.call({ tool_id: "Test.Tool", call_id: "late" }, meta);
      await core.abortAll();
      expect(await call).toMatchObject({ success: false, error: { message: "The server is shutting down" } });
    },
  );
});

describe("authorization requirements (docs/protocol.md 4)", () => {
  const needsGithub = tool({
    requirements: { authorization: [{ id: "github", oauth2: { scopes: ["repo", "user"] } }] },
    run: (_input, ctx) => ctx.tokens.github ?? null,
  });
  const context = { user_id: "ann" };
  /** A `github` provider whose challenges stay pending; it records the ids it started. */
  const githubProvider = (started: string[]) => ({
    id: "github",
    async startChallenge(input: { challengeId: string }) {
      started.push(input.challengeId);
      return { url: `https://auth.test/${input.challengeId}` };
    },
    async checkChallenge() {
      return "pending" as const;
    },
  });

  verifies(
    ["requirements.check-order", "requirements.challenge-400"],
    "checks user_id, then secrets, then authorization: the first unmet one decides the 400",
    async () => {
      const started: string[] = [];
      const provider = githubProvider(started);
      const needsAll = tool({
        requirements: { user_id: true, secrets: [{ id: "S" }], authorization: [{ id: "github" }] },
        run: () => 1,
      });
      const core = new OxpCore({ tools: [needsAll], authorizationProviders: [provider] });
      const refusal = (request: Omit<CallToolRequest, "tool_id">) =>
        core.call({ tool_id: "Test.Tool", ...request }, meta).then(
          () => expect.unreachable("the call ran"),
          (error: unknown) => (error as WireError).toBody(),
        );
      expect(await refusal({})).toMatchObject({ missing_requirements: { user_id: true } });
      expect(started).toEqual([]);
      const noSecret = await refusal({ context: { user_id: "ann" } });
      expect(noSecret).toMatchObject({ developer_message: expect.stringContaining("Missing secrets: S") });
      expect(noSecret).not.toHaveProperty("missing_requirements");
      expect(started).toEqual([]);
      const noToken = await refusal({ context: { user_id: "ann", secrets: [{ id: "S", value: "v" }] } });
      expect(noToken).toMatchObject({ message: "Authorization required" });
      expect(started).toHaveLength(1);
    },
  );

  verifies(
    "requirements.no-provider-400",
    "without a provider for the id: a 400 with a message and no challenge",
    async () => {
      const error = await new OxpCore({ tools: [needsGithub] })
        .call({ tool_id: "Test.Tool", context }, meta)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WireError);
      expect((error as WireError).toBody()).toEqual({
        message: "Authorization required",
        developer_message: "No token was sent for github, and this server has no authorization provider for it.",
      });
    },
  );

  verifies(
    ["requirements.authorization-token", "requirements.challenge-400"],
    "uses a token the server holds only when it covers the scopes; otherwise starts a challenge",
    async () => {
      const tokens = new MemoryTokenStore();
      const started: string[] = [];
      const provider = githubProvider(started);
      const core = new OxpCore({ tools: [needsGithub], tokenStore: tokens, authorizationProviders: [provider] });
      await tokens.set({ principal: "anonymous", userId: "ann" }, "github", { token: "narrow", scopes: ["repo"] });
      const narrow = await core.call({ tool_id: "Test.Tool", context }, meta).catch((e: unknown) => e);
      expect((narrow as WireError).details.missingRequirements?.authorization?.[0]?.url).toMatch(
        /^https:\/\/auth\.test\/github\./,
      );
      expect(started).toHaveLength(1);
      await tokens.set({ principal: "anonymous", userId: "ann" }, "github", {
        token: "wide",
        scopes: ["repo", "user", "gist"],
      });
      expect(await core.call({ tool_id: "Test.Tool", context }, meta)).toMatchObject({ success: true, value: "wide" });
      await tokens.set({ principal: "anonymous", userId: "ann" }, "github", {
        token: "expired",
        scopes: ["repo", "user"],
        expiresAt: Date.now() - 1,
      });
      await expect(core.call({ tool_id: "Test.Tool", context }, meta)).rejects.toBeInstanceOf(WireError);
    },
  );
});
