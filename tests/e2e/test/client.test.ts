// @otc/client against the real demo server: calls, every error class, retries, abort, auth, envelope, challenges.
import { once } from "node:events";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createClient,
  OxpAuthenticationError,
  OxpConnectionError,
  OxpLocalError,
  OxpProtocolError,
  OxpResponseError,
  OxpServerError,
  OxpTimeoutError,
  OxpValidationError,
} from "@otc/client";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Demo, decide, startDemo } from "./demo.js";

let demo: Demo;
beforeAll(async () => {
  demo = await startDemo();
});
afterAll(() => demo.close());

/**
 * What the client making `call` does next: waits on `clock` (a timer set there), or ends the call. A client that
 * should wait and does not then fails its test at once, instead of leaving it waiting for a timer.
 */
function nextOf(clock: ManualClock, call: Promise<unknown>): Promise<"waits" | "ends"> {
  return Promise.race([
    clock.untilPending(1).then(() => "waits" as const),
    call.then(
      () => "ends" as const,
      () => "ends" as const,
    ),
  ]);
}

/** A fetch that records every request (method, path, headers, body) before sending it for real. */
function recordingFetch() {
  const seen: { method: string; path: string; headers: Headers; body: string }[] = [];
  const fetchFn: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    seen.push({
      method: request.method,
      path: new URL(request.url).pathname,
      headers: request.headers,
      body: request.method === "GET" ? "" : await request.clone().text(),
    });
    return fetch(request);
  };
  return { seen, fetch: fetchFn };
}

