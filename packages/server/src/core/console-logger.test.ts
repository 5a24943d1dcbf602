// consoleLogger writes pino's lines on the console: level numbers, time, service, bindings, fields, msg; credentials redacted.
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { consoleLogger, REDACTED, REDACTED_PATHS } from "./console-logger.js";
import { ServerConfigError } from "./errors.js";
import { type CoreLogger, OxpCore } from "./oxp-core.js";

let log: MockInstance<typeof console.log>;
let error: MockInstance<typeof console.error>;

beforeEach(() => {
  log = vi.spyOn(console, "log").mockImplementation(() => {});
  error = vi.spyOn(console, "error").mockImplementation(() => {});
});
afterEach(() => vi.restoreAllMocks());

/** Every line written so far, parsed, with the stream it went to. */
const lines = () => [
  ...log.mock.calls.map(([line]) => ({ stream: "log", ...JSON.parse(String(line)) })),
  ...error.mock.calls.map(([line]) => ({ stream: "error", ...JSON.parse(String(line)) })),
];

describe("consoleLogger", () => {
  it("writes one JSON object per line, as pino does: level, time, service, bindings, fields, msg", () => {
    const before = Date.now();
    consoleLogger().child({ request_id: "r1" }).info({ tool_id: "Math.Add@1.0.0", n: 1 }, "tool call");
    expect(log).toHaveBeenCalledTimes(1);
    const line = String(log.mock.calls[0]?.[0]);
    expect(line).not.toContain("\n");
    const parsed = JSON.parse(line);
    expect(Object.keys(parsed)).toEqual(["level", "time", "service", "request_id", "tool_id", "n", "msg"]);
    expect(parsed).toMatchObject({ level: 30, service: "oxp-server", request_id: "r1", msg: "tool call" });
    expect(parsed.time).toBeGreaterThanOrEqual(before);
  });

  it.each<[keyof CoreLogger & ("debug" | "info" | "warn" | "error"), number, string]>([
    ["debug", 20, "log"],
    ["info", 30, "log"],
    ["warn", 40, "error"],
    ["error", 50, "error"],
  ])("writes %s as level %i on console.%s", (method, level, stream) => {
    consoleLogger({ level: "debug" })[method]({}, "m");
    expect(lines()).toEqual([expect.objectContaining({ stream, level, msg: "m" })]);
  });

  it("writes nothing below its level, and says so through isLevelEnabled", () => {
    const logger = consoleLogger({ level: "warn" });
    logger.debug({}, "no");
    logger.info({}, "no");
    logger.warn({}, "yes");
    expect(lines().map((line) => line.msg)).toEqual(["yes"]);
    expect(logger.isLevelEnabled?.("info")).toBe(false);
    expect(logger.isLevelEnabled?.("warn")).toBe(true);
    expect(logger.child({ a: 1 }).isLevelEnabled?.("info")).toBe(false);
    expect(consoleLogger().isLevelEnabled?.("info")).toBe(true);
    const silent = consoleLogger({ level: "silent" });
    silent.error({}, "no");
    expect(silent.isLevelEnabled?.("error")).toBe(false);
    expect(lines()).toHaveLength(1);
  });

  it("refuses an unknown level", () => {
    expect(() => consoleLogger({ level: "verbose" })).toThrow(ServerConfigError);
  });

  it("leaves msg out when there is none, and merges child bindings, the child's own last", () => {
    consoleLogger().child({ a: 1, b: 1 }).child({ b: 2 }).info({ c: 3 });
    expect(lines()).toEqual([
      { stream: "log", level: 30, time: expect.any(Number), service: "oxp-server", a: 1, b: 2, c: 3 },
    ]);
  });

  verifies.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    [
      "an Authorization header",
      { headers: { authorization: "Bearer x", host: "h" } },
      { headers: { authorization: REDACTED, host: "h" } },
    ],
    [
      "an OXP-API-Key header",
      { req: { headers: { "oxp-api-key": "k" } } },
      { req: { headers: { "oxp-api-key": REDACTED } } },
    ],
    [
      "a call's secrets and tokens",
      { body: { request: { context: { secrets: [{ id: "S", value: "v" }], authorization: [], user_id: "u" } } } },
      { body: { request: { context: { secrets: REDACTED, authorization: REDACTED, user_id: "u" } } } },
    ],
    [
      "top-level credentials",
      { secrets: { S: "v" }, tokens: { p: "t" }, token: "t", apiKey: "k", jwtSecret: "s" },
      {
        secrets: REDACTED,
        tokens: REDACTED,
        token: REDACTED,
        apiKey: REDACTED,
        jwtSecret: REDACTED,
      },
    ],
  ])(
    "requirements.secrets-never-leak",
    "redacts %s, and leaves the caller's object as it was",
    (_case, fields, written) => {
      const before = structuredClone(fields);
      consoleLogger().info(fields, "x");
      expect(lines()[0]).toMatchObject(written);
      expect(fields).toEqual(before);
    },
  );

  it("redacts in child bindings too", () => {
    consoleLogger().child({ token: "t" }).warn({}, "x");
    expect(lines()[0]).toMatchObject({ token: REDACTED });
    expect(JSON.stringify(lines())).not.toContain('"t"');
  });

  it("keeps a path's siblings and the values that are not objects along it", () => {
    consoleLogger().info({ context: "text", headers: null, request: { context: { locale: "fr" } } });
    expect(lines()[0]).toMatchObject({ context: "text", headers: null, request: { context: { locale: "fr" } } });
  });

  it("covers every path of the one list", () => {
    // Each path, given a value, comes out redacted: a path the parser misreads would leak.
    for (const path of REDACTED_PATHS) {
      const segments = [...path.matchAll(/\.?([^.[\]]+)|\[["']([^"']*)["']\]/g)].map(([, a, b]) => a ?? b) as string[];
      const fields = segments.reduceRight<unknown>((value, segment) => ({ [segment]: value }), "secret-value");
      consoleLogger().info(fields as Record<string, unknown>);
    }
    expect(log).toHaveBeenCalledTimes(REDACTED_PATHS.length);
    expect(JSON.stringify(lines())).not.toContain("secret-value");
  });

  it("writes an Error as pino's err serializer does, and never throws on a cycle or a BigInt", () => {
    const cyclic: Record<string, unknown> = { n: 10n };
    cyclic.self = cyclic;
    const logger = consoleLogger();
    logger.error({ err: new TypeError("boom") }, "failed");
    expect(() => logger.info({ cyclic }, "odd")).not.toThrow();
    expect(lines()).toEqual([
      expect.objectContaining({ msg: "odd", cyclic: { n: "10", self: "[Circular]" } }),
      expect.objectContaining({ level: 50, err: { type: "TypeError", message: "boom", stack: expect.any(String) } }),
    ]);
  });

  it("serves as the core's logger: one line per call", async () => {
    const core = new OxpCore({
      logger: consoleLogger(),
      tools: [
        {
          toolkit: "Test",
          name: "Tool",
          version: "1.0.0",
          description: "A tool for tests.",
          requirements: undefined,
          timeoutMs: undefined,
          inputSchema: {},
          outputSchema: {},
          run: () => 1,
        },
      ],
    });
    await core.call({ tool_id: "Test.Tool", call_id: "c1" }, { principal: "anonymous", baseUrl: "http://x" });
    expect(lines()).toEqual([
      expect.objectContaining({
        level: 30,
        tool_id: "Test.Tool@1.0.0",
        call_id: "c1",
        outcome: "success",
        msg: "tool call",
      }),
    ]);
  });
});
