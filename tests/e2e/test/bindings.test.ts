// The demo's typed bindings (made by otc codegen): type-checked inputs, typed values, failures as OxpToolCallError;
// their asynchronous variant runs a call as a task (docs/protocol.md 9.3), with its progress and a typed result.
import { createClient, OxpLocalError, OxpResponseError, OxpToolCallError, OxpValidationError } from "@otc/client";
import { createAsyncTools, createTools, type Tools, toolIds } from "@otc/demo/bindings";
import type { CallProgress } from "@otc/types";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { type Demo, startDemo } from "./demo.js";

let demo: Demo;
beforeAll(async () => {
  demo = await startDemo();
});
afterAll(() => demo.close());

describe("typed bindings", () => {
  it("call each tool with a typed input and resolve with a typed value", async () => {
    const tools = createTools(createClient({ baseUrl: demo.url }));
    const sum = await tools["Calculator.Add@1.0.0"]({ a: 1, b: 2 });
    expectTypeOf(sum).toEqualTypeOf<number>();
    expect(sum).toBe(3);

    const greeting = await tools["Greeting.Hello@2.0.0"]({ name: "Ann", language: "es" });
    expectTypeOf(greeting.language).toEqualTypeOf<"en" | "fr" | "es">();
    expect(greeting).toEqual({ message: "Hola, Ann!", language: "es" });

    const rang = await tools["Doorbell.Ring@0.1.0"]({ doorbell_id: "doorbell42" });
    expectTypeOf(rang).toEqualTypeOf<null>();

    const mail = await tools["Gmail.GetEmails@1.2.0"](
      { query: "receipt" },
      { context: { user_id: "u", authorization: [{ id: "google", token: "t" }] } },
    );
    expectTypeOf(mail.emails[0]).toEqualTypeOf<{ id: string; subject: string; snippet: string } | undefined>();
    expect(mail.emails.map((email) => email.id)).toEqual(["email_2"]);
  });

  it("reject wrong inputs at compile time", () => {
    const tools = createTools(createClient({ baseUrl: demo.url }));
    // @ts-expect-error b must be a number
    const wrongType = () => tools["Calculator.Add@1.0.0"]({ a: 1, b: "2" });
    // @ts-expect-error b is required
    const missing = () => tools["Calculator.Add@1.0.0"]({ a: 1 });
    // @ts-expect-error no such tool
    const unknown = () => tools["Calculator.Subtract@1.0.0"];
    // @ts-expect-error not one of en, fr, es
    const language = () => tools["Greeting.Hello@2.0.0"]({ name: "Ann", language: "de" });
    expect([wrongType, missing, unknown, language].every((fn) => typeof fn === "function")).toBe(true);
  });

  it("throw OxpToolCallError when the tool fails, and the server's errors as usual", async () => {
    const tools = createTools(createClient({ baseUrl: demo.url, retry: { maxAttempts: 1 } }));
    const failure = await tools["Doorbell.Ring@0.1.0"]({ doorbell_id: "x" }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OxpToolCallError);
    expect((failure as OxpToolCallError).error).toMatchObject({
      message: "Doorbell ID not found",
      retry_after_ms: 500,
    });
    // A tool's failure came in a 200: neither an error status the server answered nor a local failure.
    expect(failure).not.toBeInstanceOf(OxpResponseError);
    expect(failure).not.toBeInstanceOf(OxpLocalError);
    const invalid = await tools["Counter.Increment@1.0.0"]({ by: 0 }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(OxpValidationError);
    expect(invalid).toMatchObject({ status: 422 });
  });

  it("run a tool as a task: its progress while it runs, then its typed value", async () => {
    const tools = createAsyncTools(createClient({ baseUrl: demo.url }));
    const call = await tools["System.Sleep@1.0.0"]({ ms: 1_000 });
    expect(call.task).toBe(true);
    const progress: CallProgress[] = [];
    for await (const update of call.progress) {
      progress.push(update);
    }
    // The demo reports every 100 ms and the server keeps a few a second: some, in order, each with the total.
    expect(progress.length).toBeGreaterThan(0);
    for (const [i, update] of progress.entries()) {
      expect(update).toMatchObject({ total: 1_000, message: expect.stringContaining(String(update.progress)) });
      expect(update.progress).toBeGreaterThan(progress[i - 1]?.progress ?? 0);
      expect(update.progress).toBeLessThanOrEqual(1_000);
    }
    const value = await call.result();
    expectTypeOf(value).toEqualTypeOf<{ slept_ms: number }>();
    expect(value).toEqual({ slept_ms: 1_000 });
    expect(await call.status()).toMatchObject({ call_id: call.callId, status: "completed" });
  });

  it("cancel a task: the tool stops, and its result rejects with OxpToolCallError", async () => {
    const tools = createAsyncTools(createClient({ baseUrl: demo.url }));
    const call = await tools["System.Sleep@1.0.0"]({ ms: 30_000 }, { callId: "bindings-cancel" });
    const reader = call.progress[Symbol.asyncIterator]();
    expect(await reader.next()).toMatchObject({ done: false, value: { total: 30_000 } });
    await reader.return?.();
    expect(await call.cancel()).toMatchObject({ call_id: "bindings-cancel", status: "cancelled" });
    const failure = await call.result().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OxpToolCallError);
    expect(failure).toMatchObject({ callId: "bindings-cancel", error: { message: "The call was cancelled" } });
    // @ts-expect-error ms must be a number, as for the synchronous binding
    const wrongType = () => tools["System.Sleep@1.0.0"]({ ms: "1" });
    expect(typeof wrongType).toBe("function");
  });

  it("list every tool of the catalog", () => {
    expectTypeOf<keyof Tools>().toEqualTypeOf<(typeof toolIds)[number]>();
    expect(toolIds).toHaveLength(9);
  });
});
