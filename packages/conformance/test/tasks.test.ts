// The tasks group against a small server: it passes where the server is right, is not applicable where the server offers no tasks or the fixture names no long-running call, and fails each deliberate bug.
import { type Fixture, type Report, type RunOptions, runConformance, scenarios } from "@otc/conformance";
import { describe, expect, it } from "vitest";
import { parseEventStream } from "../src/scenarios/tasks.js";
import { startTasksServer, type TaskBug, type TasksServerOptions } from "./tasks-server.js";

const SECRET = "tasks-server-jwt-secret-0123456789abcdef";

/** A quick call, and one that works 600 ms, a progress every 100 ms. */
const FIXTURE: Fixture = {
  name: "tasks-server",
  safeCall: { tool_id: "Calc.Add@1.0.0", input: { a: 2, b: 3 }, value: 5 },
  task: { tool_id: "Slow.Work@1.0.0", input: { ms: 600 }, value: { done_ms: 600 }, maxWaitMs: 5_000 },
};

const GROUP = scenarios.filter((scenario) => scenario.id.startsWith("tasks.")).map((scenario) => scenario.id);
/** The scenarios that need no long-running call: the checks before a run, an ended call's cancel, unknown ids. */
const WITHOUT_TASK = ["tasks.respond-async.checks", "tasks.cancel.ended", "tasks.unknown"];

async function check(server: TasksServerOptions, kit: Partial<RunOptions> = {}): Promise<Report> {
  const running = await startTasksServer(server);
  try {
    return await runConformance({ url: running.url, only: ["tasks."], fixture: FIXTURE, ...kit });
  } finally {
    await running.close();
  }
}

const withStatus = (report: Report, status: string) =>
  report.results.filter((result) => result.status === status).map((result) => result.id);

describe("the tasks group", () => {
  it("runs after the extensions group and before the hostile one, whose checks read every answer", () => {
    const ids = scenarios.map((scenario) => scenario.id);
    expect(GROUP.length).toBeGreaterThan(10);
    expect(ids.indexOf("extensions.pagination.toolkit")).toBeLessThan(ids.indexOf("tasks.respond-async"));
    expect(ids.indexOf("tasks.unknown")).toBeLessThan(ids.indexOf("answers.schemas"));
    expect(ids.indexOf("tasks.unknown")).toBeLessThan(ids.indexOf("errors.no-leaks"));
  });

  it("passes every scenario on a right server, principals kept apart with a second JWT", async () => {
    const report = await check(
      { jwtSecret: SECRET },
      { jwtSecret: SECRET, only: ["tasks.", "answers.schemas", "errors.no-leaks"] },
    );
    expect(report.results.filter((result) => result.status === "fail")).toEqual([]);
    expect(withStatus(report, "pass")).toEqual(expect.arrayContaining(GROUP));
    // Its answers (202s, statuses, cancels) pass the checks of every answer too.
    expect(withStatus(report, "pass")).toEqual([...GROUP, "errors.no-leaks", "answers.schemas"]);
  });

  it("reports principals as not applicable without a second credential", async () => {
    const report = await check({});
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([
      expect.objectContaining({
        id: "tasks.principals",
        status: "skip",
        reason: "not applicable: authentication is off: every client is the one principal 'anonymous'",
      }),
    ]);
  });

  it("reports every scenario as not applicable where discovery lists no tasks", async () => {
    const report = await check({ tasks: false });
    expect(withStatus(report, "skip")).toEqual(GROUP);
    for (const result of report.results) {
      expect(result.reason, result.id).toBe("not applicable: the server's discovery document does not list 'tasks'");
    }
  });

  it("reports those that need a long-running call as not applicable without one in the fixture", async () => {
    const { task: _task, ...withoutTask } = FIXTURE;
    const report = await check({ jwtSecret: SECRET }, { jwtSecret: SECRET, fixture: withoutTask });
    expect(withStatus(report, "pass")).toEqual(WITHOUT_TASK);
    for (const result of report.results.filter((entry) => entry.status === "skip")) {
      expect(result.reason, result.id).toMatch(/^not applicable: the fixture names no long-running call/);
    }
  });

  // Each bug, the scenario that must fail on it, and what that scenario says.
  const caught: [TaskBug, string, RegExp][] = [
    ["async-before-checks", "tasks.respond-async.checks", /ms of the wrong type, .* answered 202, not 422/],
    ["location-missing", "tasks.respond-async", /Location \(none\) is not an absolute URL/],
    ["location-unencoded", "tasks.respond-async", /does not name \/tools\/calls\/\{call_id\}/],
    ["async-without-header", "tasks.respond-async.off", /no OXP-Extensions\) answered 202/],
    ["wait-ignored", "tasks.respond-async.wait", /wait=5\) answered 202, though the call ends within the wait/],
    ["status-leaks", "tasks.principals", /another principal's GET .* answered 200/],
    ["cancel-leaks", "tasks.principals", /another principal's DELETE .* answered 200/],
    ["long-poll-ignored", "tasks.long-poll", /answered after \d+ ms with nothing new/],
    ["progress-backwards", "tasks.events", /progress \d+(\.\d+)? \(event \d+\) does not increase/],
    ["progress-backwards", "tasks.status", /the progress read went from \d+ to \d+(\.\d+)?: it only increases/],
    ["events-without-result", "tasks.events", /ended without a result event/],
    ["events-resume-ignored", "tasks.events.resume", /Last-Event-ID: \d+ sent progress event 1(, \d+)* again/],
    ["events-after-result", "tasks.events.resume", /Last-Event-ID: result sent .*result: nothing follows/],
    ["cancel-not-stopping", "tasks.cancel", /half a second after the cancel the call is running/],
    ["cancel-retryable", "tasks.cancel", /not a failure saying it was cancelled with can_retry false/],
    ["cancel-ended-changes", "tasks.cancel.ended", /answered cancelled .*, expected completed/],
    ["cancel-not-kept", "tasks.cancel", /a repeat of the cancelled call asynchronously answered 202/],
    ["join-restarts", "tasks.one-record", /answered running.*: the run started again/],
    ["unknown-410", "tasks.unknown", /answered 410/],
  ];
  it.concurrent.each(caught)("catches the bug %s in %s", async (bug, id, reason) => {
    const report = await check({ jwtSecret: SECRET, bugs: [bug] }, { jwtSecret: SECRET, only: [id] });
    const result = report.results.find((entry) => entry.id === id);
    expect(result?.status, result?.reason).toBe("fail");
    expect(result?.reason).toMatch(reason);
  });
});

describe("parseEventStream", () => {
  it.each([
    ["an event", "id: 1\nevent: progress\ndata: {}\n\n", [{ id: "1", event: "progress", data: "{}" }]],
    [
      "comments and retry left out",
      ": hi\n\nretry: 10\n\nevent: result\ndata: 1\n\n",
      [{ id: undefined, event: "result", data: "1" }],
    ],
    [
      "a message by default, data lines joined",
      "data: a\ndata:b\n\n",
      [{ id: undefined, event: "message", data: "a\nb" }],
    ],
    ["CRLF line ends", "id: 2\r\nevent: progress\r\ndata: 2\r\n\r\n", [{ id: "2", event: "progress", data: "2" }]],
    ["an unfinished event left out", "data: 1\n\ndata: 2\n", [{ id: undefined, event: "message", data: "1" }]],
  ])("reads %s", (_case, text, events) => {
    expect(parseEventStream(text)).toEqual(events);
  });
});