/** A real HTTP server answering every request with the given status and body: a server that breaks the spec. */
async function rawServer(
  status: number,
  body: string,
  contentType = "application/json",
): Promise<{ url: string; server: Server }> {
  const server = createHttpServer((_req, res) => {
    res.writeHead(status, { "content-type": contentType, "oxp-version": "1.0" });
    res.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("calls", () => {
  it("checks health, lists tools and calls one", async () => {
    const client = createClient({ baseUrl: demo.url });
    expect(await client.health()).toEqual({ healthy: true, status: 200 });
    const tools = await client.listTools();
    expect(tools.map((tool) => tool.id)).toContain("Calculator.Add@1.0.0");
    const response = await client.callTool({ tool_id: "Calculator.Add", input: { a: 2, b: 3 } });
    expect(response).toMatchObject({ success: true, value: 5 });
  });

  it("sends OXP-Version: 1.0 on every request and makes a UUID v4 call_id", async () => {
    const { seen, fetch } = recordingFetch();
    const client = createClient({ baseUrl: demo.url, fetch });
    await client.health();
    await client.listTools();
    const response = await client.callTool({ tool_id: "Calculator.Add", input: { a: 1, b: 1 } });
    expect(seen.map((request) => request.headers.get("oxp-version"))).toEqual(["1.0", "1.0", "1.0"]);
    expect(response.call_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(JSON.parse(seen[2]?.body ?? "{}").call_id).toBe(response.call_id);
  });

  verifies(
    "definitions.legacy-parameters",
    "reads an older server's {parameters: ...} input_schema in the flat form",
    async () => {
      const legacy = await rawServer(
        200,
        JSON.stringify({
          items: [
            {
              id: "Calculator.Add@1.0.0",
              name: "Calculator_Add",
              description: "Adds.",
              version: "1.0.0",
              input_schema: {
                parameters: { type: "object", properties: { a: { type: "number", description: "A." } } },
              },
              output_schema: { type: "number" },
            },
          ],
        }),
      );
      try {
        const [tool] = await createClient({ baseUrl: legacy.url }).listTools();
        expect(tool?.input_schema).toEqual({
          type: "object",
          properties: { a: { type: "number", description: "A." } },
        });
      } finally {
        legacy.server.close();
      }
    },
  );
});

describe("errors", () => {
  it("a 400 is an OxpServerError with the server's messages", async () => {
    const error = await createClient({ baseUrl: demo.url })
      .callTool({ tool_id: "Calculator.Add@2.0.0", input: { a: 1, b: 1 } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpServerError);
    expect(error).toMatchObject({ status: 400, message: "Tool 'Calculator.Add' was not found" });
    expect((error as OxpServerError).developerMessage).toContain("available versions: 1.0.0");
    expect((error as OxpServerError).body).toMatchObject({ message: "Tool 'Calculator.Add' was not found" });
    expect(error).not.toBeInstanceOf(OxpLocalError);
  });

  it("a 422 is an OxpValidationError with parameterErrors", async () => {
    const error = await createClient({ baseUrl: demo.url })
      .callTool({ tool_id: "Calculator.Add", input: { a: 1, b: "x" } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpValidationError);
    expect((error as OxpValidationError).parameterErrors).toEqual({ b: "Must be a number" });
    expect(error).toMatchObject({ status: 422, body: { parameter_errors: { b: "Must be a number" } } });
  });

  it("a 401 is an OxpAuthenticationError with the WWW-Authenticate challenge", async () => {
    const locked = await startDemo({ auth: { apiKeys: ["right-key"] } });
    try {
      const error = await createClient({ baseUrl: locked.url, apiKey: "wrong-key" })
        .listTools()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OxpAuthenticationError);
      expect(error).toMatchObject({ status: 401, wwwAuthenticate: "Bearer", body: { message: expect.any(String) } });
    } finally {
      await locked.close();
    }
  });

  it("nothing listening is an OxpConnectionError", async () => {
    const client = createClient({ baseUrl: "http://127.0.0.1:9", retry: { maxAttempts: 1 } });
    await expect(client.health()).rejects.toBeInstanceOf(OxpConnectionError);
  });

  it("an attempt past timeoutMs is an OxpTimeoutError", async () => {
    // A sleep far past the limit: on a busy machine the client's 100 ms timer may fire late, never after 30 s.
    const client = createClient({ baseUrl: demo.url, timeoutMs: 100, retry: { maxAttempts: 1 } });
    await expect(client.callTool({ tool_id: "System.Sleep", input: { ms: 30_000 } })).rejects.toBeInstanceOf(
      OxpTimeoutError,
    );
  });

  it.each([
    ["a body that is not a CallToolResponse", 200, '{"ok": true}'],
    ["a body that is not JSON", 200, "<html>hello</html>"],
    ["a 404 without a JSON body", 404, "Not Found"],
    ["a success with an error", 200, '{"call_id":"c","duration":1,"success":true,"value":1,"error":{"message":"x"}}'],
  ])("%s is an OxpProtocolError, a local error carrying the status", async (_case, status, body) => {
    const broken = await rawServer(status, body);
    try {
      const client = createClient({ baseUrl: broken.url, retry: { maxAttempts: 1 } });
      const error = await client.callTool({ tool_id: "Calculator.Add" }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OxpProtocolError);
      expect(error).toBeInstanceOf(OxpLocalError);
      expect(error).not.toBeInstanceOf(OxpResponseError);
      expect(error).toMatchObject({ status });
    } finally {
      broken.server.close();
    }
  });
});

describe("retries", () => {
  it("retries a failure with can_retry after retry_after_ms, keeping the call_id, then returns the failure", async () => {
    const { seen, fetch } = recordingFetch();
    const clock = new ManualClock();
    const client = createClient({ baseUrl: demo.url, fetch, retry: { maxAttempts: 3 }, clock });
    const calls = () => seen.filter((request) => request.path === "/tools/call");
    const calling = client.callTool({ tool_id: "Doorbell.Ring", input: { doorbell_id: "nope" } });
    for (const attempt of [2, 3]) {
      // Answered can_retry with retry_after_ms 500, the client waits on its clock: 499 ms are not enough.
      expect(await nextOf(clock, calling)).toBe("waits");
      await clock.advance(499);
      expect(calls()).toHaveLength(attempt - 1);
      await clock.advance(1);
    }
    const response = await calling;
    expect(response).toMatchObject({ success: false, error: { can_retry: true, retry_after_ms: 500 } });
    expect(calls()).toHaveLength(3);
    expect(new Set(calls().map((request) => JSON.parse(request.body).call_id)).size).toBe(1);
    expect(clock.pending).toBe(0);
  });

  it("never retries 400, 401 or 422", async () => {
    const { seen, fetch } = recordingFetch();
    const client = createClient({ baseUrl: demo.url, fetch });
    await client.callTool({ tool_id: "Nope.Nope" }).catch(() => {});
    await client.callTool({ tool_id: "Calculator.Add", input: {} }).catch(() => {});
    expect(seen).toHaveLength(2);
  });

  it("retries a lost answer with the same call_id, and the tool runs once", async () => {
    const before = demo.demo.counter.value;
    let attempts = 0;
    const lossy: typeof fetch = async (input, init) => {
      attempts++;
      const response = await fetch(new Request(input, init));
      if (attempts === 1) {
        await response.arrayBuffer();
        throw new TypeError("fetch failed: the connection was reset");
      }
      return response;
    };
    const client = createClient({ baseUrl: demo.url, fetch: lossy, retry: { baseDelayMs: 10 } });
    const response = await client.callTool({ tool_id: "Counter.Increment", input: { by: 7 } });
    expect(attempts).toBe(2);
    expect(response).toMatchObject({ success: true, value: { value: before + 7 } });
    expect(demo.demo.counter.value).toBe(before + 7);
  });

  it("retries a 503 (a draining server) and succeeds once it answers again", async () => {
    // The first attempt reaches an instance that is draining (a drain is for good), the retry a live one: as behind
    // a load balancer that has not yet taken the first out.
    const draining = await startDemo();
    draining.oxp.drain();
    let attempts = 0;
    const client = createClient({
      baseUrl: demo.url,
      retry: { baseDelayMs: 10 },
      fetch: async (input, init) => {
        attempts++;
        const request = new Request(input, init);
        return fetch(attempts === 1 ? new Request(request.url.replace(demo.url, draining.url), request) : request);
      },
    });
    try {
      expect(await client.callTool({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } })).toMatchObject({ value: 3 });
      expect(attempts).toBe(2);
    } finally {
      await draining.close();
    }
  });

  it("gives up on connection errors after maxAttempts", async () => {
    let attempts = 0;
    const client = createClient({
      baseUrl: "http://127.0.0.1:9",
      retry: { maxAttempts: 4, baseDelayMs: 5 },
      fetch: (input, init) => {
        attempts++;
        return fetch(new Request(input, init));
      },
    });
    await expect(client.callTool({ tool_id: "Calculator.Add" })).rejects.toBeInstanceOf(OxpConnectionError);
    expect(attempts).toBe(4);
  });

  it("stops waiting between attempts when the signal aborts", async () => {
    const controller = new AbortController();
    const clock = new ManualClock();
    let attempts = 0;
    const client = createClient({
      baseUrl: demo.url,
      retry: { maxAttempts: 5 },
      clock,
      fetch: (input, init) => {
        attempts++;
        return fetch(new Request(input, init));
      },
    });
    const calling = client.callTool(
      { tool_id: "Doorbell.Ring", input: { doorbell_id: "nope" } },
      { signal: controller.signal },
    );
    // Aborted while the client waits the 500 ms the first answer asks for, on a clock that never lets them pass.
    expect(await nextOf(clock, calling)).toBe("waits");
    controller.abort(new Error("user gave up"));
    // The wait ended with the abort: its timer is gone.
    expect(clock.pending).toBe(0);
    await expect(calling).rejects.toThrow("user gave up");
    expect(attempts).toBe(1);
  });
});

describe("authentication", () => {
  it("signs HS256 JWTs with exp at most 15 minutes ahead, reusing the token", async () => {
    const locked = await startDemo({ auth: { jwt: { secret: "s".repeat(32), audiences: ["demo"] } } });
    try {
      const { seen, fetch } = recordingFetch();
      const client = createClient({
        baseUrl: locked.url,
        fetch,
        jwt: { secret: "s".repeat(32), audience: "demo", subject: "e2e-agent" },
      });
      await client.listTools();
      await client.callTool({ tool_id: "Calculator.Add", input: { a: 1, b: 1 } });
      const [first, second] = seen.map((request) => request.headers.get("authorization"));
      expect(first).toMatch(/^Bearer ey/);
      expect(second).toBe(first);
      const payload = JSON.parse(Buffer.from((first ?? "").split(".")[1] ?? "", "base64url").toString());
      expect(payload.aud).toBe("demo");
      expect(payload.sub).toBe("e2e-agent");
      expect(payload.exp - payload.iat).toBe(300);
      expect(() => createClient({ baseUrl: locked.url, jwt: { secret: "x", subject: "a", ttlSeconds: 901 } })).toThrow(
        RangeError,
      );
    } finally {
      await locked.close();
    }
  });

  it("sends the API key in OXP-API-Key", async () => {
    const locked = await startDemo({ auth: { apiKeys: ["k-123"] } });
    try {
      const { seen, fetch } = recordingFetch();
      await createClient({ baseUrl: locked.url, apiKey: "k-123", fetch }).listTools();
      expect(seen[0]?.headers.get("oxp-api-key")).toBe("k-123");
    } finally {
      await locked.close();
    }
  });
});

describe("the draft envelope", () => {
  it("wraps requests and unwraps answers with wire: envelope", async () => {
    const { seen, fetch } = recordingFetch();
    const client = createClient({ baseUrl: demo.url, fetch, wire: "envelope" });
    const response = await client.callTool({ tool_id: "Greeting.Hello@1", input: { name: "Ann" } });
    expect(response).toMatchObject({ success: true, value: "Hello, Ann!" });
    const body = JSON.parse(seen[0]?.body ?? "{}");
    expect(body).toMatchObject({ $schema: "urn:oxp:1.0", request: { tool_id: "Greeting.Hello@1" } });
    await expect(client.callTool({ tool_id: "Calculator.Add", input: {} })).rejects.toBeInstanceOf(OxpValidationError);
  });
});

describe("authorization challenges", () => {
  it("exposes the challenge, polls check_url until completed, and the retried call succeeds", async () => {
    const clock = new ManualClock();
    const client = createClient({ baseUrl: demo.url, clock });
    const request = { tool_id: "Gmail.GetEmails", input: { query: "receipt" }, context: { user_id: "poller" } };
    const error = (await client.callTool(request).catch((e: unknown) => e)) as OxpServerError;
    expect(error).toBeInstanceOf(OxpServerError);
    const [challenge] = error.authorizationChallenges;
    if (!challenge) {
      throw new Error("no challenge");
    }
    expect(await client.checkAuthorization(challenge)).toBe("pending");
    const waiting = client.waitForAuthorization(challenge, { intervalMs: 50 });
    // It found the challenge pending and waits 50 ms on its clock before it looks again: the user approves meanwhile.
    expect(await nextOf(clock, waiting)).toBe("waits");
    expect(await decide(challenge.url, "approve")).toBeLessThan(400);
    await clock.advance(50);
    // Completed at its next look; one more wait would mean it saw the challenge pending still.
    expect(await nextOf(clock, waiting)).toBe("ends");
    expect(await waiting).toBe("completed");
    expect(await client.callTool(request)).toMatchObject({ success: true, value: { emails: [{ id: "email_2" }] } });
  });

  it("reports failed when the user denies", async () => {
    const client = createClient({ baseUrl: demo.url });
    const error = (await client
      .callTool({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "denier" } })
      .catch((e: unknown) => e)) as OxpServerError;
    const [challenge] = error.authorizationChallenges;
    if (!challenge) {
      throw new Error("no challenge");
    }
    await decide(challenge.url, "deny");
    expect(await client.waitForAuthorization(challenge, { intervalMs: 20 })).toBe("failed");
  });
});
