// Sums the vitest totals of every package in a test log (standard input) into one closing line,
// "Tests: N passed, M failed", which CI reads; an argument names the run after it ("Tests: ... (Node v24.21.0)"),
// as CI runs the suite once per Node version. Exits 1 when the log shows no test at all.
// Above that line it repeats each failed test's name and first error line, and the tasks turbo reports failed:
// CI shows only the end of the log, where a failure far up would otherwise leave no trace.
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

const lines = log.split("\n");
const failures = [];
for (let i = 0; i < lines.length; i++) {
  // vitest's closing list: " FAIL  file > describe > test", then the error, after an optional blank line; an
  // error outside any test is under "Unhandled Errors", its kind in a rule line ("⎯⎯ Unhandled Rejection ⎯⎯").
  const fail =
    /^(\S+?):\S*:\s+FAIL\s+(.+)$/.exec(lines[i]) ?? /^(\S+?):\S*:\s+⎯+\s+(Unhandled \w+)\s+⎯+\s*$/.exec(lines[i]);
  if (!fail) {
    continue;
  }
  const [, task, name] = fail;
  let error = "";
  for (let j = i + 1; j < Math.min(i + 4, lines.length) && !error; j++) {
    error = lines[j].replace(/^\S+?:\S*:\s?/, "").trim();
  }
  failures.push(`${task}: ${name}\n    ${error.slice(0, 400)}`);
}
const failedTasks = /^Failed:\s+(.+)$/m.exec(log)?.[1];
if (failures.length > 0 || failedTasks) {
  console.log(`Failures${run}:`);
  for (const failure of failures.slice(0, 20)) {
    console.log(`  ${failure}`);
  }
  if (failures.length > 20) {
    console.log(`  ... and ${failures.length - 20} more`);
  }
  if (failedTasks) {
    console.log(`  turbo tasks failed: ${failedTasks}`);
  }
}
console.log(`${suites} test suites${run}`);
console.log(`Tests: ${passed} passed, ${failed} failed${run}`);
process.exitCode = suites === 0 || passed === 0 ? 1 : 0;
