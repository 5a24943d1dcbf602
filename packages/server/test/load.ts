// Load for the tests of what one client may cost the others: calls from chosen loopback addresses, floods of calls.
import { request as httpRequest } from "node:http";
import type { Reply } from "./harness.js";

export type { Reply };

/** A POST /tools/call sent from a chosen loopback address (the whole 127.0.0.0/8 reaches this machine). */
export function callFrom(
  from: string,
  baseUrl: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply & { connection: string | undefined }> {
  const payload = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${baseUrl}/tools/call`,
      {
        method: "POST",
        localAddress: from,
        agent: false,
        headers: { "content-type": "application/json", "content-length": payload.length, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const replyHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === "string") {
              replyHeaders.set(name, value);
            }
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: replyHeaders,
            body: text ? JSON.parse(text) : undefined,
            text,
            connection: res.headers.connection,
          });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** An input object with `count` keys besides `a` and `b`. */
export function wideInput(count: number): Record<string, number> {
  const input: Record<string, number> = { a: 1, b: 2 };
  for (let i = 0; i < count; i++) {
    input[`k${i}`] = i;
  }
  return input;
}

let nudges = 0;
/**
 * A cheap call from another client, so the server knows others are calling: from a new address each time (of
 * 250), so that no nudging client runs up a debt of its own on a loaded test machine, where the budget's
 * wall-clock time can make even a cheap call look costly.
 */
export const nudge = (baseUrl: string, headers: Record<string, string> = {}) =>
  callFrom(`127.0.1.${(nudges++ % 250) + 1}`, baseUrl, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } }, headers);

/** Sends `count` requests, `concurrency` at a time, and returns the replies' statuses. */
export async function flood(
  count: number,
  concurrency: number,
  make: (index: number) => Promise<Reply>,
): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        statuses.push((await make(next++)).status);
      }
    }),
  );
  return statuses;
}
