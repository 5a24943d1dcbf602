/** The Inspector and the API reference in Chromium, against the demo Tool Server (list, call, errors, challenges, API keys, /docs offline) and a server whose catalog breaks the spec. */
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { inspector } from "@otc/inspector";
import { verifies } from "@otc/test-helpers/verifies";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DemoServer, description, field, launchBrowser, screenshot, startDemo, watchPolicy } from "./harness.js";

const API_KEY = "inspector-test-key-5f0c1d2e";
const TWILIO = "twilio-secret-93ab7c";
const JWT_SECRET = "inspector-jwt-secret-2b7e151628aed2a6abf7158809cf4f3c";

let browser: Awaited<ReturnType<typeof launchBrowser>>;
let context: BrowserContext;
let open: DemoServer;
let locked: DemoServer;

beforeAll(async () => {
  [browser, open, locked] = await Promise.all([
    launchBrowser(),
    startDemo(),
    startDemo({ auth: { apiKeys: [API_KEY], jwt: { secret: JWT_SECRET, audiences: ["oxp-tests"] } } }),
  ]);
  context = browser.context;
});

afterAll(async () => {
  await Promise.all([browser?.close(), open?.close(), locked?.close()]);
});

/** A new tab on the Inspector of `server`, once its tools are listed. */
async function inspect(server: DemoServer): Promise<{ page: Page; violations: string[] }> {
  const page = await context.newPage();
  const violations = watchPolicy(page);
  await page.goto(`${server.url}/inspector`);
  return { page, violations };
}

async function choose(page: Page, toolId: string) {
  await page.getByRole("navigation", { name: "Tools" }).getByRole("button", { name: toolId, exact: true }).click();
  await page
    .getByRole("heading", { name: toolId.split("@")[0], exact: false })
    .first()
    .waitFor();
}

const result = (page: Page) => page.getByRole("region", { name: "Result" });

