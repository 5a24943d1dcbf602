/** Runs the scenarios against one server and reports: one line each, a summary, and a machine report. */
import { type ToolDefinition, unwrapInputSchema } from "@otc/types";
import { DEMO_FIXTURE_PATH, type Fixture, fixtureFits, loadFixture } from "./fixture.js";
import { Http } from "./http.js";
import { type Context, Failure, type Level, type OAuthTokens, type Scenario, Skip } from "./scenario.js";
import { authScenarios, signJwt } from "./scenarios/auth.js";
import { cacheScenarios } from "./scenarios/cache.js";
import { callScenarios } from "./scenarios/call.js";
import { connectionScenarios } from "./scenarios/connections.js";
import { coreScenarios } from "./scenarios/core.js";
import { extensionScenarios, listedExtensions } from "./scenarios/extensions.js";
import { hostileScenarios } from "./scenarios/hostile.js";
import { interopScenarios } from "./scenarios/interop.js";
import { CALL_SCOPE, cachedTokens, oauthScenarios, READ_SCOPE } from "./scenarios/oauth.js";
import { requirementScenarios } from "./scenarios/requirements.js";
import { searchScenarios } from "./scenarios/search.js";
import { taskScenarios } from "./scenarios/tasks.js";

/** Every scenario, in the order they run (the leak check last: it reads every answer before it). */
export const scenarios: readonly Scenario[] = [
  ...coreScenarios,
  ...callScenarios,
  ...requirementScenarios,
  ...authScenarios,
  ...interopScenarios,
  ...extensionScenarios,
  ...searchScenarios,
  ...cacheScenarios,
  ...taskScenarios,
  ...oauthScenarios,
  ...connectionScenarios,
  ...hostileScenarios,
];

/** Options of {@link runConformance}. */
export interface RunOptions {
  url: string;
  apiKey?: string;
  jwtSecret?: string;
  jwtAudience?: string;
  /**
   * Access tokens for the oauth group (docs/protocol.md 9.6), from the authorization server the server trusts; its
   * scenarios that send tokens are skipped without it. Without `apiKey` and `jwtSecret`, the kit's other requests
   * carry a token of `oxp:tools:read` and `oxp:tools:call`, so that a server taking access tokens alone is checked
   * whole.
   */
  oauth?: OAuthTokens;
  /**
   * A user who already holds a connection (made in a browser beforehand), for the connections group: the kit reads
   * their list for tokens and tries deleting their connections as another user. Without it the kit's own user, who
   * holds none, is used. Ignored where the kit's requests carry an access token alone (the user is its subject).
   */
  connectionsUser?: string;
  /** Run only scenarios whose id starts with one of these. */
  only?: readonly string[];
  /** A fixture, or `auto` (default): the demo's when the server has every tool it names, else none. */
  fixture?: Fixture | "auto";
  /** Scenario ids expected to fail: their failure does not fail the run, their passing does. */
  expectedFailures?: ReadonlySet<string>;
  /** Time limit of one request, in ms. Default 10,000. */
  timeoutMs?: number;
  /** Called with each result line as it is decided. */
  log?: (line: string) => void;
}

/** How one scenario ended. `xfail`: failed and listed as expected; `xpass`: listed, but passed. */
export type Status = "pass" | "fail" | "skip" | "xfail" | "xpass";

/** One scenario's result. */
export interface ScenarioResult {
  id: string;
  section: string;
  level: Level;
  title: string;
  status: Status;
  reason?: string;
  durationMs: number;
}

/** The machine report (`--json`). */
export interface Report {
  url: string;
  fixture: string;
  startedAt: string;
  durationMs: number;
  summary: { passed: number; failed: number; skipped: number; expectedFailures: number };
  results: ScenarioResult[];
}

/** The line printed for a result. */
export function formatResult(result: ScenarioResult): string {
  const label = { pass: "PASS", fail: "FAIL", skip: "SKIP", xfail: "XFAIL", xpass: "XPASS" }[result.status];
  return `${label} ${result.id} ${result.title}${result.reason ? ` -- ${result.reason}` : ""}`;
}

/** The closing line: `N passed, M failed`, with `, K skipped` when any were. */
export function summaryLine(summary: Report["summary"]): string {
  return `${summary.passed} passed, ${summary.failed} failed${summary.skipped > 0 ? `, ${summary.skipped} skipped` : ""}`;
}

