// Sums the vitest totals of every package in a test log (standard input) into one closing line,
// "Tests: N passed, M failed", which CI reads; an argument names the run after it ("Tests: ... (Node v24.21.0)"),
// as CI runs the suite once per Node version. Exits 1 when the log shows no test at all.
import { text } from "node:stream/consumers";
import { stripVTControlCharacters } from "node:util";

const run = process.argv[2] ? ` (${process.argv[2]})` : "";
const log = stripVTControlCharacters(await text(process.stdin));
let passed = 0;
let failed = 0;
let suites = 0;
for (const [, counts] of log.matchAll(/^(?:\S+: )?\s*Tests\s+(.+?)\s+\(\d+\)\s*$/gm)) {
  suites++;
  passed += Number(/(\d+) passed/.exec(counts)?.[1] ?? 0);
  failed += Number(/(\d+) failed/.exec(counts)?.[1] ?? 0);
}
console.log(`${suites} test suites${run}`);
console.log(`Tests: ${passed} passed, ${failed} failed${run}`);
process.exitCode = suites === 0 || passed === 0 ? 1 : 0;
