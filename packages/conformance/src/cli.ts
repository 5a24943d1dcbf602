/** The `oxp-conformance` command. */
import { readFile, writeFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { loadFixture } from "./fixture.js";
import { runConformance, summaryLine } from "./runner.js";
import { fixedTokens } from "./scenarios/oauth.js";

export const USAGE = `oxp-conformance: check an OXP Tool Server against the protocol, over HTTP only

Usage: oxp-conformance --url <base> [--api-key K] [--jwt-secret S] [--jwt-audience A]
                       [--oauth-token-read T] [--oauth-token-call T] [--oauth-token-all T]
                       [--connections-user U]
                       [--only PREFIX[,PREFIX...]] [--fixture file.json] [--json report.json]
                       [--expected-failures file] [--timeout-ms N]

Scenarios that need particular tools read a fixture (which tool exercises what). Without
--fixture, the demo's fixture is used when the server has every tool it names; otherwise those
scenarios are skipped. The oauth group sends OAuth access tokens for the server, from its
authorization server: --oauth-token-read with the scope oxp:tools:read alone, --oauth-token-call
with oxp:tools:call alone, --oauth-token-all with both and every scope the server's metadata
lists; a scenario whose token is not given is skipped. Without --api-key and --jwt-secret, the
other requests carry the --oauth-token-all one. --connections-user names a user who already
holds a connection: the connections group reads their list and deletes their connections as
another user (which must fail). --expected-failures names scenario ids, one per
line (# comments): their failures do not fail the run, and their passing does. Exit code: 0 when
nothing failed unexpectedly, 1 otherwise, 2 for a usage error.
`;

/** Runs the command; resolves with its exit code. */
export async function main(
  argv: readonly string[],
  write: (text: string) => void = (text) => process.stdout.write(text),
): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        url: { type: "string" },
        "api-key": { type: "string" },
        "jwt-secret": { type: "string" },
        "jwt-audience": { type: "string" },
        "oauth-token-read": { type: "string" },
        "oauth-token-call": { type: "string" },
        "oauth-token-all": { type: "string" },
        "connections-user": { type: "string" },
        only: { type: "string" },
        fixture: { type: "string" },
        json: { type: "string" },
        "expected-failures": { type: "string" },
        "timeout-ms": { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    write(`oxp-conformance: ${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    write(USAGE);
    return 0;
  }
  const url = values.url as string | undefined;
  if (!url || !/^https?:\/\//.test(url)) {
    write(`oxp-conformance: --url http(s)://... is required\n\n${USAGE}`);
    return 2;
  }
  let expectedFailures: Set<string> | undefined;
  if (values["expected-failures"]) {
    const text = await readFile(values["expected-failures"] as string, "utf8");
    expectedFailures = new Set(
      text
        .split("\n")
        .map((line) => line.replace(/#.*/, "").trim())
        .filter(Boolean),
    );
  }
  const tokens = {
    read: values["oauth-token-read"] as string | undefined,
    call: values["oauth-token-call"] as string | undefined,
    all: values["oauth-token-all"] as string | undefined,
  };
  const report = await runConformance({
    url,
    ...(values["api-key"] ? { apiKey: values["api-key"] as string } : {}),
    ...(values["jwt-secret"] ? { jwtSecret: values["jwt-secret"] as string } : {}),
    ...(values["jwt-audience"] ? { jwtAudience: values["jwt-audience"] as string } : {}),
    ...(tokens.read || tokens.call || tokens.all ? { oauth: fixedTokens(tokens) } : {}),
    ...(values["connections-user"] ? { connectionsUser: values["connections-user"] as string } : {}),
    ...(values.only ? { only: (values.only as string).split(",").map((prefix) => prefix.trim()) } : {}),
    ...(values.fixture ? { fixture: await loadFixture(values.fixture as string) } : {}),
    ...(expectedFailures ? { expectedFailures } : {}),
    ...(values["timeout-ms"] ? { timeoutMs: Number(values["timeout-ms"]) } : {}),
    log: (line) => write(`${line}\n`),
  });
  if (values.json) {
    await writeFile(values.json as string, `${JSON.stringify(report, null, 2)}\n`);
  }
  if (report.summary.expectedFailures > 0) {
    write(`${report.summary.expectedFailures} failed as expected (listed in --expected-failures)\n`);
  }
  write(`fixture: ${report.fixture}; ${(report.durationMs / 1000).toFixed(1)} s\n`);
  write(`${summaryLine(report.summary)}\n`);
  return report.summary.failed > 0 ? 1 : 0;
}
