// Test harness: the real demo app on 127.0.0.1 port 0, responses checked against the spec, logs captured; the requests and assertions are @otc/server's test harness's.
import { Writable } from "node:stream";
import { createLogger, type ListenOptions, listen } from "@otc/server";
import { createDemoApp, type DemoApp, type DemoOptions } from "../src/app.js";

export {
  callTool,
  expectError,
  expectHealthy,
  expectSchema,
  type Reply,
  send,
} from "../../../packages/server/test/harness.js";

/** A running demo server. */
export interface Running {
  baseUrl: string;
  demo: DemoApp;
  /** Every log line so far, parsed. */
  logs(): Record<string, unknown>[];
  /** Every log line so far, as written. */
  rawLogs(): string;
  close(): Promise<void>;
}

/** Starts the demo with response validation on (a response off the spec becomes a 500) and logs captured. */
export async function startDemo(options: DemoOptions = {}, listenOptions: ListenOptions = {}): Promise<Running> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const demo = createDemoApp({
    validateResponses: true,
    logger: createLogger({ level: "debug", destination }),
    ...options,
  });
  const running = await listen(demo.app, { ...listenOptions, port: 0 });
  return {
    baseUrl: running.url,
    demo,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    rawLogs: () => lines.join("\n"),
    close: running.close,
  };
}
