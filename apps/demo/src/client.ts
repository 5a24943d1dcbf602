/**
 * `npm run client -w @otc/demo [-- URL]`: calls every demo tool over HTTP, as an agent would, and exits
 * non-zero on the first unexpected result. URL defaults to OXP_URL, then http://127.0.0.1:8080.
 * Sends OXP_API_KEY when set. For a demo without Example Accounts: with it, Gmail's challenge is a connection
 * flow that only a browser signed in to the demo finishes, and there is no consent page to approve.
 */
// biome-ignore-all lint/suspicious/noConsole: the demo client is a script whose output is what it shows
import { randomUUID } from "node:crypto";
import { isDeepStrictEqual } from "node:util";

const baseUrl = (process.argv[2] ?? process.env.OXP_URL ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
const auth: Record<string, string> = process.env.OXP_API_KEY ? { "OXP-API-Key": process.env.OXP_API_KEY } : {};
let failures = 0;
let passes = 0;

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the checks below read arbitrary JSON answers.
  body: any;
}

async function request(path: string, init: RequestInit = {}): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    ...init,
    headers: { "OXP-Version": "1.0", ...auth, ...(init.headers as Record<string, string>) },
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

const call = (body: Record<string, unknown>) =>
  request("/tools/call", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });

function check(name: string, ok: boolean, detail: unknown): void {
  if (ok) {
    passes++;
    console.log(`ok   ${name}`);
  } else {
    failures++;
    console.log(`FAIL ${name}: ${JSON.stringify(detail)}`);
  }
}

async function expectValue(name: string, body: Record<string, unknown>, expected: (value: unknown) => boolean) {
  const answer = await call(body);
  check(name, answer.status === 200 && answer.body?.success === true && expected(answer.body.value), answer);
}

async function main(): Promise<void> {
  const health = await request("/health");
  check("GET /health is 200", health.status === 200, health);
  const tools = await request("/tools");
  const ids = (tools.body?.items ?? []).map((tool: { id: string }) => tool.id).sort();
  check("GET /tools lists the nine demo tools", ids.length === 9, ids);

  await expectValue(
    "Calculator.Add adds",
    { tool_id: "Calculator.Add@1.0.0", input: { a: 10, b: 5 } },
    (v) => v === 15,
  );
  await expectValue(
    "Doorbell.Ring rings",
    { tool_id: "Doorbell.Ring", input: { doorbell_id: "doorbell42" } },
    (v) => v === null,
  );
  const missing = await call({ tool_id: "Doorbell.Ring", input: { doorbell_id: "doorbell1" } });
  check(
    "Doorbell.Ring fails with retry hints for an unknown id",
    missing.status === 200 &&
      isDeepStrictEqual(missing.body.error, {
        message: "Doorbell ID not found",
        developer_message: "The doorbell with ID 'doorbell1' does not exist.",
        can_retry: true,
        additional_prompt_content: "ids: doorbell42,doorbell84",
        retry_after_ms: 500,
      }),
    missing,
  );
  await expectValue("System.GetTimestamp returns a date-time", { tool_id: "System.GetTimestamp" }, (v) =>
    Number.isFinite(Date.parse((v as { timestamp: string }).timestamp)),
  );
  await expectValue(
    "SMS.Send reports sent",
    {
      tool_id: "SMS.Send",
      input: { to: "+15550100", message: "hi" },
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "demo" }] },
    },
    (v) => isDeepStrictEqual(v, { status: "sent" }),
  );
  await expectValue(
    "Greeting.Hello@1 returns a string",
    { tool_id: "Greeting.Hello@1", input: { name: "Ada" } },
    (v) => v === "Hello, Ada!",
  );
  await expectValue(
    "Greeting.Hello (latest) returns an object",
    { tool_id: "Greeting.Hello", input: { name: "Ada", language: "fr" } },
    (v) => isDeepStrictEqual(v, { message: "Bonjour, Ada!", language: "fr" }),
  );

  const callId = randomUUID();
  const first = await call({ tool_id: "Counter.Increment", call_id: callId, input: { by: 1 } });
  const again = await call({ tool_id: "Counter.Increment", call_id: callId, input: { by: 1 } });
  check(
    "Counter.Increment does not add twice for one call_id",
    isDeepStrictEqual(first.body, again.body) && first.body?.success,
    [first, again],
  );
  await expectValue("System.Sleep sleeps", { tool_id: "System.Sleep", input: { ms: 10 } }, (v) =>
    isDeepStrictEqual(v, { slept_ms: 10 }),
  );

  // Gmail: the server raises a challenge; a user approves it on the consent page; the same call then succeeds.
  const user = `client-${randomUUID()}`;
  const gmail = { tool_id: "Gmail.GetEmails", input: { query: "receipt" }, context: { user_id: user } };
  const challenged = await call(gmail);
  const challenge = challenged.body?.missing_requirements?.authorization?.[0];
  check(
    "Gmail.GetEmails raises an authorization challenge",
    challenged.status === 400 && Boolean(challenge?.url),
    challenged,
  );
  if (challenge) {
    // The page's form carries an anti-CSRF token; a user's browser sends it back with the click.
    const page = await fetch(challenge.url).then((response) => response.text());
    const csrf = /name="csrf" value="([^"]*)"/.exec(page)?.[1] ?? "";
    const approve = await fetch(challenge.url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `action=approve&csrf=${encodeURIComponent(csrf)}`,
      redirect: "manual",
    });
    check("the consent page takes the approval", approve.status === 303, approve.status);
    const status = await fetch(challenge.check_url, { headers: auth }).then((response) => response.json());
    check("check_url reports completed", isDeepStrictEqual(status, { status: "completed" }), status);
    await expectValue(
      "Gmail.GetEmails succeeds once authorized",
      gmail,
      (v) => (v as { emails: unknown[] }).emails.length === 1,
    );
  }

  const invalid = await call({ tool_id: "Calculator.Add", input: { a: 1, b: "two" } });
  check(
    "invalid input is a 422 with parameter_errors",
    invalid.status === 422 && invalid.body?.parameter_errors?.b !== undefined,
    invalid,
  );
}

try {
  await main();
} catch (error) {
  failures++;
  console.log(`FAIL could not talk to ${baseUrl}: ${error instanceof Error ? error.message : String(error)}`);
}
console.log(`${passes} passed, ${failures} failed`);
process.exitCode = failures === 0 ? 0 : 1;
