// Three demo instances behind a round-robin proxy with no sticky sessions: the whole Gmail authorization flow, and exactly-once calls, through one address.
import { createClient, OxpServerError } from "@otc/client";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approve, type Instance, type RoundRobinProxy, startInstances, startProxy } from "./cluster.js";

let redis: RedisServer;
let proxy: RoundRobinProxy;
let instances: Instance[];

beforeAll(async () => {
  redis = await startRedisServer();
  proxy = await startProxy();
  // Challenge links must name the one public address, as behind any load balancer.
  instances = await startInstances(redis.url, 3, { publicUrl: proxy.url });
  proxy.upstreams = instances.map((instance) => instance.url);
});
afterAll(async () => {
  await proxy?.close();
  await Promise.all((instances ?? []).map((instance) => instance.close()));
  await redis?.close();
});

describe("behind a round-robin proxy", () => {
  it("runs the whole Gmail flow: challenge, check, consent and retry each land on whichever instance", async () => {
    const client = createClient({ baseUrl: proxy.url });
    const request = { tool_id: "Gmail.GetEmails", input: { query: "invoice" }, context: { user_id: "ann" } };
    const refused = await client.callTool(request).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OxpServerError);
    const [challenge] = (refused as OxpServerError).authorizationChallenges;
    if (!challenge?.url) {
      throw new Error("no challenge");
    }
    expect(challenge.url.startsWith(`${proxy.url}/demo/authorize/`)).toBe(true);

    const waiting = client.waitForAuthorization(challenge, { intervalMs: 50 });
    // The form is fetched from one instance and posted to the next.
    const decided = await approve(challenge.url);
    expect(decided.status).toBe(303);
    expect(await waiting).toBe("completed");

    const emails = await client.callTool(request);
    expect(emails).toMatchObject({ success: true });
    if (!emails.success) {
      throw new Error("unreachable");
    }
    expect((emails.value as { emails: { subject: string }[] }).emails.map((email) => email.subject)).toEqual([
      "Unread: invoice overdue",
    ]);
    // Round robin, no stickiness: every instance served part of the flow.
    for (const instance of instances) {
      expect(proxy.served.get(instance.url) ?? 0).toBeGreaterThan(0);
    }
  });

  it("runs a call_id once however the retries are spread", async () => {
    const client = createClient({ baseUrl: proxy.url });
    const before = instances.reduce((sum, instance) => sum + instance.demo.counter.value, 0);
    const request = { tool_id: "Counter.Increment", input: { by: 5 }, call_id: `proxy-${Date.now()}` };
    const responses = await Promise.all(Array.from({ length: 6 }, () => client.callTool(request)));
    for (const response of responses) {
      expect(response).toEqual(responses[0]);
    }
    expect(instances.reduce((sum, instance) => sum + instance.demo.counter.value, 0) - before).toBe(5);
  });
});
