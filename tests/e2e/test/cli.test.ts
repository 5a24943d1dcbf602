// The otc CLI end to end against the real demo server: in-process through run(argv, io), plus a smoke test of the installed bin.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { run } from "@otc/cli";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { type Demo, decide, startDemo } from "./demo.js";

const here = path.dirname(fileURLToPath(import.meta.url));
/** The committed launcher npm links as `otc`. */
const otcBin = path.resolve(here, "../../../packages/cli/bin/otc.js");
let demo: Demo;
let locked: Demo;
let tmp: string;

beforeAll(async () => {
  [demo, locked] = await Promise.all([startDemo(), startDemo({ auth: { apiKeys: ["cli-key"] } })]);
  tmp = await mkdtemp(path.join(os.tmpdir(), "otc-cli-"));
});
afterAll(async () => {
  await Promise.all([demo.close(), locked.close(), rm(tmp, { recursive: true, force: true })]);
});

/**
 * Runs `otc` in this process, as its bin would with these arguments and environment; resolves with its
 * exit code and output. `onStderr` sees each write as it happens (a user reading the terminal).
 */
async function otc(
  args: string[],
  env: Record<string, string> = {},
  onStderr?: (text: string) => void,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
      onStderr?.(stderr);
    },
    env: { OXP_URL: demo.url, ...env },
  });
  return { code, stdout, stderr };
}

describe("the installed bin", () => {
  it("runs as a process: help, and a call with its exit code", async () => {
    // No time limit of its own: a busy machine starts Node slowly. A child that outlives the test is killed.
    const exec = (args: string[]) =>
      new Promise<{ code: number; stdout: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          [otcBin, ...args],
          { env: { PATH: process.env.PATH ?? "", OXP_URL: demo.url } },
          (error, stdout) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout }),
        );
        onTestFinished(() => {
          child.kill("SIGKILL");
        });
      });
    const help = await exec(["--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Exit codes:");
    const sum = await exec(["call", "Calculator.Add", "--input", '{"a": 2, "b": 3}', "--json"]);
    expect(sum.code).toBe(0);
    expect(JSON.parse(sum.stdout)).toMatchObject({ success: true, value: 5 });
    expect((await exec(["call", "Calculator.Add", "--input", '{"a": "x", "b": 3}'])).code).toBe(6);
  });
});

