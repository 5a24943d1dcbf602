// The official MCP conformance suite (@modelcontextprotocol/conformance, its `server` command) against `otc mcp serve --transport http`, in front of a fixture OXP server whose tools carry the suite's tool names.
import { request, ServerResponse } from "node:http";
import { mcpCommand } from "@otc/cli";
import { createClient } from "@otc/client";
import { createHandler, listen, type RunningServer } from "@otc/server";
import { until } from "@otc/test-helpers/until";
import type { CallToolResponse } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { passed, problems, runSuite, type SuiteCheck, type SuiteRun, suiteNode } from "../conformance/suite-runner.js";
import { PROGRESS_STEPS, SUITE_PROGRESS_PER_SECOND, SUITE_TOOLKIT, suiteTools } from "../conformance/suite-tools.js";
import { API_KEY } from "./harness.js";

/** The suite's version: its active scenarios (all but the pending ones) are the ones listed below. */
const SUITE_VERSION = "0.1.16";

/** The scenarios of every feature the bridge carries, in the order the suite runs them: each must pass. */
const MUST_PASS = [
  "server-initialize",
  "logging-set-level",
  "ping",
  "tools-list",
  "tools-call-simple-text",
  "tools-call-error",
  "tools-call-with-progress",
  "dns-rebinding-protection",
] as const;

const toolsOnly = (what: string) => `OXP serves tools only: it has no ${what}.`;
const oneValue = (what: string) =>
  `An OXP result is one JSON value, not content blocks: ${what} reaches MCP as JSON text and structuredContent.`;
// Over stateless HTTP the bridge could not send a server-to-client request anyway (each POST is a server of its own).
const noCallback = (what: string) =>
  `An OXP tool cannot ask its caller for anything while it runs, and OXP has no ${what} (its one request to the user, an authorization challenge, is a link).`;

/**
 * The scenarios that cannot pass, each with the reason it has no OXP counterpart and what the suite reports for
 * it here (so that each fails for that reason, not another). One that starts to pass fails this test, as a stale
 * entry fails the suite's own baseline: move it to MUST_PASS.
 */
const CANNOT_PASS: Readonly<Record<string, { why: string; reported: RegExp }>> = {
  "completion-complete": {
    why: toolsOnly("prompts or resource templates, whose arguments completion/complete completes"),
    reported: /Method not found/,
  },
  "tools-call-image": { why: oneValue("an image-shaped value"), reported: /No image content found/ },
  "tools-call-audio": { why: oneValue("an audio-shaped value"), reported: /No audio content found/ },
  "tools-call-embedded-resource": {
    why: oneValue("a resource-shaped value (and OXP has no resources)"),
    reported: /No resource content found/,
  },
  "tools-call-mixed-content": {
    why: oneValue("a list of content blocks"),
    reported: /Expected multiple content items/,
  },
  "tools-call-with-logging": {
    why: "OXP carries a call's progress and result, not log messages (a tool's logger writes to the server's log): the bridge accepts logging/setLevel and sends no notifications/message.",
    reported: /No log notifications received/,
  },
  "tools-call-sampling": { why: noCallback("LLM sampling"), reported: /Unknown tool: test_sampling/ },
  "tools-call-elicitation": { why: noCallback("form elicitation"), reported: /Unknown tool: test_elicitation/ },
  "elicitation-sep1034-defaults": {
    why: noCallback("form elicitation, so no defaults in one"),
    reported: /Unknown tool: test_elicitation_sep1034_defaults/,
  },
  "server-sse-multiple-streams": {
    why: "OXP calls need no session, and the bridge's HTTP is stateless: with no Mcp-Session-Id the scenario has nothing to open streams in, and warns.",
    reported: /ServerSSEMultipleStreamsSession/,
  },
  "elicitation-sep1330-enums": {
    why: noCallback("form elicitation, so no enums in one"),
    reported: /Unknown tool: test_elicitation_sep1330_enums/,
  },
  "resources-list": { why: toolsOnly("resources"), reported: /Method not found/ },
  "resources-read-text": { why: toolsOnly("resources"), reported: /Method not found/ },
  "resources-read-binary": { why: toolsOnly("resources"), reported: /Method not found/ },
  "resources-templates-read": { why: toolsOnly("resource templates"), reported: /Method not found/ },
  "resources-subscribe": { why: toolsOnly("resources to subscribe to"), reported: /Method not found/ },
  "resources-unsubscribe": { why: toolsOnly("resources to subscribe to"), reported: /Method not found/ },
  "prompts-list": { why: toolsOnly("prompts"), reported: /Method not found/ },
  "prompts-get-simple": { why: toolsOnly("prompts"), reported: /Method not found/ },
  "prompts-get-with-args": { why: toolsOnly("prompts"), reported: /Method not found/ },
  "prompts-get-embedded-resource": { why: toolsOnly("prompts"), reported: /Method not found/ },
  "prompts-get-with-image": { why: toolsOnly("prompts"), reported: /Method not found/ },
};