describe("the Inspector against the demo", () => {
  test("lists the tools by toolkit, every version, and searches them", async () => {
    const { page, violations } = await inspect(open);
    await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
    const nav = page.getByRole("navigation", { name: "Tools" });
    for (const id of [
      "Calculator.Add@1.0.0",
      "Greeting.Hello@1.0.0",
      "Greeting.Hello@2.0.0",
      "Gmail.GetEmails@1.2.0",
    ]) {
      await nav.getByRole("button", { name: id, exact: true }).waitFor();
    }
    expect(await nav.getByRole("region", { name: "Toolkit Greeting" }).getByRole("button").count()).toBe(2);
    await screenshot(page, "01-tools");

    await nav.getByRole("searchbox", { name: "Search tools" }).fill("doorbell");
    await nav.getByRole("button", { name: "Calculator.Add@1.0.0" }).waitFor({ state: "detached" });
    expect(await nav.getByRole("button").allTextContents()).toEqual(["Ring0.1.0"]);
    // Descriptions are searched too: "sum" is in no tool name.
    await nav.getByRole("searchbox", { name: "Search tools" }).fill("numbers together");
    expect(await nav.getByRole("button").count()).toBe(1);
    await nav.getByRole("button", { name: "Calculator.Add@1.0.0" }).waitFor();
    expect(violations).toEqual([]);
    await page.close();
  });

  test("shows a definition with its requirements and copies it", async () => {
    const { page } = await inspect(open);
    await choose(page, "Gmail.GetEmails@1.2.0");
    const requirements = page.getByRole("list", { name: "Requirements" });
    await requirements.getByText("Authorization by google").waitFor();
    expect(await requirements.textContent()).toContain("gmail.readonly");
    const definition = JSON.parse((await page.getByLabel("Tool definition").textContent()) ?? "");
    expect(definition.id).toBe("Gmail.GetEmails@1.2.0");
    expect(definition.requirements.user_id).toBe(true);
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: open.url });
    await page.getByRole("button", { name: "Copy definition" }).click();
    await page.getByRole("status").filter({ hasText: "Copied" }).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(JSON.parse(copied)).toEqual(definition);
    // Context fields only where the requirements ask: Gmail wants a user id, Calculator nothing.
    await page.getByLabel("User id").waitFor();
    await choose(page, "Calculator.Add@1.0.0");
    expect(await page.getByLabel("User id").count()).toBe(0);
    await page.close();
  });

  test("calls Calculator.Add through the generated form and shows the value", async () => {
    const { page, violations } = await inspect(open);
    await choose(page, "Calculator.Add@1.0.0");
    await field(page, "a").fill("2");
    await field(page, "b").fill("40");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("Success").waitFor();
    expect(JSON.parse((await result(page).getByLabel("Value").textContent()) ?? "")).toBe(42);
    const history = page.getByRole("list", { name: "Calls" });
    await history.getByText("Calculator.Add@1.0.0", { exact: true }).click();
    const raw = (await history.getByLabel("Raw request").first().textContent()) ?? "";
    expect(raw).toMatch(/^POST http:\/\/127\.0\.0\.1:\d+\/tools\/call/);
    expect(raw).toContain('"a": 2');
    expect(await history.getByLabel("Raw response").first().textContent()).toMatch(/^HTTP 200\n[\s\S]*"value": 42/);
    await screenshot(page, "02-add-success");
    expect(violations).toEqual([]);
    await page.close();
  });

  test("shows a 422's parameter errors on the fields they name, from the form and from raw JSON", async () => {
    const { page } = await inspect(open);
    await choose(page, "Calculator.Add@1.0.0");
    // The form sends what it holds (checking in the page is off by default): without b, the server says so, on b.
    await field(page, "a").fill("1");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("422").waitFor();
    expect(await result(page).getByRole("list", { name: "Parameter errors" }).textContent()).toBe("b: Is required");
    expect(await description(page, "b")).toContain("Is required");
    expect(await description(page, "a")).not.toContain("Is required");
    await screenshot(page, "03-validation-422");

    await page.getByRole("tab", { name: "JSON" }).click();
    await page.getByLabel("Input JSON").fill('{"a": 1, "b": "two"}');
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("b: Must be a number").waitFor();
    await page.getByRole("tab", { name: "Form" }).click();
    expect(await description(page, "b")).toContain("Must be a number");
    expect(await description(page, "a")).not.toContain("Must be a number");
    await page.close();
  });

  test("checks the input in the page first when asked, with Ajv under the page's policy", async () => {
    const { page, violations } = await inspect(open);
    await choose(page, "Calculator.Add@1.0.0");
    await field(page, "a").fill("1");
    await page.getByLabel("Check the input against the schema in the page before sending").check();
    await page.getByRole("button", { name: "Call tool" }).click();
    await page.waitForFunction(() => document.getElementById("input_b__error")?.textContent?.includes("required"));
    expect(await description(page, "b")).toMatch(/required/);
    // Refused in the page: nothing was sent.
    expect(await page.getByRole("list", { name: "Calls" }).getByRole("listitem").count()).toBe(0);
    await field(page, "b").fill("2");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("Success").waitFor();
    expect(violations).toEqual([]);
    await page.close();
  });

  test("calls a tool whose input schema is empty", async () => {
    const { page } = await inspect(open);
    await choose(page, "System.GetTimestamp@1.0.0");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("Success").waitFor();
    const value = JSON.parse((await result(page).getByLabel("Value").textContent()) ?? "");
    expect(Number.isNaN(Date.parse(value.timestamp))).toBe(false);
    await page.close();
  });

  test("reloads itself with ?url= to reach a server on another origin, its policy naming that origin", async () => {
    const { page } = await inspect(open);
    await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
    await page.getByLabel("Server URL").fill(locked.url);
    await page.getByRole("button", { name: "Open server" }).click();
    await page.waitForURL(`${open.url}/inspector?url=${encodeURIComponent(locked.url)}`);
    // Another origin, and no CORS on it: the page names the fix.
    await page.getByRole("status").filter({ hasText: "CORS" }).waitFor();
    expect(await page.getByLabel("Server URL").inputValue()).toBe(locked.url);
    await page.close();
  });

  test("shows Doorbell's tool error with its retry hints", async () => {
    const { page } = await inspect(open);
    await choose(page, "Doorbell.Ring@0.1.0");
    await field(page, "doorbell_id").fill("doorbell99");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("The tool failed: Doorbell ID not found").waitFor();
    const details = (await result(page).getByRole("definition").allTextContents()).join(" | ");
    expect(details).toContain("yes");
    expect(details).toContain("500 ms");
    expect(details).toContain("ids: doorbell42,doorbell84");
    await screenshot(page, "04-tool-error");
    // One attempt per click: the page shows the server's answer, it does not retry on its own.
    await page.getByRole("list", { name: "Calls" }).getByText("Doorbell.Ring@0.1.0", { exact: true }).click();
    expect(await page.getByRole("list", { name: "Calls" }).getByLabel("Raw request").count()).toBe(1);
    await page.close();
  });

  test("walks Gmail's authorization challenge, then retries in one click", async () => {
    const { page, violations } = await inspect(open);
    await choose(page, "Gmail.GetEmails@1.2.0");
    await page.getByLabel("User id").fill("ann");
    await field(page, "query").fill("invoice");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("Authorization required").waitFor();
    const status = page.getByRole("status", { name: "Authorization status" });
    await status.getByText("Authorization pending").waitFor();
    const retry = result(page).getByRole("button", { name: "Retry call" });
    expect(await retry.isDisabled()).toBe(true);
    await screenshot(page, "05-challenge-pending");

    const [consent] = await Promise.all([
      context.waitForEvent("page"),
      page.getByRole("button", { name: "Open authorization page" }).click(),
    ]);
    await consent.waitForLoadState();
    expect(consent.url()).toContain(`${open.url}/demo/authorize/`);
    await consent.getByRole("button", { name: "Approve" }).click();
    await consent.getByText("approved").waitFor();
    await consent.close();

    await status.getByText("Authorization completed").waitFor();
    await retry.click();
    await result(page).getByText("Success").waitFor();
    const value = JSON.parse((await result(page).getByLabel("Value").textContent()) ?? "");
    expect(value.emails.map((email: { id: string }) => email.id)).toEqual(["email_4"]);
    await screenshot(page, "06-challenge-completed");
    expect(violations).toEqual([]);
    await page.close();
  });
});

