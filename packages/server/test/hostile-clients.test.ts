// Attacks a hostile client made on the server (memory, CPU, another user's tokens, call_id flooding), each replayed against a real server.
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineTool, listen, MemoryIdempotencyStore, type RunningServer } from "../src/index.js";
import { ADAPTER, callTool, expectError, makeServer, type Running, send, startServer } from "./harness.js";
import { flood } from "./load.js";
import { TEST_CONSENT_PATH, testTools } from "./tools.js";

const keyOne = { "OXP-API-Key": "key-one" };
const keyTwo = { "OXP-API-Key": "key-two" };

describe("finding 1: memory cannot be raised without bound (the store under a flood: hostile-clients.slow.test.ts)", () => {
  verifies(
    "limits.identifier-length",
    "refuses a user_id, call_id or trace_id over 256 characters before any work",
    async () => {
      const server = await startServer({ logger: false });
      try {
        const long = "u".repeat(900_000);
        for (const body of [
          { tool_id: "Gmail.GetEmails", context: { user_id: long } },
          { tool_id: "Calculator.Add", call_id: long, input: { a: 1, b: 2 } },
          { tool_id: "Calculator.Add", trace_id: long, input: { a: 1, b: 2 } },
        ]) {
          const reply = await callTool(server.baseUrl, body);
          expectError(reply, 400);
          expect(reply.text.length).toBeLessThan(2_000);
        }
        expect(server.provider.size).toBe(0);
      } finally {
        await server.close();
      }
    },
  );
});

describe("finding 2: CPU per request stays small (measured: hostile-clients.slow.test.ts)", () => {
  let running: RunningServer;
  beforeAll(async () => {
    running = await listen(makeServer({ tools: testTools(), logger: false }), { port: 0 });
  });
  afterAll(() => running.close());

  verifies.each(["Calculator.Add@01", "Calculator.Add@1.00.0", "Calculator.Add@01.0.0", "Calculator.Add@1234567890"])(
    ["tool-id.no-leading-zeros", "limits.version-number-digits"],
    "refuses %s: versions have no leading zeros and at most 9 digits",
    async (toolId) => {
      expectError(await callTool(running.url, { tool_id: toolId, input: { a: 1, b: 2 } }), 400);
    },
  );
});

describe("finding 3: nobody acts for another principal's user", () => {
  const SECRET = "a-test-secret-of-enough-length-0123456789";
  let server: Running;
  beforeAll(async () => {
    server = await startServer({ auth: { apiKeys: ["key-one", "key-two"], jwt: { secret: SECRET } } });
  });
  afterAll(() => server.close());

  const jwt = (sub: string) =>
    new SignJWT({ sub })
      .setProtectedHeader({ alg: "HS256" })
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(SECRET))
      .then((token) => ({ Authorization: `Bearer ${token}` }));
  const gmail = (userId: string) => ({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: userId } });

  /** Starts a challenge for `userId` as `headers`' principal and approves it. */
  async function authorize(headers: Record<string, string>, userId: string) {
    const challenged = await callTool(server.baseUrl, gmail(userId), headers);
    expectError(challenged, 400);
    const challenge = challenged.body.missing_requirements.authorization[0];
    expect(await server.provider.decide(challenge.id, true)).toBe("completed");
    expect((await callTool(server.baseUrl, gmail(userId), headers).then((reply) => reply.body)).success).toBe(true);
  }

  verifies(
    "requirements.token-bound-to-principal",
    "never gives principal B the token principal A obtained for the same user_id",
    async () => {
      await authorize(keyOne, "alice");
      for (const headers of [keyTwo, await jwt("mallory")]) {
        const reply = await callTool(server.baseUrl, gmail("alice"), headers);
        expectError(reply, 400);
        expect(reply.body.message).toBe("Authorization required");
        // B is sent to its own consent, not handed Alice's emails.
        expect(reply.body.missing_requirements.authorization).toHaveLength(1);
      }
    },
  );

  verifies(
    ["requirements.token-bound-to-principal", "auth.principal-identity"],
    "keeps JWT subjects apart, and one subject's token works for that subject only",
    async () => {
      const ann = await jwt("ann");
      await authorize(ann, "shared-user");
      expect((await callTool(server.baseUrl, gmail("shared-user"), await jwt("ann"))).body.success).toBe(true);
      expectError(await callTool(server.baseUrl, gmail("shared-user"), await jwt("bob")), 400);
    },
  );

  verifies(
    "requirements.challenge-url-base",
    "builds challenge links from where the server was reached, never from the Host header",
    async () => {
      const port = new URL(server.baseUrl).port;
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(
          {
            host: "127.0.0.1",
            port,
            method: "POST",
            path: "/tools/call",
            // A name the server answers to (on loopback, foreign names are refused: limits.allowed-hosts), but not its address.
            headers: { host: "localhost:1", "content-type": "application/json", ...keyOne },
          },
          (res) => {
            let body = "";
            res.on("data", (chunk) => {
              body += chunk;
            });
            res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(gmail("host-test")));
      });
      expect(answer.status).toBe(400);
      const [challenge] = JSON.parse(answer.body).missing_requirements.authorization;
      expect(challenge.url.startsWith(`http://127.0.0.1:${port}/`)).toBe(true);
      expect(challenge.check_url.startsWith(`http://127.0.0.1:${port}/`)).toBe(true);
    },
  );

  verifies("requirements.challenge-url-base", "builds them for an HTTP/1.0 request without Host as well", async () => {
    const { port } = new URL(server.baseUrl);
    const payload = JSON.stringify(gmail("old-client"));
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.end(
          `POST /tools/call HTTP/1.0\r\nContent-Type: application/json\r\nOXP-API-Key: key-one\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
        );
      });
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk;
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.[01] 400/);
    expect(raw).not.toContain("undefined");
    // A fetch host makes a URL of the request before the handler sees it, and refuses one without a Host (Node's
    // bridge here; Bun and Deno alike): no challenge is started, so no link is built from anything.
    if (ADAPTER === "fetch") {
      return;
    }
    expect(raw).toContain(`"url":"http://127.0.0.1:${port}${TEST_CONSENT_PATH}/`);
  });
});

