// The logger: credentials censored wherever they could sit, and the call line written by hand exactly as pino would.
import { execFile } from "node:child_process";
import { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { testTools } from "../../test/tools.js";
import { type CallLogLine, type CoreLogger, OxpCore } from "../core/oxp-core.js";
import { callLineSink, createLogger } from "./logger.js";

/** The call lines a core writes through `logger` (and its call-line sink, as the adapters give it) for one call. */
async function callLines(logger: CoreLogger, lines: string[]) {
  const sink = callLineSink(logger);
  const core = new OxpCore({ tools: testTools(), logger, ...(sink ? { callLine: sink } : {}) });
  await core.call(
    { tool_id: "Calculator.Add", input: { a: 1, b: 2 } },
    { principal: "anonymous", baseUrl: "http://x" },
  );
  return lines.map((line) => JSON.parse(line)).filter((line) => line.msg === "tool call");
}

/** A destination that keeps what it is given. */
function capture() {
  const lines: string[] = [];
  let partial = "";
  const destination = new Writable({
    write(chunk, _encoding, done) {
      const parts = (partial + chunk).split("\n");
      partial = parts.pop() ?? "";
      lines.push(...parts);
      done();
    },
  });
  return { destination, lines };
}

describe("createLogger", () => {
  it("censors secrets, tokens and credentials at every path the server names", () => {
    let out = "";
    const destination = new Writable({
      write(chunk, _encoding, done) {
        out += chunk;
        done();
      },
    });
    const logger = createLogger({ destination });
    const secret = [{ id: "K", value: "secret-value-1" }];
    const token = [{ id: "google", token: "token-value-2" }];
    logger.info({ context: { secrets: secret, authorization: token } }, "a");
    logger.info({ request: { context: { secrets: secret, authorization: token } } }, "b");
    logger.info({ body: { context: { secrets: secret }, request: { context: { authorization: token } } } }, "c");
    logger.info({ headers: { authorization: "Bearer jwt-value-3", "oxp-api-key": "key-value-4" } }, "d");
    logger.child({ tool_id: "T" }).info({ secrets: { K: "secret-value-5" }, tokens: { g: "token-value-6" } }, "e");
    expect(out.split("\n").filter(Boolean)).toHaveLength(5);
    expect(out).not.toMatch(/secret-value|token-value|jwt-value|key-value/);
    expect(out).toContain("[redacted]");
  });

  it("writes a call's line by hand exactly as pino's info would, and honours the level", () => {
    const { destination, lines } = capture();
    const logger = createLogger({ destination, level: "info" });
    const sink = callLineSink(logger);
    expect(sink).toBeDefined();
    const write = (line: CallLogLine) => sink?.write(line);
    const tricky = 'a"b\\c\nd\u0001e\u2028f\ud800g';
    const cases: CallLogLine[] = [
      {
        tool_id: "Calculator.Add@1.0.0",
        requested_tool_id: "Calculator.Add",
        call_id: "35478b2f-03d0-437c-9608-52a69cec9a3b",
        trace_id: undefined,
        outcome: "success",
        duration_ms: 0.123,
      },
      {
        tool_id: "T.X@2.0.0",
        requested_tool_id: tricky,
        call_id: tricky,
        trace_id: tricky,
        outcome: "timeout",
        duration_ms: 30_000,
      },
      {
        tool_id: tricky,
        call_id: undefined,
        trace_id: "4bf92f3577b34da6a3ce929d0e0e4736",
        outcome: "rejected",
        status: 422,
        reason: "Some input parameters are invalid",
        duration_ms: 0.01,
      },
    ];
    for (const line of cases) {
      write(line);
      logger.info(line, "tool call");
    }
    expect(lines).toHaveLength(6);
    for (let i = 0; i < lines.length; i += 2) {
      const [byHand, byPino] = [JSON.parse(lines[i] as string), JSON.parse(lines[i + 1] as string)];
      expect(typeof byHand.time).toBe("number");
      expect({ ...byHand, time: 0 }).toEqual({ ...byPino, time: 0 });
      expect(Object.keys(byHand)).toEqual(Object.keys(byPino));
    }
    logger.level = "warn";
    write(cases[0] as CallLogLine);
    expect(lines).toHaveLength(6);
  });

  it("keeps a child logger's bindings and level on the call line", async () => {
    const { destination, lines } = capture();
    const child = createLogger({ destination, level: "warn" }).child({ instance: "eu-1" }, { level: "info" });
    const [line] = await callLines(child as unknown as CoreLogger, lines);
    expect(line).toMatchObject({ instance: "eu-1", tool_id: "Calculator.Add@1.0.0", outcome: "success" });
  });

  it("lets pino route the call line by level through a multistream", async () => {
    const info = capture();
    const errors = capture();
    const logger = createLogger({
      destination: pino.multistream([
        { level: "info", stream: info.destination },
        { level: "error", stream: errors.destination },
      ]),
    });
    logger.error("an error first");
    expect(await callLines(logger as unknown as CoreLogger, info.lines)).toHaveLength(1);
    expect(errors.lines.filter((line) => line.includes("tool call"))).toHaveLength(0);
  });

  it("calls back from flush on standard output", async () => {
    const logger = createLogger({ level: "silent" });
    await new Promise<void>((resolve, reject) => {
      // real time: a bound on a callback that must come; the flush itself is not timed.
      const timer = setTimeout(() => reject(new Error("flush did not call back")), 1_000);
      logger.flush(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  });

  it("writes call lines to standard output formatted at flush, in their place among pino's, at the level of the moment", async () => {
    // Standard output is batched, and call lines wait there unformatted: a child process shows what reaches it.
    const logger = JSON.stringify(fileURLToPath(new URL("./logger.ts", import.meta.url)));
    const program = `
      const { callLineSink, createLogger } = await import(${logger});
      const log = createLogger({ level: "info" });
      const write = (line) => callLineSink(log).write(line);
      const line = (n) => ({ tool_id: "T.X@1.0.0", requested_tool_id: 'a"b', call_id: "c-" + n, trace_id: undefined, outcome: "success", duration_ms: n });
      log.info("one");
      write(line(1));
      log.info(line(2), "tool call");
      log.child({}).level = "error";
      write(line(3));
      log.level = "warn";
      write(line(4));
      log.error("two");
      log.level = "info";
      write(line(5));
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "--input-type=module", "-e", program],
      {
        cwd: fileURLToPath(new URL("../..", import.meta.url)),
      },
    );
    const lines = stdout
      .trim()
      .split("\n")
      .map((text) => JSON.parse(text));
    expect(lines.map((line) => line.call_id ?? line.msg)).toEqual(["one", "c-1", "c-2", "c-3", "two", "c-5"]);
    const [byHand, byPino] = [lines[1], lines[2]];
    expect(Object.keys(byHand)).toEqual(Object.keys(byPino));
    expect({ ...byHand, time: 0, call_id: "", duration_ms: 0 }).toEqual({
      ...byPino,
      time: 0,
      call_id: "",
      duration_ms: 0,
    });
  });
});

describe("the adapters' call lines", () => {
  it("go through the call-line sink of the logger the node:http and Express adapters are given", async () => {
    const { createHandler } = await import("./node-handler.js");
    const { createServer } = await import("./create-server.js");
    const { listen } = await import("./listen.js");
    for (const make of [createHandler, createServer]) {
      const { destination, lines } = capture();
      const logger = createLogger({ destination });
      const sink = callLineSink(logger);
      if (!sink) {
        throw new Error("createLogger made no call-line sink");
      }
      const written: CallLogLine[] = [];
      const write = sink.write.bind(sink);
      sink.write = (line) => {
        written.push(line);
        write(line);
      };
      const running = await listen(make({ tools: testTools(), logger }), { port: 0, host: "127.0.0.1" });
      try {
        const response = await fetch(`${running.url}/tools/call`, {
          method: "POST",
          headers: { "Content-Type": "application/json", "OXP-Version": "1.0" },
          body: JSON.stringify({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } }),
        });
        expect(response.status).toBe(200);
      } finally {
        await running.close();
      }
      expect(written.map((line) => line.outcome)).toEqual(["success"]);
      expect(lines.map((line) => JSON.parse(line)).filter((line) => line.msg === "tool call")).toHaveLength(1);
    }
  });
});