describe("the Inspector against a demo with authentication on", () => {
  test("connects with an API key, masks it and the secrets in the history", async () => {
    const { page, violations } = await inspect(locked);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByRole("button", { name: "Connect" }).click();
    await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();

    const sent: string[] = [];
    page.on("request", (request) => {
      if (JSON.stringify(request.headers()).includes(API_KEY)) {
        sent.push(new URL(request.url()).origin);
      }
    });
    await choose(page, "SMS.Send@0.1.2");
    await page.getByLabel("Secret TWILIO_API_KEY").fill(TWILIO);
    await field(page, "to").fill("+15550100");
    await field(page, "message").fill("hi");
    await page.getByRole("button", { name: "Call tool" }).click();
    // SMS.Send says it is destructive (its annotations): the page asks first.
    await page.getByRole("alertdialog").getByRole("button", { name: "Call it" }).click();
    await result(page).getByText("Success").waitFor();

    const history = page.getByRole("list", { name: "Calls" });
    await history.getByText("SMS.Send@0.1.2", { exact: true }).click();
    const raw = (await history.getByLabel("Raw request").first().textContent()) ?? "";
    expect(raw).toMatch(/oxp-api-key: •+/i);
    expect(raw).toContain('"value": "••••••"');
    expect(raw).not.toContain(API_KEY);
    expect(raw).not.toContain(TWILIO);
    expect(await page.content()).not.toContain(API_KEY);
    // Only the named server ever got the key, and the page kept nothing.
    expect(sent.length).toBeGreaterThan(0);
    expect(new Set(sent)).toEqual(new Set([locked.url]));
    const stored = await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie]);
    expect(stored).toEqual([0, 0, ""]);
    await screenshot(page, "07-api-key-history");
    expect(violations).toEqual([]);
    await page.close();
  });
});