// Finding 4, errors of an authorization provider's pages, is the demo's (apps/demo/test/hostile-clients.test.ts, on its
// consent pages); pages.test.ts checks pages beside the protocol routes in general.

describe("finding 5: flooding the call_id store", () => {
  let server: Running;
  // A small quota keeps the flood short (the rule is the same at the default 10,000, which
  // `bench/hostile-clients.mjs` floods).
  const QUOTA = 50;
  beforeAll(async () => {
    server = await startServer({ auth: { apiKeys: ["key-one", "key-two"] } });
  });
  afterAll(() => server.close());

  verifies(
    "idempotency.per-principal-quota",
    "does not let a flood of another principal's calls, past its quota, evict a finished call or a running one",
    async () => {
      // A server of its own, with a tool held open until the test lets it finish: no race with the clock.
      let counted = 0;
      let gateRuns = 0;
      let openGate: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        openGate = resolve;
      });
      const tools = [
        defineTool({
          toolkit: "Test",
          name: "Count",
          version: "1.0.0",
          description: "Counts its runs.",
          inputSchema: { type: "object" },
          outputSchema: { type: "number" },
          run: () => ++counted,
        }),
        defineTool({
          toolkit: "Test",
          name: "Gate",
          version: "1.0.0",
          description: "Runs until the test opens the gate.",
          inputSchema: { type: "object" },
          outputSchema: { type: "number" },
          run: async () => {
            gateRuns++;
            await gate;
            return gateRuns;
          },
        }),
      ];
      const app = makeServer({
        tools,
        logger: false,
        auth: { apiKeys: ["key-one", "key-two"] },
        idempotencyStore: new MemoryIdempotencyStore({ maxEntriesPerPrincipal: QUOTA }),
      });
      const running = await listen(app, { port: 0 });
      try {
        const count = { tool_id: "Test.Count", call_id: "victim-count" };
        const first = await callTool(running.url, count, keyOne);
        expect(first.body).toMatchObject({ success: true, value: 1 });
        const held = { tool_id: "Test.Gate", call_id: "victim-gate" };
        const firstGate = callTool(running.url, held, keyOne);
        await until(() => gateRuns > 0, { what: "the gated call to run" });

        const statuses = await flood(QUOTA + 200, 16, (index) =>
          callTool(running.url, { tool_id: "Test.Count", call_id: `flood-${index}` }, keyTwo),
        );
        expect(statuses.every((status) => status === 200)).toBe(true);

        // The duplicate arrives while the first still runs, after the flood went past the flooder's quota.
        const duplicateGate = callTool(running.url, held, keyOne);
        await until(() => app.oxp.lifecycle.inFlight === 2, { what: "the duplicate to reach the server" });
        openGate();
        const [a, b] = await Promise.all([firstGate, duplicateGate]);
        expect(b.text).toBe(a.text);
        expect(gateRuns).toBe(1);

        const before = counted;
        const retry = await callTool(running.url, count, keyOne);
        expect(retry.text).toBe(first.text);
        expect(counted).toBe(before);
      } finally {
        openGate();
        await running.close();
      }
    },
  );

  verifies(
    "idempotency.per-principal",
    "keeps one principal's call_id from blocking, answering or revealing another's",
    async () => {
      const mine = await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", call_id: "same-id", input: { a: 1, b: 2 } },
        keyOne,
      );
      const theirs = await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", call_id: "same-id", input: { a: 20, b: 22 } },
        keyTwo,
      );
      expect(mine.body).toMatchObject({ success: true, value: 3 });
      expect(theirs.body).toMatchObject({ success: true, value: 42 });
    },
  );

  verifies(
    "idempotency.abandoned-run-holds-key",
    "answers a retry of a run abandoned at its time limit, whose tool ignores the abort, without a second run",
    async () => {
      let runs = 0;
      let finish: () => void = () => {};
      const stubborn = defineTool({
        toolkit: "Test",
        name: "Stubborn",
        version: "1.0.0",
        description: "Ignores its AbortSignal.",
        inputSchema: { type: "object" },
        outputSchema: { type: "number" },
        timeoutMs: 100,
        run: () => {
          runs++;
          return new Promise<number>((resolve) => {
            finish = () => resolve(runs);
          });
        },
      });
      const running = await listen(makeServer({ tools: [stubborn], logger: false }), { port: 0 });
      try {
        const body = { tool_id: "Test.Stubborn", call_id: "stubborn-1" };
        const first = await callTool(running.url, body);
        expect(first.body).toMatchObject({ success: false, error: { can_retry: true } });
        const retry = await callTool(running.url, body);
        expect(retry.status).toBe(200);
        expect(retry.body).toMatchObject({ success: false, error: { can_retry: true } });
        expect(retry.body.error.retry_after_ms).toBeGreaterThan(0);
        expect(runs).toBe(1);
        finish();
        // Once the tool settles, the server frees the call_id: a retry then runs it again.
        await until(async () => {
          await callTool(running.url, body);
          return runs === 2;
        });
        expect(runs).toBe(2);
      } finally {
        finish();
        await running.close();
      }
    },
  );
});

