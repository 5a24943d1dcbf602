// The logger's redaction: credentials are censored wherever the server or a tool could put them.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";

describe("createLogger", () => {
  it("censors secrets, tokens and credentials at every path the server names", () => {
    let out = "";
    const destination = new Writable({
      write(chunk, _encoding, done) {
        out += chunk;
        done();
      },
    });
    const logger = createLogger({ destination });
    const secret = [{ id: "K", value: "secret-value-1" }];
    const token = [{ id: "google", token: "token-value-2" }];
    logger.info({ context: { secrets: secret, authorization: token } }, "a");
    logger.info({ request: { context: { secrets: secret, authorization: token } } }, "b");
    logger.info({ body: { context: { secrets: secret }, request: { context: { authorization: token } } } }, "c");
    logger.info({ headers: { authorization: "Bearer jwt-value-3", "oxp-api-key": "key-value-4" } }, "d");
    logger.child({ tool_id: "T" }).info({ secrets: { K: "secret-value-5" }, tokens: { g: "token-value-6" } }, "e");
    expect(out.split("\n").filter(Boolean)).toHaveLength(5);
    expect(out).not.toMatch(/secret-value|token-value|jwt-value|key-value/);
    expect(out).toContain("[redacted]");
  });
});
