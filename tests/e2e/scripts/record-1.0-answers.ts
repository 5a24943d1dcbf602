// Records golden/oxp-1.0-answers.json from an @otc/server build: `npx tsx scripts/record-1.0-answers.ts DIST_INDEX`.
// It was recorded from the last build before the extensions (commit 6cfe26e's packages/server/dist/index.js), and
// test/oxp-1.0-answers.test.ts holds today's server to it; re-recording from today's build would prove nothing.
import { writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { recordAnswers, type ServerModule } from "../test/oxp-1.0-exchanges.js";

const from = process.argv[2];
if (!from) {
  throw new Error("usage: tsx scripts/record-1.0-answers.ts path/to/server/dist/index.js");
}
const server = (await import(pathToFileURL(from).href)) as ServerModule;
const answers = await recordAnswers(server);
writeFileSync(new URL("../golden/oxp-1.0-answers.json", import.meta.url), `${JSON.stringify(answers, null, 2)}\n`);
process.stdout.write(`recorded ${Object.keys(answers).length} answers from ${from}\n`);