/** Runs every (selected) scenario, one after the other, against the server at `options.url`. */
export async function runConformance(options: RunOptions): Promise<Report> {
  const started = Date.now();
  let jwt: { token: string; until: number } | undefined;
  const oauth = options.oauth && cachedTokens(options.oauth);
  const credentials = async (): Promise<Record<string, string>> => {
    if (options.apiKey) {
      return { "OXP-API-Key": options.apiKey };
    }
    if (options.jwtSecret) {
      if (!jwt || jwt.until < Date.now()) {
        // A sub names the kit as the caller: a server refuses a JWT without one.
        const claims: Record<string, unknown> = { sub: "oxp-conformance", exp: Math.floor(Date.now() / 1000) + 300 };
        if (options.jwtAudience) {
          claims.aud = options.jwtAudience;
        }
        jwt = { token: await signJwt(options.jwtSecret, claims), until: Date.now() + 120_000 };
      }
      return { Authorization: `Bearer ${jwt.token}` };
    }
    const token = await oauth?.token([READ_SCOPE, CALL_SCOPE]);
    if (token) {
      return { Authorization: `Bearer ${token}` };
    }
    return {};
  };
  const http = new Http(options.url, credentials, options.timeoutMs);

  let tools: ToolDefinition[] = [];
  try {
    const answer = await http.send({ path: "/tools" });
    const items = (answer.json as { items?: unknown } | undefined)?.items;
    // Read leniently (a client SHOULD accept the older wrapped form); tools.definitions judges the raw list.
    if (answer.status === 200 && Array.isArray(items)) {
      tools = (items as ToolDefinition[]).map((tool) => ({
        ...tool,
        input_schema: unwrapInputSchema(tool.input_schema),
      }));
    }
  } catch {
    // tools.list reports it; the rest run with an empty catalog.
  }
  // extensions.discovery judges the document; the others need only the ids it lists.
  const extensions = await listedExtensions(http);
  let fixture: Fixture = {};
  if (options.fixture === undefined || options.fixture === "auto") {
    const demo = await loadFixture(DEMO_FIXTURE_PATH);
    if (fixtureFits(demo, tools)) {
      fixture = demo;
    }
  } else {
    fixture = options.fixture;
  }
  http.answers.length = 0; // the leak check looks at what the scenarios send

  const ctx: Context = {
    http,
    tools,
    fixture,
    extensions,
    auth: {
      ...(options.apiKey ? { apiKey: options.apiKey } : {}),
      ...(options.jwtSecret ? { jwtSecret: options.jwtSecret } : {}),
      ...(options.jwtAudience ? { jwtAudience: options.jwtAudience } : {}),
    },
    ...(oauth ? { oauth } : {}),
    ...(options.connectionsUser ? { connectionsUser: options.connectionsUser } : {}),
  };
  const selected = scenarios.filter(
    (scenario) => !options.only?.length || options.only.some((prefix) => scenario.id.startsWith(prefix)),
  );
  const results: ScenarioResult[] = [];
  for (const scenario of selected) {
    const began = Date.now();
    let status: Status = "pass";
    let reason: string | undefined;
    try {
      await scenario.run(ctx);
    } catch (error) {
      if (error instanceof Skip) {
        status = "skip";
      } else {
        status = "fail";
      }
      reason =
        error instanceof Failure || error instanceof Skip
          ? error.message
          : `error: ${error instanceof Error ? error.message : String(error)}`;
    }
    const expected = options.expectedFailures?.has(scenario.id) ?? false;
    if (expected && status === "fail") {
      status = "xfail";
    } else if (expected && status === "pass") {
      status = "xpass";
      reason = "listed as an expected failure, but passed: take it off the list";
    }
    const result: ScenarioResult = {
      id: scenario.id,
      section: scenario.section,
      level: scenario.level,
      title: scenario.title,
      status,
      durationMs: Date.now() - began,
    };
    if (reason !== undefined) {
      result.reason = reason.replaceAll("\n", " ");
    }
    results.push(result);
    options.log?.(formatResult(result));
  }
  const count = (...statuses: Status[]) => results.filter((result) => statuses.includes(result.status)).length;
  return {
    url: options.url,
    fixture: fixture.name ?? "none",
    startedAt: new Date(started).toISOString(),
    durationMs: Date.now() - started,
    summary: {
      passed: count("pass"),
      failed: count("fail", "xpass"),
      skipped: count("skip"),
      expectedFailures: count("xfail"),
    },
    results,
  };
}
