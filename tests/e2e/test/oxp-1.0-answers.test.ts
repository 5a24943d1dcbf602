// A published OXP 1.0 client that never sends OXP-Extensions gets what it got before the extensions existed: the
// answers of the last build without them (golden/oxp-1.0-answers.json, see scripts/record-1.0-answers.ts), byte for
// byte in status and body (ids and durations fixed), and in every header but one documented addition.
import { readFileSync } from "node:fs";
import * as server from "@otc/server";
import { verifies } from "@otc/test-helpers/verifies";
import { expect } from "vitest";
import { EXCHANGES, type RecordedAnswer, recordAnswers, type ServerModule } from "./oxp-1.0-exchanges.js";

const golden = JSON.parse(readFileSync(new URL("../golden/oxp-1.0-answers.json", import.meta.url), "utf8")) as Record<
  string,
  RecordedAnswer
>;

verifies(
  "extensions.off-without-header",
  "answers a draft client's list, calls and errors as the server did before the extensions",
  async () => {
    const now = await recordAnswers(server as unknown as ServerModule);
    expect(Object.keys(now)).toEqual(EXCHANGES.map((exchange) => exchange.name));
    for (const [name, before] of Object.entries(golden)) {
      const answer = now[name] as RecordedAnswer;
      expect(answer.status, name).toBe(before.status);
      expect(answer.body, name).toBe(before.body);
      // The one change: GET /tools varies on OXP-Extensions too (docs/protocol.md 9.1, extensions.vary).
      const expected = { ...before.headers };
      if (name.startsWith("list") && expected.vary !== undefined) {
        expected.vary = `${expected.vary}, OXP-Extensions`;
      }
      expect(answer.headers, name).toEqual(expected);
    }
  },
);
