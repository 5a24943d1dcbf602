// docs/protocol.md section 4 against the running demo: user_id, secrets, authorization and the challenge lifecycle.
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, expectError, expectSchema, type Running, send, startDemo } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startDemo();
});
afterAll(() => server.close());

/** Submits the demo consent page's form (its anti-CSRF token included), as a user clicking Approve or Deny would. */
const decide = async (url: string, action: string) => {
  const csrf = /name="csrf" value="([^"]*)"/.exec((await send(url)).text)?.[1] ?? "";
  return send(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `action=${action}&csrf=${encodeURIComponent(csrf)}`,
    redirect: "manual",
  });
};

const gmail = (context: Record<string, unknown>, callId?: string) => ({
  tool_id: "Gmail.GetEmails",
  ...(callId ? { call_id: callId } : {}),
  input: {},
  context,
});

describe("user_id", () => {
  verifies.each([[{}], [{ user_id: "" }]])(
    "requirements.user-id",
    "is required by Gmail.GetEmails (context %j)",
    async (context) => {
      const reply = await callTool(server.baseUrl, gmail(context));
      expectError(reply, 400);
      expect(reply.body.missing_requirements).toEqual({ user_id: true });
    },
  );

  verifies(["requirements.check-order", "requirements.challenge-400"], "is checked before authorization", async () => {
    const reply = await callTool(server.baseUrl, gmail({ authorization: [{ id: "google", token: "t" }] }));
    expectError(reply, 400);
    expect(reply.body.missing_requirements).toEqual({ user_id: true });
  });
});

describe("secrets", () => {
  verifies(
    ["requirements.secrets-missing", "requirements.secrets-never-leak"],
    "names the missing secret id, never a value",
    async () => {
      const reply = await callTool(server.baseUrl, {
        tool_id: "SMS.Send",
        input: { to: "1", message: "m" },
        context: { secrets: [{ id: "OTHER", value: "s3cr3t-value" }] },
      });
      expectError(reply, 400);
      expect(reply.body.developer_message).toContain("TWILIO_API_KEY");
      expect(reply.text).not.toContain("s3cr3t-value");
      expect(reply.body).not.toHaveProperty("missing_requirements");
    },
  );

  verifies("requirements.secrets-missing", "treats an empty value as missing", async () => {
    const reply = await callTool(server.baseUrl, {
      tool_id: "SMS.Send",
      input: { to: "1", message: "m" },
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "" }] },
    });
    expectError(reply, 400);
  });

  verifies("requirements.server-held-secrets", "is met by a value the server holds", async () => {
    const held = await startDemo({ secrets: { TWILIO_API_KEY: "server-held" } });
    try {
      const reply = await callTool(held.baseUrl, { tool_id: "SMS.Send", input: { to: "1", message: "m" } });
      expect(reply.body).toMatchObject({ success: true, value: { status: "sent" } });
    } finally {
      await held.close();
    }
  });
});

describe("authorization", () => {
  verifies("requirements.authorization-token", "is met by a token in the request", async () => {
    const reply = await callTool(
      server.baseUrl,
      gmail({ user_id: "ann", authorization: [{ id: "google", token: "t" }] }),
    );
    expect(reply.body).toMatchObject({ success: true });
  });

  verifies(
    ["endpoints.check-url-status", "requirements.challenge-400", "requirements.challenge-completed-retry"],
    "runs a challenge to completion, after which the same call succeeds without a token",
    async () => {
      const first = await callTool(server.baseUrl, gmail({ user_id: "bob" }, "bob-mail-1"));
      expectError(first, 400);
      expect(first.body.message).toBe("Authorization required");
      const [challenge] = first.body.missing_requirements.authorization;
      expectSchema("ToolAuthorizationChallenge", challenge);
      expect(challenge.url.startsWith(server.baseUrl)).toBe(true);
      expect(challenge.check_url).toBe(
        `${server.baseUrl}/authorization/challenges/${encodeURIComponent(challenge.id)}`,
      );

      const pending = await send(challenge.check_url);
      expect(pending.status).toBe(200);
      expectSchema("AuthorizationChallengeCheckResponse", pending.body);
      expect(pending.body).toEqual({ status: "pending" });

      const page = await send(challenge.url);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.text).toContain("bob");
      expect(page.text).toContain("https://www.googleapis.com/auth/gmail.readonly");
      expect(page.text).toMatch(/<button name="action" value="approve">Approve<\/button>/);
      expect(page.text).toMatch(/<button name="action" value="deny">Deny<\/button>/);

      const approved = await decide(challenge.url, "approve");
      expect(approved.status).toBe(303);
      expect((await send(challenge.check_url)).body).toEqual({ status: "completed" });

      const retried = await callTool(server.baseUrl, gmail({ user_id: "bob" }, "bob-mail-1"));
      expect(retried.status, retried.text).toBe(200);
      expect(retried.body).toMatchObject({
        call_id: "bob-mail-1",
        success: true,
        value: { emails: expect.any(Array) },
      });

      // The token is bob's: another user still gets a challenge.
      const carol = await callTool(server.baseUrl, gmail({ user_id: "carol" }));
      expectError(carol, 400);
      expect(carol.body.missing_requirements.authorization).toHaveLength(1);
    },
  );

  verifies(
    "endpoints.check-url-status",
    "reports failed when the user denies, and the call stays refused",
    async () => {
      const first = await callTool(server.baseUrl, gmail({ user_id: "dave" }));
      const [challenge] = first.body.missing_requirements.authorization;
      const denied = await decide(challenge.url, "deny");
      expect(denied.status).toBe(303);
      expect((await send(challenge.check_url)).body).toEqual({ status: "failed" });
      expectError(await callTool(server.baseUrl, gmail({ user_id: "dave" })), 400);
    },
  );

  verifies("endpoints.check-url-status", "answers an unknown challenge with a 404 JSON error", async () => {
    expectError(await send(`${server.baseUrl}/authorization/challenges/google.nope`), 404);
    expectError(await send(`${server.baseUrl}/authorization/challenges/nothing`), 404);
  });

  it("refuses a consent decision other than approve or deny", async () => {
    const first = await callTool(server.baseUrl, gmail({ user_id: "erin" }));
    const [challenge] = first.body.missing_requirements.authorization;
    const reply = await decide(challenge.url, "maybe");
    expect(reply.status).toBe(400);
    expect((await send(challenge.check_url)).body).toEqual({ status: "pending" });
  });
});
