// The conformance kit against the demo in every auth mode (all pass), and against a deliberately broken server.
import { once } from "node:events";
import { readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { main, type Report, runConformance } from "@otc/conformance";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONFORMANCE_MODES, expectConformant, ids } from "./conformance-modes.js";
import { type Demo, startDemo } from "./demo.js";

describe.each(["express", "node", "fetch"] as const)("the demo on the %s adapter passes every scenario", (adapter) => {
  it.each(CONFORMANCE_MODES)("%s", async (_mode, { server: serverOptions, kit: kitOptions, skipped }) => {
    const demo: Demo = await startDemo({ defaultTimeoutMs: 500, ...serverOptions }, adapter);
    try {
      const lines: string[] = [];
      const started = Date.now();
      const report = await runConformance({ url: demo.url, ...kitOptions, log: (line) => lines.push(line) });
      expectConformant(report, skipped);
      expect(lines.every((line) => /^(PASS|SKIP) [a-z0-9.-]+ /.test(line))).toBe(true);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      await demo.close();
    }
  });
});

/** An OXP server with deliberate bugs, each one a rule the kit must catch. */
async function startBrokenServer(): Promise<{ url: string; server: Server }> {
  const catalog = {
    items: [
      {
        id: "Calculator.Add@1.0.0",
        name: "Calculator_Add",
        description: "Adds.",
        version: "1.0.0",
        // Bug: the older wrapped form, and no descriptions.
        input_schema: {
          parameters: {
            type: "object",
            properties: { a: { type: "number" }, b: { type: "number" } },
            required: ["a", "b"],
          },
        },
        output_schema: { type: "number" },
      },
    ],
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://x");
      // Bug: no OXP-Version header anywhere.
      if (url.pathname === "/health") {
        return res.writeHead(200, { "content-type": "text/plain" }).end("OK"); // Bug: not JSON
      }
      if (url.pathname === "/tools" && req.method === "GET") {
        return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(catalog));
      }
      if (url.pathname === "/tools/call" && req.method === "POST") {
        let body: { tool_id?: string; input?: { a?: unknown; b?: unknown } };
        try {
          body = JSON.parse(Buffer.concat(chunks).toString());
        } catch (error) {
          // Bug: a 500 with a stack trace.
          return res.writeHead(500, { "content-type": "text/plain" }).end(String((error as Error).stack));
        }
        if (body.tool_id !== "Calculator.Add" && body.tool_id !== "Calculator.Add@1.0.0") {
          return res
            .writeHead(400, { "content-type": "application/json" })
            .end(JSON.stringify({ message: "Unknown tool" }));
        }
        if (typeof body.input?.a !== "number" || typeof body.input?.b !== "number") {
          // Bug: 400 instead of 422 for invalid input.
          return res
            .writeHead(400, { "content-type": "application/json" })
            .end(JSON.stringify({ message: "bad input" }));
        }
        return res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ call_id: "fixed", success: true, value: body.input.a + body.input.b })); // Bug: fixed call_id, no duration
      }
      // Bug: an HTML 404 for everything else (and no 405).
      return res.writeHead(404, { "content-type": "text/html" }).end("<h1>Not Found</h1>");
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("a deliberately broken server", () => {
  let broken: { url: string; server: Server };
  let report: Report;
  const output: string[] = [];
  let code: number;
  const reportFile = path.join(os.tmpdir(), `oxp-conformance-${process.pid}.json`);

  beforeAll(async () => {
    broken = await startBrokenServer();
    code = await main(["--url", broken.url, "--json", reportFile], (text) => output.push(text));
    report = JSON.parse(await readFile(reportFile, "utf8")) as Report;
  });
  afterAll(async () => {
    broken.server.close();
    await rm(reportFile, { force: true });
  });

  it("reports each of its bugs as a failure of the right scenario", () => {
    const failed = ids(report, "fail");
    for (const id of [
      "health.ok",
      "headers.oxp-version",
      "errors.not-found",
      "errors.method-not-allowed",
      "tools.list",
      "tools.definitions",
      "version.header.unsupported",
      "call.input.invalid",
      "call.input.missing",
      "call.version.unknown",
      "hostile.malformed-json",
      "hostile.content-type",
      "errors.no-leaks",
      "answers.schemas",
    ]) {
      expect(failed, id).toContain(id);
    }
    expect(ids(report, "pass")).toContain("health.no-auth");
    expect(ids(report, "pass")).toContain("call.unknown-tool");
  });

  it("skips what needs a fixture it does not fit, and exits 1", () => {
    expect(report.fixture).toBe("none");
    expect(ids(report, "skip")).toContain("call.success");
    expect(code).toBe(1);
    const text = output.join("");
    expect(text).toMatch(/^FAIL health\.ok .* -- /m);
    expect(text.trimEnd().split("\n").at(-1)).toMatch(/^\d+ passed, [1-9]\d* failed, \d+ skipped$/);
  });

  it("passes the run when every failure is expected, and fails it when a listed scenario passes", async () => {
    const list = path.join(os.tmpdir(), `oxp-expected-${process.pid}.txt`);
    try {
      await writeFile(list, `# known bugs\n${ids(report, "fail").join("\n")}\n`);
      const quiet: string[] = [];
      expect(await main(["--url", broken.url, "--expected-failures", list], (text) => quiet.push(text))).toBe(0);
      expect(quiet.join("")).toMatch(/^XFAIL health\.ok /m);
      await writeFile(list, `${ids(report, "fail").join("\n")}\nhealth.no-auth\n`);
      const stale: string[] = [];
      expect(await main(["--url", broken.url, "--expected-failures", list], (text) => stale.push(text))).toBe(1);
      expect(stale.join("")).toMatch(/^XPASS health\.no-auth .* take it off the list/m);
    } finally {
      await rm(list, { force: true });
    }
  });

  it("runs only the scenarios asked for with --only", async () => {
    const lines: string[] = [];
    await main(["--url", broken.url, "--only", "health.,tools."], (text) => lines.push(text));
    const ran = lines
      .join("")
      .split("\n")
      .filter((line) => /^(PASS|FAIL|SKIP) /.test(line));
    expect(ran.map((line) => line.split(" ")[1])).toEqual([
      "health.ok",
      "health.no-auth",
      "tools.list",
      "tools.query-ignored",
      "tools.definitions",
    ]);
  });
});
