/** Scenarios for docs/protocol.md section 4: user_id, secrets, authorization challenges. */
import {
  call,
  callOk,
  check,
  checkError,
  checkSchema,
  checkStatus,
  need,
  type Scenario,
  truncate,
} from "../scenario.js";

export const requirementScenarios: Scenario[] = [
  {
    id: "requirements.user-id",
    section: "4",
    rules: ["requirements.user-id"],
    level: "MUST",
    title: "A tool that requires user_id, called without one, is a 400 with missing_requirements.user_id",
    async run(ctx) {
      const fixture = need(ctx.fixture.userId, "the fixture names no tool that requires user_id");
      const answer = await call(ctx, { tool_id: fixture.tool_id, input: fixture.input });
      checkError(answer, 400);
      const missing = (answer.json as { missing_requirements?: { user_id?: boolean } }).missing_requirements;
      check(missing?.user_id === true, `missing_requirements is ${JSON.stringify(missing)}`);
    },
  },
  {
    id: "requirements.secret.missing",
    section: "4",
    rules: ["requirements.secrets-missing", "requirements.secrets-never-leak"],
    level: "MUST",
    title: "A missing secret is a 400 naming its id and never a value",
    async run(ctx) {
      const fixture = need(ctx.fixture.secret, "the fixture names no tool that requires a secret");
      const decoy = "oxp-conformance-decoy-value";
      const answer = await call(ctx, {
        tool_id: fixture.tool_id,
        input: fixture.input,
        context: { secrets: [{ id: "OXP_CONFORMANCE_OTHER", value: decoy }] },
      });
      checkError(answer, 400);
      check(
        answer.text.includes(fixture.secret_id),
        `the 400 does not name ${fixture.secret_id}: ${truncate(answer.text)}`,
      );
      check(!answer.text.includes(decoy), "the 400 repeats a secret value");
    },
  },
  {
    id: "requirements.secret.given",
    section: "4",
    rules: ["requirements.secrets-missing"],
    level: "MUST",
    title: "A call that sends the secret gets past the requirement",
    async run(ctx) {
      const fixture = need(ctx.fixture.secret, "the fixture names no tool that requires a secret");
      await callOk(ctx, {
        tool_id: fixture.tool_id,
        input: fixture.input,
        context: { secrets: [{ id: fixture.secret_id, value: "oxp-conformance-secret" }] },
      });
    },
  },
  {
    id: "requirements.authorization.token",
    section: "4",
    rules: ["requirements.authorization-token"],
    level: "MUST",
    title: "A call that sends a token for the provider gets past the requirement",
    async run(ctx) {
      const fixture = need(ctx.fixture.authorization, "the fixture names no tool that requires an authorization");
      await callOk(ctx, {
        tool_id: fixture.tool_id,
        input: fixture.input,
        context: {
          user_id: fixture.user_id,
          authorization: [{ id: fixture.provider, token: "oxp-conformance-token" }],
        },
      });
    },
  },
  {
    id: "requirements.authorization.challenge",
    section: "4",
    rules: ["requirements.challenge-400", "endpoints.check-url-status"],
    level: "MUST",
    title:
      "Without a token: a 400 with a challenge {id, url, check_url}; check_url answers pending; an unknown one 404",
    async run(ctx) {
      const fixture = need(ctx.fixture.authorization, "the fixture names no tool that requires an authorization");
      const answer = await call(ctx, {
        tool_id: fixture.tool_id,
        input: fixture.input,
        context: { user_id: `${fixture.user_id}-${Date.now()}` },
      });
      checkError(answer, 400);
      const challenges = (
        answer.json as { missing_requirements?: { authorization?: { id: string; url: string; check_url?: string }[] } }
      ).missing_requirements?.authorization;
      check(Array.isArray(challenges) && challenges.length > 0, `no challenge in ${truncate(answer.text)}`);
      const [challenge] = challenges;
      check(challenge?.check_url, "the challenge has no check_url");
      if (new URL(challenge.check_url).origin !== ctx.http.origin) {
        return; // elsewhere: not ours to poll
      }
      const status = await ctx.http.send({ url: challenge.check_url });
      checkStatus(status, 200);
      checkSchema("AuthorizationChallengeCheckResponse", status.json, "check_url");
      check(
        (status.json as { status: string }).status === "pending",
        `a new challenge is ${(status.json as { status: string }).status}`,
      );
      const unknown = challenge.check_url.replace(/[^/]+$/, "oxp-conformance-no-such-challenge");
      checkError(await ctx.http.send({ url: unknown }), 404);
    },
  },
];