describe("the Inspector with a JWT secret", () => {
  test("signs HS256 JWTs in the page, sends them as bearer tokens, masks them in the history", async () => {
    const { page, violations } = await inspect(locked);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    const tokens: string[] = [];
    page.on("request", (request) => {
      const authorization = request.headers().authorization;
      if (authorization) {
        tokens.push(`${new URL(request.url()).origin} ${authorization}`);
      }
    });
    await page.getByLabel("JWT secret").fill(JWT_SECRET);
    await page.getByLabel("JWT audience").fill("oxp-tests");
    await page.getByRole("button", { name: "Connect" }).click();
    await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
    await choose(page, "Calculator.Add@1.0.0");
    await field(page, "a").fill("1");
    await field(page, "b").fill("2");
    await page.getByRole("button", { name: "Call tool" }).click();
    await result(page).getByText("Success").waitFor();

    // Every request carried a JWT signed with the secret, to the named server only; the secret itself never left.
    expect(tokens.length).toBeGreaterThanOrEqual(2);
    for (const entry of tokens) {
      expect(entry).toMatch(new RegExp(`^${locked.url} Bearer [\\w-]+\\.[\\w-]+\\.[\\w-]+$`));
    }
    const jwt = tokens[0]?.split(" ")[2] ?? "";
    const claims = JSON.parse(Buffer.from(jwt.split(".")[1] ?? "", "base64url").toString());
    expect(claims.aud).toBe("oxp-tests");
    // The form's default subject: a server refuses a JWT without a sub.
    expect(claims.sub).toBe("oxp-inspector");
    expect(tokens.join(" ")).not.toContain(JWT_SECRET);

    const history = page.getByRole("list", { name: "Calls" });
    await history.getByText("Calculator.Add@1.0.0", { exact: true }).click();
    const raw = (await history.getByLabel("Raw request").first().textContent()) ?? "";
    expect(raw).toContain("authorization: Bearer ••••••");
    expect(raw).not.toContain(jwt);
    expect(violations).toEqual([]);
    await page.close();
  });
});

describe("the API reference at /docs", () => {
  test("renders the OpenAPI document offline, every request served by the server", async () => {
    const page = await context.newPage();
    const violations = watchPolicy(page);
    const blocked: string[] = [];
    const failed: string[] = [];
    const origin = new URL(open.url).origin;
    await page.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(`${origin}/`) || url.startsWith("data:") || url.startsWith("blob:")) {
        return route.continue();
      }
      blocked.push(url);
      return route.abort();
    });
    page.on("requestfailed", (request) => failed.push(`${request.url()} ${request.failure()?.errorText}`));
    page.on("response", (response) => {
      if (response.status() >= 400) {
        failed.push(`${response.url()} ${response.status()}`);
      }
    });
    await page.goto(`${open.url}/docs`);
    await page.getByRole("heading", { name: "Open eXecution Protocol (OXP) Tool Server" }).first().waitFor();
    await page.getByText("/tools/call").first().waitFor();
    await page.waitForLoadState("networkidle");
    await screenshot(page, "08-docs", false);
    expect(blocked).toEqual([]);
    expect(failed).toEqual([]);
    expect(violations).toEqual([]);
    await page.close();
  });
});

