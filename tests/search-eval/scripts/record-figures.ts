/**
 * Writes fixtures/recorded.json: every ranker's figures now, rounded down to 3 decimals, the floor that
 * test/eval.test.ts holds each ranker to. Run by hand after a change that moves them (a better ranker, new labels):
 *
 *   npx tsx --tsconfig tsconfig.sources.json tests/search-eval/scripts/record-figures.ts
 *
 * (`--tsconfig tsconfig.sources.json` reads `ours` from @otc/server's sources, as the test does; without it, from its build.)
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { definitionsOf, evaluate, floor3, loadCatalog, loadQueries, QUERY_KINDS, RANKERS } from "../src/eval.js";

const definitions = definitionsOf(loadCatalog());
const queries = loadQueries();
const recorded: Record<string, unknown> = {};
for (const { name, ranker } of RANKERS) {
  const figures = evaluate(ranker, definitions, queries);
  recorded[name] = {
    recallAt1: floor3(figures.recallAt1),
    recallAt5: floor3(figures.recallAt5),
    mrr: floor3(figures.mrr),
    recallAt5ByKind: Object.fromEntries(QUERY_KINDS.map((kind) => [kind, floor3(figures.byKind[kind].recallAt5)])),
  };
}
const path = fileURLToPath(new URL("../fixtures/recorded.json", import.meta.url));
const about =
  "Each ranker's figures over fixtures/queries.json when last recorded (scripts/record-figures.ts), rounded down to 3 decimals: test/eval.test.ts fails when a ranker falls below them.";
writeFileSync(path, `${JSON.stringify({ about, rankers: recorded }, null, 2)}\n`);
console.log(`wrote ${path}: ${Object.keys(recorded).join(", ")}`);
