// @otc/ai's shared half against a real server: which tools are taken, under which names, and what each outcome says.
import { createClient, type OxpClient, OxpResponseError } from "@otc/client";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import type { ToolAnnotations, ToolDefinition } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oxpToolSpecs, selectTools } from "../src/index.js";
import { startFixtureServer } from "./fixture-server.js";

let server: RunningServer;
let client: OxpClient;

beforeAll(async () => {
  server = await startFixtureServer();
  client = createClient({ baseUrl: server.url });
});
afterAll(async () => {
  await server?.close();
});

const byName = async (options: Parameters<typeof oxpToolSpecs>[1] = {}) =>
  new Map((await oxpToolSpecs(client, options)).map((spec) => [spec.name, spec]));

describe("oxpToolSpecs", () => {
  it("takes every tool in its latest version, under its model name, with an object schema", async () => {
    const specs = await byName();
    expect(specs.get("Greeting_Hello")?.definition.id).toBe("Greeting.Hello@2.0.0");
    expect(specs.get("Calculator_Add")?.inputSchema).toMatchObject({ type: "object", required: ["a", "b"] });
    expect([...specs.values()].filter((spec) => spec.definition.id.startsWith("Greeting."))).toHaveLength(1);
  });

  it("asks approval for the tools the server annotates destructive, or as the option says", async () => {
    const specs = await byName();
    expect(specs.get("SMS_Send")?.needsApproval).toBe(true);
    expect(specs.get("Calculator_Add")?.needsApproval).toBe(false);
    const never = await byName({ approval: "never" });
    expect(never.get("SMS_Send")?.needsApproval).toBe(false);
    const picked = await byName({ approval: (tool) => tool.id.startsWith("Calculator.") });
    expect(picked.get("Calculator_Add")?.needsApproval).toBe(true);
    expect(picked.get("SMS_Send")?.needsApproval).toBe(false);
  });

  it("takes an absent hint as the protocol does: a tool not said to be safe asks approval", async () => {
    const noted = (name: string, annotations?: ToolAnnotations) =>
      defineTool({
        toolkit: "Notes",
        name,
        version: "1.0.0",
        description: `${name} a note.`,
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
        outputSchema: { type: "string" },
        ...(annotations === undefined ? {} : { annotations }),
        run: () => "done",
      });
    const notes = await listen(
      createServer({
        tools: [
          noted("Read", { read_only: true }),
          noted("Append", { read_only: false, destructive: false }),
          noted("Rewrite", { read_only: false }),
          noted("Purge", { title: "Purge the notes" }),
          noted("Touch"),
        ],
        logger: false,
      }),
      { port: 0 },
    );
    try {
      const specs = await oxpToolSpecs(createClient({ baseUrl: notes.url }));
      expect(Object.fromEntries(specs.map((spec) => [spec.name, spec.needsApproval]))).toEqual({
        Notes_Read: false,
        Notes_Append: false,
        Notes_Rewrite: true,
        Notes_Purge: true,
        Notes_Touch: true,
      });
    } finally {
      await notes.close();
    }
  });

  it("selects by id and toolkit, pins versions, and names two versions of one tool apart", async () => {
    const specs = await byName({ tools: ["Calculator.Add", "Greeting.Hello@1.0.0"], toolkits: ["System"] });
    expect([...specs.keys()].sort()).toEqual([
      "Calculator_Add",
      "Greeting_Hello",
      "System_GetTimestamp",
      "System_Sleep",
    ]);
    expect(specs.get("Greeting_Hello")?.definition.version).toBe("1.0.0");

    const both = await byName({ tools: ["Greeting.Hello@1.0.0", "Greeting.Hello@2.0.0"] });
    expect([...both.keys()].sort()).toEqual(["Greeting_Hello_1_0_0", "Greeting_Hello_2_0_0"]);
  });

  it("refuses an id the server does not list, naming it", async () => {
    await expect(oxpToolSpecs(client, { tools: ["Calculator.Add", "Nope.Missing"] })).rejects.toThrow(
      /no tool "Nope\.Missing"/,
    );
    await expect(oxpToolSpecs(client, { tools: ["Calculator.Add@9.9.9"] })).rejects.toThrow(/Calculator\.Add@9\.9\.9/);
  });

  it("refuses a toolkit the server does not list, rather than leave the agent without its tools", async () => {
    await expect(oxpToolSpecs(client, { toolkits: ["Calculator", "Calender"] })).rejects.toThrow(
      'The server lists no toolkit "Calender"',
    );
    await expect(oxpToolSpecs(client, { tools: ["Nope.Missing"], toolkits: ["Calender"] })).rejects.toThrow(
      'The server lists no tool "Nope.Missing" and no toolkit "Calender"',
    );
  });

  it("tells the model a value, a tool's error, a wrong input and an authorization to ask for", async () => {
    const specs = await byName({ userId: "ai-core-test" });
    const add = await specs.get("Calculator_Add")?.call({ a: 2, b: 3 });
    expect(add).toMatchObject({ kind: "value", value: 5, text: "5" });

    const wrong = await specs.get("Calculator_Add")?.call({ a: "two", b: 3 });
    expect(wrong?.kind).toBe("invalid-input");
    expect(wrong?.text).toMatch(/Calculator_Add does not match its schema:\n- a: /);

    const ring = await specs.get("Doorbell_Ring")?.call({ doorbell_id: "no-such-doorbell" });
    expect(ring?.kind).toBe("tool-error");
    expect(ring?.text).toMatch(/^Error: Doorbell ID not found/);

    const gmail = await specs.get("Gmail_GetEmails")?.call({});
    expect(gmail?.kind).toBe("authorization");
    if (gmail?.kind === "authorization") {
      expect(gmail.challenges[0]?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
      expect(gmail.text).toContain(gmail.challenges[0]?.url);
    }
  });

  it("calls as a task held up to 30 s, so that an abort can cancel it: a quick call is one request, answered 200", async () => {
    const sent: { prefer: string | null; extensions: string | null; status: number }[] = [];
    const recording = createClient({
      baseUrl: server.url,
      fetch: async (input, init) => {
        const request = new Request(input, init);
        const response = await fetch(request);
        if (request.method === "POST") {
          const { headers } = request;
          sent.push({
            prefer: headers.get("prefer"),
            extensions: headers.get("oxp-extensions"),
            status: response.status,
          });
        }
        return response;
      },
    });
    const [add] = await oxpToolSpecs(recording, { tools: ["Calculator.Add"] });
    expect(await add?.call({ a: 2, b: 3 })).toMatchObject({ kind: "value", value: 5 });
    expect(sent).toEqual([
      { prefer: expect.stringMatching(/respond-async.*wait=30/), extensions: "tasks", status: 200 },
    ]);
  });

  it("tells a 422 and a challenge apart when they come from another copy of @otc/client, as npm may install", async () => {
    // The application's client, of another version, brings its own error classes, which this package's do not know.
    const specifier = new URL("../../client/src/errors.ts?another-copy", import.meta.url).href;
    const copy = (await import(specifier)) as typeof import("@otc/client");
    const rethrown = <T>(call: Promise<T>) =>
      call.catch((error: unknown) => {
        throw error instanceof OxpResponseError ? copy.errorFromResponse(error.status, error.body) : error;
      });
    const theirs: OxpClient = {
      ...client,
      callTool: (...args) => rethrown(client.callTool(...args)),
      callToolAsync: (...args) => rethrown(client.callToolAsync(...args)),
    };
    const specs = new Map(
      (await oxpToolSpecs(theirs, { userId: "ai-core-copy" })).map((spec) => [spec.name, spec] as const),
    );

    const wrong = await specs.get("Calculator_Add")?.call({ a: "two", b: 3 });
    expect(wrong).toMatchObject({ kind: "invalid-input", error: { name: "OxpValidationError", status: 422 } });
    expect(wrong?.text).toMatch(/Calculator_Add does not match its schema:\n- a: /);
    const gmail = await specs.get("Gmail_GetEmails")?.call({});
    expect(gmail?.kind).toBe("authorization");
    expect(gmail?.text).toMatch(/Gmail_GetEmails needs the user's authorization[\s\S]*- http:\/\/127\.0\.0\.1:\d+\//);
    // Anything else still throws as the client threw it.
    const [sms] = await oxpToolSpecs(theirs, { tools: ["SMS.Send"] });
    await expect(sms?.call({ to: "+15550100", message: "hi" })).rejects.toMatchObject({ status: 400 });
  });
});

/** A listed tool of the Versioned toolkit, in one version. */
const versioned = (name: string, version: string): ToolDefinition => ({
  id: `Versioned.${name}@${version}`,
  name: `Versioned_${name}`,
  description: `${name}, version ${version}.`,
  version,
  input_schema: { type: "object" },
  output_schema: null,
});

describe("selectTools", () => {
  const listed = ["1.0.0", "1.9.0", "1.10.0", "2.0.0"].map((version) => versioned("Tool", version));

  // docs/protocol.md 3.4: `@x.y.z` that version, `@x` exactly x.0.0 (not the newest x.*), none the highest.
  it.each([
    ["no version: the highest, compared numerically", "Versioned.Tool", "2.0.0"],
    ["@1: exactly 1.0.0, not the newest 1.x", "Versioned.Tool@1", "1.0.0"],
    ["@1.0.0: that version", "Versioned.Tool@1.0.0", "1.0.0"],
    ["@1.10.0: that version", "Versioned.Tool@1.10.0", "1.10.0"],
    ["@2: exactly 2.0.0", "Versioned.Tool@2", "2.0.0"],
  ])("takes %s", (_name, selector, want) => {
    expect(selectTools(listed, { tools: [selector] }).map((tool) => tool.version)).toEqual([want]);
  });

  it.each([
    ["@3: no 3.0.0 listed", "Versioned.Tool@3"],
    ["@1.2.0: no such version", "Versioned.Tool@1.2.0"],
    ["@01: not a version (no leading zeros)", "Versioned.Tool@01"],
    ["another tool", "Versioned.Other"],
  ])("refuses %s", (_name, selector) => {
    expect(() => selectTools(listed, { tools: [selector] })).toThrow(
      `The server lists no tool ${JSON.stringify(selector)}`,
    );
  });

  it("takes @1 from the server, whose Greeting.Hello has versions 1.0.0 and 2.0.0", async () => {
    const specs = await byName({ tools: ["Greeting.Hello@1"] });
    expect([...specs.values()].map((spec) => spec.definition.id)).toEqual(["Greeting.Hello@1.0.0"]);
  });
});