/** The `initialize` the dns-rebinding-protection scenario posts, with its Host and Origin set to `host`. */
function postInitialize(url: string, host: string): Promise<{ status: number; body: unknown }> {
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "rebinding-probe", version: "1" } },
  });
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      {
        method: "POST",
        headers: {
          host,
          origin: `http://${host}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
      },
      (res) => {
        let text = "";
        res.on("data", (chunk) => {
          text += String(chunk);
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    sent.once("error", reject);
    sent.end(body);
  });
}

/**
 * Watches what this process's HTTP responses write, each response's text on its own: the bridge (`mcpCommand`, in
 * this process) writing to the suite (another process) is seen as it happens. Until `stop` is called.
 */
function watchResponses(): { texts: () => string[]; stop: () => void } {
  const texts = new Map<ServerResponse, string>();
  const write = ServerResponse.prototype.write;
  ServerResponse.prototype.write = function (this: ServerResponse, ...args: Parameters<typeof write>) {
    const [chunk] = args;
    if (typeof chunk === "string" || chunk instanceof Uint8Array) {
      texts.set(this, (texts.get(this) ?? "") + Buffer.from(chunk).toString());
    }
    return Reflect.apply(write, this, args);
  } as typeof write;
  return {
    texts: () => [...texts.values()],
    stop: () => {
      ServerResponse.prototype.write = write;
    },
  };
}

let oxp: RunningServer;
let responses: ReturnType<typeof watchResponses> | undefined;
let stopBridge: AbortController;
let bridgeExit: Promise<number>;
let run: SuiteRun;
/** What the fixture server answered before the suite ran, called directly (not through the bridge). */
let direct: { simpleText: CallToolResponse; error: CallToolResponse; rebinding: { status: number; body: unknown } };

beforeAll(async () => {
  const node = suiteNode();
  const watched = watchResponses();
  responses = watched;
  // The bridge's notification of a progress, as written to the suite: `"progress":50` in a notifications/progress.
  const delivered = (progress: number) =>
    until(
      () =>
        watched
          .texts()
          .some((text) =>
            new RegExp(`"method":"notifications/progress","params":\\{[^\\n]*"progress":${progress}[,}]`).test(text),
          ),
      { what: `the bridge to send the suite progress ${progress}` },
    );
  oxp = await listen(
    createHandler({
      tools: suiteTools({ delivered }),
      auth: { apiKeys: [API_KEY] },
      logger: false,
      validateResponses: true,
      progressPerSecond: SUITE_PROGRESS_PER_SECOND,
    }),
    { port: 0 },
  );
  let stderr = "";
  stopBridge = new AbortController();
  bridgeExit = mcpCommand(
    ["serve", "--transport", "http", "--port", "0", "--url", oxp.url],
    {
      stdout: () => undefined,
      stderr: (text) => {
        stderr += text;
      },
      env: { OXP_API_KEY: API_KEY },
    },
    { signal: stopBridge.signal },
  );
  // Where it serves, once it listens.
  const listening = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/;
  await until(() => listening.test(stderr), { what: "otc mcp serve to say where it serves" });
  const url = listening.exec(stderr)?.[1] as string;

  const client = createClient({ baseUrl: oxp.url, apiKey: API_KEY });
  direct = {
    simpleText: await client.callTool({ tool_id: `${SUITE_TOOLKIT}.simple_text`, input: {} }),
    error: await client.callTool({ tool_id: `${SUITE_TOOLKIT}.error_handling`, input: {} }),
    rebinding: await postInitialize(url, "evil.example.com"),
  };
  run = await runSuite({ node, url, expectedFailures: Object.keys(CANNOT_PASS) });
});

afterAll(async () => {
  responses?.stop();
  stopBridge?.abort();
  await bridgeExit;
  await oxp?.close();
});

/** The checks the suite saved for `scenario`. */
const checksOf = (scenario: string): SuiteCheck[] => run.scenarios.get(scenario) ?? [];
/** The details of the check of that id. */
const detailsOf = (scenario: string, id = scenario) => checksOf(scenario).find((check) => check.id === id)?.details;

describe(`the official MCP conformance suite ${SUITE_VERSION} against otc mcp serve --transport http`, () => {
  it("runs 30 scenarios: the 8 of MUST_PASS pass, the 22 of CANNOT_PASS do not, and the suite agrees", () => {
    const ran = [...run.scenarios.keys()];
    expect(ran, run.output).toHaveLength(30);
    expect(MUST_PASS).toHaveLength(8);
    expect(Object.keys(CANNOT_PASS)).toHaveLength(22);
    expect(new Set([...MUST_PASS, ...Object.keys(CANNOT_PASS)])).toEqual(new Set(ran));
    expect(ran.filter((scenario) => passed(checksOf(scenario)))).toEqual(MUST_PASS);
    // Given CANNOT_PASS as its expected failures, the suite exits 0 only when exactly those fail.
    expect(run.output).toContain("Baseline check passed");
    expect(run.exitCode, run.output).toBe(0);
  });

  it.each(MUST_PASS)("passes %s", (scenario) => {
    expect(checksOf(scenario).length, run.output).toBeGreaterThan(0);
    expect(problems(checksOf(scenario))).toEqual([]);
    expect(passed(checksOf(scenario))).toBe(true);
  });

  it.each(Object.entries(CANNOT_PASS).map(([scenario, { why, reported }]) => [scenario, why, reported] as const))(
    "cannot pass %s: %s",
    (scenario, _why, reported) => {
      const found = problems(checksOf(scenario));
      expect(found.length, `${scenario} now passes: move it to MUST_PASS`).toBeGreaterThan(0);
      expect(found.join("\n")).toMatch(reported);
    },
  );

  it("lists the fixture's tools under the suite's names", () => {
    const details = detailsOf("tools-list") as { toolCount: number; tools: string[] };
    expect(details.toolCount).toBe(suiteTools().length);
    expect(details.tools).toEqual(
      expect.arrayContaining(["test_simple_text", "test_error_handling", "test_tool_with_progress"]),
    );
  });

  it("got the tool's value as its text, as the OXP server answered it", () => {
    expect(direct.simpleText.success).toBe(true);
    const value = direct.simpleText.success ? direct.simpleText.value : undefined;
    const { result } = detailsOf("tools-call-simple-text") as { result: { content: { type: string; text: string }[] } };
    expect(result.content).toEqual([{ type: "text", text: value }]);
  });

  it("got the tool error as isError with the message the OXP server answered", () => {
    expect(direct.error.success).toBe(false);
    const message = direct.error.success ? undefined : direct.error.error.message;
    const { result } = detailsOf("tools-call-error") as {
      result: { isError: boolean; content: { type: string; text: string }[] };
    };
    expect(result.isError).toBe(true);
    expect(result.content).toEqual([{ type: "text", text: message }]);
  });

  it("got each progress the tool reported, in order", () => {
    const details = detailsOf("tools-call-with-progress") as { progressNotifications: unknown[] };
    expect(details.progressNotifications).toEqual(PROGRESS_STEPS);
  });

  it("was refused a foreign Host as the bridge refused it before, and served its own", () => {
    expect(direct.rebinding.status).toBe(403);
    expect(detailsOf("dns-rebinding-protection", "localhost-host-rebinding-rejected")).toMatchObject({
      statusCode: direct.rebinding.status,
      body: direct.rebinding.body,
    });
    expect(detailsOf("dns-rebinding-protection", "localhost-host-valid-accepted")).toMatchObject({ statusCode: 200 });
  });
});
