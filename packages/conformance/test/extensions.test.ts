// The extensions group against a small server: it passes where the server is right, is not applicable where the server offers no extension, and fails each deliberate bug.
import { type Fixture, main, type Report, type RunOptions, runConformance, scenarios } from "@otc/conformance";
import { describe, expect, it } from "vitest";
import { type Bug, type ExtensionsServerOptions, startExtensionsServer } from "./extensions-server.js";

/** What the annotations extension lists for three of the server's tools. */
const FIXTURE: Fixture = {
  name: "extensions-server",
  annotated: [
    { tool_id: "Calc.Add@1.0.0", annotations: { title: "Add", read_only: true, idempotent: true, open_world: false } },
    { tool_id: "Calc.Sub@1.0.0" },
    { tool_id: "Echo.Say@1.0.0", deprecation_message: "Use Mail.Send." },
  ],
};

const GROUP = scenarios.filter((scenario) => scenario.id.startsWith("extensions.")).map((scenario) => scenario.id);
/** The scenarios every server runs, extensions or not: discovery's, and OXP 1.0's answers without the header. */
const FOR_EVERY_SERVER = [
  "extensions.discovery",
  "extensions.off.list",
  "extensions.off.query",
  "extensions.off.unknown-ids",
  "extensions.off.task-paths",
];

async function check(server: ExtensionsServerOptions, kit: Partial<RunOptions> = {}): Promise<Report> {
  const running = await startExtensionsServer(server);
  try {
    return await runConformance({ url: running.url, only: ["extensions."], fixture: FIXTURE, ...kit });
  } finally {
    await running.close();
  }
}

const withStatus = (report: Report, status: string) =>
  report.results.filter((result) => result.status === status).map((result) => result.id);

describe("the extensions group", () => {
  it("runs before the hostile group, so that the checks of every answer see its requests", () => {
    const ids = scenarios.map((scenario) => scenario.id);
    expect(GROUP.length).toBeGreaterThan(10);
    expect(ids.indexOf("extensions.discovery")).toBeLessThan(ids.indexOf("answers.schemas"));
    expect(ids.indexOf("extensions.discovery")).toBeLessThan(ids.indexOf("errors.no-leaks"));
  });

  it("passes every scenario on a server that applies both extensions", async () => {
    const report = await check({});
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
    expect(report.results.map((result) => result.id)).toEqual(GROUP);
  });

  it("passes with an API key: discovery is read without it", async () => {
    const report = await check({ apiKey: "k".repeat(32) }, { apiKey: "k".repeat(32) });
    expect(withStatus(report, "pass")).toEqual(GROUP);
  });

  it("reports an extension's scenarios as not applicable where discovery lists it not, never as failures", async () => {
    for (const discovery of ["missing", "none"] as const) {
      const report = await check({ discovery });
      expect(withStatus(report, "fail"), discovery).toEqual([]);
      const skipped = report.results.filter((result) => result.status === "skip");
      expect(skipped.map((result) => result.id).sort()).toEqual(
        GROUP.filter(
          (id) => !FOR_EVERY_SERVER.includes(id) || (discovery === "missing" && id === "extensions.discovery"),
        ).sort(),
      );
      for (const result of skipped) {
        expect(result.reason, result.id).toMatch(/^not applicable: /);
      }
    }
  });

  it("lets an OXP 1.0 server pass the command, saying which scenarios do not apply", async () => {
    const running = await startExtensionsServer({ discovery: "missing" });
    try {
      const output: string[] = [];
      expect(await main(["--url", running.url, "--only", "extensions."], (text) => output.push(text))).toBe(0);
      expect(output.join("")).toMatch(/^SKIP extensions\.pagination\.pages .* -- not applicable: /m);
    } finally {
      await running.close();
    }
  });

  // Each bug, the scenario that must fail on it, and what that scenario says.
  const caught: [Bug, string, RegExp][] = [
    ["annotations-always", "extensions.off.list", /lists Calc.Add@1.0.0 with annotations/],
    ["cursor-always", "extensions.off.list", /has a next_cursor/],
    ["query-without-header", "extensions.off.query", /\?limit=1 answered another list/],
    ["unknown-id-refused", "extensions.off.unknown-ids", /answered 400/],
    ["task-paths-served", "extensions.off.task-paths", /calls\/oxp-conformance-no-such-call answered 405/],
    ["discovery-malformed", "extensions.discovery", /not a DiscoveryDocument/],
    ["extensions-without-discovery", "extensions.discovery", /is a 404, yet .* applied annotations, pagination/],
    ["negotiation-case-sensitive", "extensions.negotiation", /ANNOTATIONS .* answered OXP-Extensions: \(none\)/],
    ["applied-header-order", "extensions.applied-header", /pagination, annotations, expected annotations, pagination/],
    ["applied-header-missing", "extensions.applied-header", /answered OXP-Extensions: \(none\)/],
    ["applied-header-missing", "extensions.annotations.listed", /answered OXP-Extensions: \(none\)/],
    ["vary-missing", "extensions.vary", /Vary: \(none\)/],
    ["same-etag", "extensions.vary", /share the ETag/],
    ["read-only-destructive", "extensions.annotations.listed", /Mail.Read@1.0.0 as both read_only and destructive/],
    [
      "annotations-malformed",
      "extensions.annotations.listed",
      /Calc.Sub@1.0.0's annotations: the body is not a ToolAnnotations/,
    ],
    ["annotations-change-definition", "extensions.annotations.listed", /lists Echo.Say@1.0.0 otherwise than the list/],
    ["annotations-wrong", "extensions.annotations.fixture", /Calc.Add@1.0.0 is listed with annotations/],
    ["page-drops-tool", "extensions.pagination.pages", /leaves out Mail.Read@1.0.0/],
    ["pages-over-limit", "extensions.pagination.pages", /has 3 tools, past its limit/],
    ["last-page-cursor", "extensions.pagination.pages", /go on past \d+ pages/],
    ["limit-unchecked", "extensions.pagination.limit", /limit=0 .* answered 200, not 400/],
    [
      "cursor-unchecked",
      "extensions.pagination.cursor",
      /cursor=oxp-conformance-not-a-cursor .* answered 200, not 400/,
    ],
    ["cursor-toolkit-unbound", "extensions.pagination.cursor", /toolkit=Calc&cursor=.* answered 200, not 400/],
    ["toolkit-loose", "extensions.pagination.toolkit", /toolkit=cALC .* has tools the list has not/],
  ];
  it.each(caught)("catches the bug %s in %s", async (bug, id, reason) => {
    const report = await check({ discovery: bug === "extensions-without-discovery" ? "missing" : "both", bugs: [bug] });
    const result = report.results.find((entry) => entry.id === id);
    expect(result?.status, result?.reason).toBe("fail");
    expect(result?.reason).toMatch(reason);
  });

  it("catches a discovery document that needs credentials", async () => {
    const report = await check({ apiKey: "k".repeat(32), bugs: ["discovery-guarded"] }, { apiKey: "k".repeat(32) });
    expect(report.results.find((entry) => entry.id === "extensions.discovery")).toMatchObject({
      status: "fail",
      reason: expect.stringMatching(/needs authentication/),
    });
  });
});