describe("otc", () => {
  it("prints help with the exit codes", async () => {
    const { code, stdout } = await otc(["--help"]);
    expect(code).toBe(0);
    expect(stdout).toContain("Exit codes:");
    expect(stdout).toMatch(/6 {2}invalid input \(422\)/);
  });

  it("health", async () => {
    expect(await otc(["health"])).toMatchObject({ code: 0, stdout: "healthy (200)\n" });
    expect(await otc(["health", "--json"])).toMatchObject({ code: 0 });
  });

  it("tools: grouped by toolkit, with versions and requirements", async () => {
    const { code, stdout } = await otc(["tools"]);
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^Calculator\n {2}Add +1\.0\.0 +Add two numbers — Adds two numbers together\. +\[read-only, idempotent, not open-world\]\n/,
    );
    expect(stdout).toMatch(/Greeting\n {2}Hello +1\.0\.0, 2\.0\.0 /);
    expect(stdout).toContain("[needs auth:google, user_id]");
    expect(stdout).toContain("[needs secret:TWILIO_API_KEY]");
    const json = await otc(["tools", "--json", "--url", demo.url]);
    expect(JSON.parse(json.stdout).items).toHaveLength(9);
  });

  it("call: prints the value", async () => {
    expect(await otc(["call", "Calculator.Add", "--input", '{"a": 2, "b": 40}'])).toMatchObject({
      code: 0,
      stdout: "42\n",
    });
    expect(await otc(["call", "Greeting.Hello@1", "--input", '{"name": "Ann"}'])).toMatchObject({
      code: 0,
      stdout: "Hello, Ann!\n",
    });
  });

  it("call: reads --input @file, sends --secret and --token", async () => {
    const file = path.join(tmp, "input.json");
    await writeFile(file, '{"to": "+15550100", "message": "hi"}');
    const sms = await otc(["call", "SMS.Send", "--input", `@${file}`, "--secret", "TWILIO_API_KEY=abc", "--json"]);
    expect(sms.code).toBe(0);
    expect(JSON.parse(sms.stdout)).toMatchObject({ success: true, value: { status: "sent" } });
    const gmail = await otc([
      "call",
      "Gmail.GetEmails",
      "--user-id",
      "ann",
      "--token",
      "google=tok",
      "--input",
      '{"query": "receipt"}',
    ]);
    expect(gmail.code).toBe(0);
    expect(JSON.parse(gmail.stdout).emails[0].id).toBe("email_2");
  });

  it("call: a tool failure shows its retry hints and exits 1", async () => {
    const { code, stdout } = await otc(["call", "Doorbell.Ring", "--input", '{"doorbell_id": "x"}']);
    expect(code).toBe(1);
    expect(stdout).toContain("The tool failed: Doorbell ID not found");
    expect(stdout).toContain("hint: ids: doorbell42,doorbell84");
    expect(stdout).toContain("can retry: yes, after 500 ms");
  });

  it.each([
    [
      "invalid input",
      ["call", "Calculator.Add", "--input", '{"a": "x"}'],
      {},
      6,
      /Invalid input.*\n {2}a: Must be a number/s,
    ],
    ["an unknown tool", ["call", "Nope.Nope"], {}, 5, /The server refused the call: Tool 'Nope.Nope' was not found/],
    ["a missing secret", ["call", "SMS.Send", "--input", '{"to": "1", "message": "m"}'], {}, 5, /TWILIO_API_KEY/],
    ["no server", ["health", "--url", "http://127.0.0.1:9"], {}, 3, /Could not reach/],
    ["a bad --input", ["call", "Calculator.Add", "--input", "{nope"], {}, 2, /--input is not valid JSON/],
    ["an unknown option", ["tools", "--frobnicate"], {}, 2, /unknown option '--frobnicate'/],
    ["an unknown command", ["frobnicate"], {}, 2, /unknown command 'frobnicate'/],
    ["a bad --secret", ["call", "SMS.Send", "--secret", "novalue"], {}, 2, /--secret takes ID=VALUE/],
  ])("exits with the code of %s", async (_case, args, env, expected, message) => {
    const { code, stderr } = await otc(args, env);
    expect(code).toBe(expected);
    expect(stderr).toMatch(message);
  });

  it("authenticates with --api-key or OXP_API_KEY, and exits 4 without", async () => {
    expect((await otc(["tools", "--url", locked.url])).code).toBe(4);
    expect((await otc(["tools", "--url", locked.url, "--api-key", "cli-key"])).code).toBe(0);
    expect((await otc(["tools", "--url", locked.url], { OXP_API_KEY: "cli-key" })).code).toBe(0);
  });

  it("call --wait-auth shows the challenge URL, waits for approval and retries", async () => {
    // The user reads the URL the CLI prints and approves there.
    let shown: (url: string) => void = () => {};
    const urlShown = new Promise<string>((resolve) => {
      shown = resolve;
    });
    const running = otc(
      ["call", "Gmail.GetEmails", "--user-id", "waiting-user", "--wait-auth", "--input", '{"query": "receipt"}'],
      {},
      (stderr) => {
        const found = /Open this URL to continue:\n {2}(\S+)/.exec(stderr);
        if (found?.[1]) {
          shown(found[1]);
        }
      },
    );
    const url = await urlShown;
    expect(url.startsWith(`${demo.url}/demo/authorize/google.`)).toBe(true);
    expect(await decide(url, "approve")).toBe(303);
    const { code, stdout, stderr } = await running;
    expect(code).toBe(0);
    expect(stderr).toContain("Waiting for the authorization to complete...");
    expect(JSON.parse(stdout).emails[0].id).toBe("email_2");
  });

  it("codegen writes the same bindings from a live server and from a catalog file", async () => {
    const fromUrl = path.join(tmp, "from-url.ts");
    const fromFile = path.join(tmp, "from-file.ts");
    const catalog = path.resolve(here, "../../../apps/demo/catalog.json");
    expect((await otc(["codegen", "--from", demo.url, "--out", fromUrl])).code).toBe(0);
    expect((await otc(["codegen", "--from", catalog, "--out", fromFile])).code).toBe(0);
    const committed = await readFile(path.resolve(here, "../../../apps/demo/src/generated/tools.ts"), "utf8");
    expect(await readFile(fromFile, "utf8")).toBe(committed);
    expect((await readFile(fromUrl, "utf8")).replace(/from .*\.\n/, "")).toBe(committed.replace(/from .*\.\n/, ""));
    expect((await otc(["codegen", "--from", path.join(tmp, "missing.json"), "--out", fromFile])).code).toBe(2);
  });
});