describe("the Inspector against a server whose catalog breaks the spec", () => {
  /** A catalog no @otc/server would list: one tool's input schema has a nested $ref that points nowhere. */
  const catalog = [
    {
      id: "Bad.Ref@1.0.0",
      name: "Bad_Ref",
      version: "1.0.0",
      description: "A tool whose input schema has a nested $ref.",
      input_schema: { type: "object", properties: { a: { description: "A.", $ref: "#/$defs/missing" } } },
      output_schema: {},
    },
    {
      id: "Big.Answer@1.0.0",
      name: "Big_Answer",
      version: "1.0.0",
      description: "Answers with 20 MB.",
      input_schema: { type: "object", properties: {} },
      output_schema: {},
    },
    {
      id: "Good.Echo@1.0.0",
      name: "Good_Echo",
      version: "1.0.0",
      description: "Echoes its input.",
      input_schema: {
        type: "object",
        properties: { text: { type: "string", description: "What to echo." } },
        required: ["text"],
      },
      output_schema: {},
    },
  ];
  let server: Server;
  let url: string;
  const calls: { tool_id?: string; input?: unknown }[] = [];

  beforeAll(async () => {
    const pages = inspector();
    server = createHttpServer((req, res) => {
      const path = req.url ?? "";
      if (/^\/(inspector|docs)(\/|$|\?)/.test(path)) {
        return pages(req, res);
      }
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { "Content-Type": "application/json", "OXP-Version": "1.0" });
        res.end(JSON.stringify(body));
      };
      if (req.method === "POST" && path === "/tools/call") {
        let text = "";
        req.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        req.on("end", () => {
          const body = JSON.parse(text) as { call_id: string; tool_id: string; input: unknown };
          calls.push(body);
          if (body.tool_id === "Big.Answer@1.0.0") {
            // 20 MB, streamed as the page reads it: more than the client reads (16 MiB) or the history keeps.
            res.writeHead(200, { "Content-Type": "application/json", "OXP-Version": "1.0" });
            res.on("error", () => {});
            res.write(`{"call_id":${JSON.stringify(body.call_id)},"duration":1,"success":true,"value":"`);
            const chunk = "A".repeat(64 * 1024);
            let sent = 0;
            const more = () => {
              while (sent < 320 && !res.destroyed) {
                sent++;
                if (!res.write(chunk)) {
                  return void res.once("drain", more);
                }
              }
              if (!res.destroyed) {
                res.end('"}');
              }
            };
            more();
            return;
          }
          answer(200, { call_id: body.call_id, duration: 1, success: true, value: { echoed: body.input } });
        });
        return;
      }
      if (req.method === "GET" && /^\/tools(\?|$)/.test(path)) {
        return answer(200, { items: catalog });
      }
      answer(404, { message: "Not found" });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
  });

  // The client's side of the rule: a server that breaks it.
  verifies(
    "definitions.self-contained",
    "shows an error for the tool whose schema the form cannot follow; the rest of the page keeps working",
    async () => {
      const page = await context.newPage();
      const violations = watchPolicy(page);
      await page.goto(`${url}/inspector`);
      await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
      await choose(page, "Bad.Ref@1.0.0");
      const broken = page
        .getByRole("alert")
        .filter({ hasText: "The form cannot be built from this tool's input schema" });
      await broken.waitFor();
      expect(await broken.textContent()).toContain("#/$defs/missing");
      await screenshot(page, "11-broken-schema");
      // The definition is still shown, and the input can still be written as JSON and sent.
      expect(JSON.parse((await page.getByLabel("Tool definition").textContent()) ?? "").id).toBe("Bad.Ref@1.0.0");
      await page.getByRole("button", { name: "Write the input as JSON" }).click();
      await page.getByLabel("Input JSON").fill('{"a": 1}');
      await page.getByRole("button", { name: "Call tool" }).click();
      await result(page).getByText("Success").waitFor();
      expect(calls.at(-1)).toMatchObject({ tool_id: "Bad.Ref@1.0.0", input: { a: 1 } });

      // The other tool's form works as before, and the broken one shows its error again, alone.
      await choose(page, "Good.Echo@1.0.0");
      expect(await page.getByRole("alert").count()).toBe(0);
      await field(page, "text").fill("hi");
      await page.getByRole("button", { name: "Call tool" }).click();
      await result(page).getByText("Success").waitFor();
      expect(calls.at(-1)).toMatchObject({ tool_id: "Good.Echo@1.0.0", input: { text: "hi" } });
      await choose(page, "Bad.Ref@1.0.0");
      await broken.waitFor();
      await page.getByRole("heading", { name: "OXP Inspector" }).waitFor();
      expect(await page.getByRole("navigation", { name: "Tools" }).getByRole("button").count()).toBe(3);
      expect(violations).toEqual([]);
      await page.close();
    },
  );

  test("keeps only the head of a huge answer in its history, and fails the call", async () => {
    const page = await context.newPage();
    await page.goto(`${url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Connected to" }).waitFor();
    await choose(page, "Big.Answer@1.0.0");
    await page.getByRole("button", { name: "Call tool" }).click();
    const history = page.getByRole("list", { name: "Calls" });
    await history.getByText("Big.Answer@1.0.0", { exact: true }).click();
    const raw = (await history.getByLabel("Raw response").first().textContent()) ?? "";
    expect(raw).toMatch(/^HTTP 200\n/);
    expect(raw).toContain("the history keeps the first 262144 bytes of this answer");
    expect(raw.length).toBeLessThan(300_000);
    // The call fails (in Chromium a body cut short by the client reads as a failed fetch), the page lives on.
    await result(page)
      .getByText(/larger than the client accepts|Could not reach/)
      .waitFor();
    await page.getByRole("heading", { name: "OXP Inspector" }).waitFor();
    await page.close();
  });
});
