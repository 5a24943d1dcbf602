/** @otc/conformance: a black-box conformance kit for OXP 1.0 Tool Servers, as a library. */
export { main, USAGE } from "./cli.js";
export { DEMO_FIXTURE_PATH, type Fixture, type FixtureCall, fixtureFits, loadFixture } from "./fixture.js";
export { type Answer, Http } from "./http.js";
export { minimalObject, sampleValue, wrongTypeFor } from "./inputs.js";
export {
  formatResult,
  type Report,
  type RunOptions,
  runConformance,
  type ScenarioResult,
  type Status,
  scenarios,
  summaryLine,
} from "./runner.js";
export type { Context, Level, Scenario } from "./scenario.js";
