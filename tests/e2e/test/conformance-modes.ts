// The auth modes the conformance kit runs the demo in, on every adapter and runtime, with the scenarios each skips.
import { type Report, type runConformance, scenarios } from "@otc/conformance";
import type { DemoOptions } from "@otc/demo/app";
import { expect } from "vitest";

export const API_KEY = "conformance-api-key-0123456789abcdef";
export const JWT_SECRET = "conformance-jwt-secret-0123456789abcdef";
export const JWT_AUDIENCE = "oxp-demo";
/** The oauth group's scenarios: the demo runs without the oauth extension, so each is skipped. */
const OAUTH = scenarios.filter((scenario) => scenario.id.startsWith("oauth.")).map((scenario) => scenario.id);
/** The connections group's scenarios: the demo configures no connection providers, so each is skipped. */
const CONNECTIONS = scenarios
  .filter((scenario) => scenario.id.startsWith("connections."))
  .map((scenario) => scenario.id);

/** One mode: the demo's options, the kit's, and the scenarios the kit skips in it (nothing to test them with). */
export interface ConformanceMode {
  server: DemoOptions;
  kit: Omit<Parameters<typeof runConformance>[0], "url">;
  /** The same options as environment strings, for a runtime's entry (fixtures/demo-fetch-entry.mjs). */
  env: Record<string, string>;
  skipped: string[];
}

export const CONFORMANCE_MODES: [string, ConformanceMode][] = [
  [
    "with authentication off",
    {
      server: {},
      kit: {},
      env: {},
      // Every client is the one principal: no second one to keep a task from.
      skipped: [
        "auth.required",
        "auth.api-key",
        "auth.jwt.valid",
        "auth.jwt.refused",
        "auth.jwt.subject",
        "tasks.principals",
        ...OAUTH,
        ...CONNECTIONS,
      ],
    },
  ],
  [
    "with an API key",
    {
      server: { auth: { apiKeys: [API_KEY] } },
      kit: { apiKey: API_KEY },
      env: { API_KEY },
      // One API key is one principal: no second one to keep a task from.
      skipped: ["auth.jwt.valid", "auth.jwt.refused", "auth.jwt.subject", "tasks.principals", ...OAUTH, ...CONNECTIONS],
    },
  ],
  [
    "with JWTs and an audience",
    {
      server: { auth: { jwt: { secret: JWT_SECRET, audiences: [JWT_AUDIENCE] } } },
      kit: { jwtSecret: JWT_SECRET, jwtAudience: JWT_AUDIENCE },
      env: { JWT_SECRET, JWT_AUDIENCE },
      skipped: [
        "auth.api-key",
        ...scenarios.filter((scenario) => scenario.id.startsWith("interop.")).map((scenario) => scenario.id),
        ...OAUTH,
        ...CONNECTIONS,
      ],
    },
  ],
];

export const ids = (report: Report, status: string) =>
  report.results.filter((result) => result.status === status).map((result) => result.id);
export const failures = (report: Report) =>
  report.results.filter((result) => result.status === "fail").map((result) => `${result.id}: ${result.reason}`);

/** Every scenario passed but the mode's pinned skips, on the demo's fixture. */
export function expectConformant(report: Report, skipped: readonly string[]): void {
  expect(failures(report)).toEqual([]);
  expect(ids(report, "skip").sort()).toEqual([...skipped].sort());
  expect(report.fixture).toBe("demo");
  expect(report.results).toHaveLength(scenarios.length);
}
