/** Which tool exercises what: the fixture scenarios that need particular tools read. */
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseToolId, type ToolAnnotations, type ToolDefinition } from "@otc/types";

/** A call the fixture names. */
export interface FixtureCall {
  tool_id: string;
  input: Record<string, unknown>;
}

/** Every key is optional: scenarios whose key is missing are skipped. */
export interface Fixture {
  /** Where the fixture came from, for the report. */
  name?: string;
  /** A call without side effects that succeeds, and its value. */
  safeCall?: FixtureCall & { value: unknown };
  /** A tool with several versions: a safe input and the value each version returns for it. */
  versions?: { tool: string; input: Record<string, unknown>; values: Record<string, unknown> };
  /** A call the tool fails on purpose, and the error fields it must carry. */
  toolError?: FixtureCall & { error: Record<string, unknown> };
  /** A call whose tool has output_schema null. */
  nullOutput?: FixtureCall;
  /** A call whose value shows whether the tool ran again (e.g. a counter). */
  idempotent?: FixtureCall;
  /** A call that runs past the server's time limit; `maxWaitMs` bounds the wait. */
  timeout?: FixtureCall & { maxWaitMs: number };
  /** A tool that requires user_id. */
  userId?: FixtureCall;
  /** A tool that requires a secret, and the secret's id. */
  secret?: FixtureCall & { secret_id: string };
  /** A tool that requires an authorization the server can start a challenge for. */
  authorization?: FixtureCall & { provider: string; user_id: string };
  /**
   * Tools (exact ids) and what the annotations extension lists for each: its `annotations` and
   * `deprecation_message`, a field left out where the tool has none.
   */
  annotated?: FixtureAnnotated[];
  /**
   * A call that runs about a second and reports its progress as it goes, several times (the tasks extension), and
   * its value when known; `maxWaitMs` bounds how long the kit waits for it to end.
   */
  task?: FixtureCall & { value?: unknown; maxWaitMs: number };
}

/** A tool the fixture knows the annotations of. */
export interface FixtureAnnotated {
  tool_id: string;
  annotations?: ToolAnnotations;
  deprecation_message?: string;
}

/** The demo's fixture, shipped with the kit. */
export const DEMO_FIXTURE_PATH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/demo.json");

/** Reads a fixture file. */
export async function loadFixture(file: string): Promise<Fixture> {
  const fixture = JSON.parse(await readFile(file, "utf8")) as Fixture;
  return { ...fixture, name: fixture.name ?? path.basename(file) };
}

/** The tool ids a fixture names (for versions, every version it lists). */
export function fixtureToolIds(fixture: Fixture): string[] {
  const ids = [
    fixture.safeCall,
    fixture.toolError,
    fixture.nullOutput,
    fixture.idempotent,
    fixture.timeout,
    fixture.userId,
    fixture.secret,
    fixture.authorization,
    fixture.task,
  ]
    .filter((entry) => entry !== undefined)
    .map((entry) => entry.tool_id);
  ids.push(...(fixture.annotated ?? []).map((entry) => entry.tool_id));
  if (fixture.versions) {
    for (const version of Object.keys(fixture.versions.values)) {
      ids.push(`${fixture.versions.tool}@${version}`);
    }
  }
  return ids;
}

/** True when every tool the fixture names is in the catalog (an id without a version matches any version). */
export function fixtureFits(fixture: Fixture, tools: readonly ToolDefinition[]): boolean {
  return fixtureToolIds(fixture).every((id) => {
    const anyVersion = parseToolId(id)?.kind === "latest";
    return tools.some((tool) => tool.id === id || (anyVersion && parseToolId(tool.id)?.qualifiedName === id));
  });
}
