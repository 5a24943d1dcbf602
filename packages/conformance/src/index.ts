/**
 * @otc/conformance: a black-box conformance kit for OXP 1.0 Tool Servers, as a library. Every export
 * here is public API; nothing else in src is.
 */
export { main } from "./cli.js";
export {
  DEMO_FIXTURE_PATH,
  type Fixture,
  type FixtureAnnotated,
  type FixtureCall,
  loadFixture,
} from "./fixture.js";
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
export type { Context, Level, OAuthTokens, Scenario } from "./scenario.js";