describe("finding 6: the smaller ones", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startServer({ auth: { apiKeys: ["key-one"] } });
  });
  afterAll(() => server.close());

  verifies("call.version-after-body", "judges OXP-Version after the body's size and media type", async () => {
    const headers = { ...keyOne, "OXP-Version": "2.0" };
    const big = await callTool(
      server.baseUrl,
      { tool_id: "Calculator.Add", input: { a: "x".repeat(2_000_000) } },
      headers,
    );
    expectError(big, 413);
    const text = await send(`${server.baseUrl}/tools/call`, {
      method: "POST",
      headers: { ...headers, "content-type": "text/plain" },
      body: '{"tool_id": "Calculator.Add"}',
    });
    expectError(text, 415);
    expectError(await callTool(server.baseUrl, { tool_id: "Calculator.Add" }, headers), 400);
  });

  it("keeps Counter.Increment working for everyone after a huge increment", async () => {
    // Read before the calls: the answer is judged against what the counter must be, not what it became.
    const before = server.counter.value;
    for (let i = 0; i < 2; i++) {
      expectError(await callTool(server.baseUrl, { tool_id: "Counter.Increment", input: { by: 1e308 } }, keyOne), 422);
    }
    expect(server.counter.value).toBe(before);
    const next = await callTool(server.baseUrl, { tool_id: "Counter.Increment", input: { by: 1 } }, keyOne);
    expect(next.body).toMatchObject({ success: true, value: { value: before + 1 } });
    expect(server.counter.value).toBe(before + 1);
  });

  verifies(
    "limits.auth-failures-logged",
    "logs failed authentication with its reason and remote address, never the credential",
    async () => {
      const secret = "not-the-key-0123456789";
      expectError(await send(`${server.baseUrl}/tools`, { headers: { "OXP-API-Key": secret } }), 401);
      const line = server.logs().find((entry) => entry.msg === "authentication failed");
      expect(line).toMatchObject({ reason: expect.any(String), remote_address: "127.0.0.1" });
      expect(server.rawLogs()).not.toContain(secret);
    },
  );

  verifies("limits.quoted-strings", "cuts request-controlled strings in error messages", async () => {
    const reply = await callTool(server.baseUrl, { tool_id: `Calculator.${"A".repeat(200)}` }, keyOne);
    expectError(reply, 400);
    expect(reply.body.message.length).toBeLessThan(150);
  });
});
