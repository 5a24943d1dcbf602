// `otc tools --search` and `otc codegen --ids` in process, against real @otc/server instances on loopback: one that
// offers search, one that does not (pagination and annotations only), and a catalog file.
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createServer, defineTool, listen, type RunningServer, type Tool } from "@otc/server";
import type { ToolSearchResponse } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "./cli.js";
import { EXIT } from "./io.js";
import { formatSearch, parseIdList, pickTools } from "./search-command.js";

const tool = (toolkit: string, name: string, description: string, more: Record<string, unknown> = {}): Tool =>
  defineTool({
    toolkit,
    name,
    version: "1.0.0",
    description,
    inputSchema: { type: "object", properties: {} },
    outputSchema: { type: "string" },
    run: () => "",
    ...more,
  } as never);

const catalog: Tool[] = [
  tool("Gmail", "SendEmail", "Send email. Sends an email.", { deprecationMessage: "Use Gmail.SendEmail@2.0.0." }),
  tool("Gmail", "SendEmail", "Sends an email message, with attachments.\nA second line.", {
    version: "2.0.0",
    inputSchema: {
      type: "object",
      properties: { to: { type: "string", description: "The recipient's address." } },
      required: ["to"],
    },
  }),
  tool("Gmail", "ListEmails", "Lists the emails in the inbox, newest first."),
  tool("Slack", "PostMessage", "Posts a message to a channel."),
  ...Array.from({ length: 12 }, (_, n) => tool("Bulk", `Tool${String(n).padStart(2, "0")}`, "Turns widgets.")),
];

/** Runs `otc` in process; resolves with its exit code and what it printed. */
async function otc(args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: {},
  });
  return { code, stdout, stderr };
}

let server: RunningServer;
let noSearch: RunningServer;
let tmp: string;
beforeAll(async () => {
  [server, noSearch, tmp] = await Promise.all([
    listen(createServer({ tools: catalog, logger: false }), { port: 0 }),
    listen(createServer({ tools: catalog, logger: false, extensions: ["annotations", "pagination"] }), { port: 0 }),
    mkdtemp(path.join(os.tmpdir(), "otc-cli-search-")),
  ]);
});
afterAll(async () => {
  await Promise.all([server?.close(), noSearch?.close(), tmp && rm(tmp, { recursive: true, force: true })]);
});

describe("otc tools --search", () => {
  it("prints the matches best first: score, toolkit, id, the description's first line, deprecations marked", async () => {
    const { code, stdout, stderr } = await otc(["tools", "--search", "send an email", "--url", server.url]);
    expect({ code, stderr }).toEqual({ code: EXIT.ok, stderr: "" });
    const lines = stdout.split("\n");
    expect(lines[0]).toMatch(/^ *SCORE {2}TOOLKIT {2}ID +DESCRIPTION$/);
    expect(lines[1]).toMatch(
      /^ *\d+\.\d\d {2}Gmail {4}Gmail\.SendEmail@2\.0\.0 +Sends an email message, with attachments\.$/,
    );
    expect(lines[2]).toMatch(
      /^ *\d+\.\d\d {2}Gmail {4}Gmail\.SendEmail@1\.0\.0 +Send email\. Sends an email\. {2}\[deprecated\]$/,
    );
    // Best first: the scores printed go down.
    const scores = lines.slice(1, -1).map((line) => Number(line.trim().split(/\s+/)[0]));
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(stdout.endsWith("\n")).toBe(true);
  });

  it("keeps one toolkit with --toolkit, shows --limit matches and says when more follow", async () => {
    const slack = await otc(["tools", "--search", "message", "--toolkit", "Slack", "--url", server.url]);
    expect(slack.stdout.split("\n").slice(1)).toEqual([
      expect.stringMatching(/^ *\d+\.\d\d {2}Slack {4}Slack\.PostMessage@1\.0\.0 {2}Posts a message to a channel\.$/),
      "",
    ]);
    const widgets = await otc(["tools", "--search", "widgets", "--limit", "3", "--url", server.url]);
    expect(widgets.stdout.split("\n").slice(1)).toEqual([
      expect.stringMatching(/Bulk\.Tool00@1\.0\.0 {2}Turns widgets\.$/),
      expect.stringMatching(/Bulk\.Tool01@1\.0\.0 {2}Turns widgets\.$/),
      expect.stringMatching(/Bulk\.Tool02@1\.0\.0 {2}Turns widgets\.$/),
      "More tools match: --limit N shows up to 50.",
      "",
    ]);
    expect(await otc(["tools", "--search", "zebra", "--url", server.url])).toEqual({
      code: EXIT.ok,
      stdout: "No tool matches 'zebra'.\n",
      stderr: "",
    });
  });

  it("--json prints the server's answer: whole definitions, each with its toolkit and score", async () => {
    const { code, stdout } = await otc([
      "tools",
      "--search",
      "send an email",
      "--limit",
      "2",
      "--json",
      "--url",
      server.url,
    ]);
    expect(code).toBe(EXIT.ok);
    const answer = JSON.parse(stdout) as ToolSearchResponse;
    expect(answer.items.map((item) => [item.id, item.toolkit])).toEqual([
      ["Gmail.SendEmail@2.0.0", "Gmail"],
      ["Gmail.SendEmail@1.0.0", "Gmail"],
    ]);
    expect(answer.items[0]?.score).toBeGreaterThan(answer.items[1]?.score ?? Number.POSITIVE_INFINITY);
    expect(answer.items[0]?.input_schema).toMatchObject({ required: ["to"] });
    expect(answer.next_cursor).toEqual(expect.any(String));
  });

  it("on a server without search says so (exit 5), and lists nothing in its place", async () => {
    expect(await otc(["tools", "--search", "email", "--url", noSearch.url])).toEqual({
      code: EXIT.refused,
      stdout: "",
      stderr:
        "otc tools --search needs the search extension, which the server does not offer (GET /.well-known/oxp): otc tools lists every tool.\n",
    });
  });

  it("passes the server's refusal of a limit past 50 on (exit 5)", async () => {
    const { code, stderr } = await otc(["tools", "--search", "email", "--limit", "51", "--url", server.url]);
    expect(code).toBe(EXIT.refused);
    expect(stderr).toContain("The search limit must be a whole number from 1 to 50");
  });

  it("otc tools --toolkit lists one toolkit's tools, with or without search on the server", async () => {
    const expected = "Slack\n  PostMessage      1.0.0          Posts a message to a channel.\n";
    expect(await otc(["tools", "--toolkit", "Slack", "--url", server.url])).toEqual({
      code: EXIT.ok,
      stdout: expected,
      stderr: "",
    });
    expect((await otc(["tools", "--toolkit", "Slack", "--url", noSearch.url])).stdout).toBe(expected);
  });

  it.each([
    [["tools", "--limit", "5"], `otc: --limit goes with --search, e.g. otc tools --search "send an email" --limit 5`],
    [["tools", "--search", "  "], `otc: --search needs some text, e.g. otc tools --search "send an email"`],
    [["tools", "--search", "x", "--limit", "0"], "otc: --limit takes a whole number of tools, 1 or more"],
    [["tools", "--search", "x", "--limit", "2.5"], "otc: --limit takes a whole number of tools, 1 or more"],
    [
      ["tools", "send", "email"],
      `otc: unexpected arguments 'send', 'email': otc tools takes no arguments (to find tools, otc tools --search "send email")`,
    ],
    [["call", "A.B", "--search", "x"], "otc: --search is an option of otc tools, not of otc call"],
    [
      ["codegen", "--from", "x.json", "--out", "x.ts", "--toolkit", "A"],
      "otc: --toolkit is an option of otc tools, not of otc codegen",
    ],
    [["tools", "--ids", "A.B"], "otc: --ids is an option of otc codegen, not of otc tools"],
    [
      ["codegen", "--from", "x.json", "--out", "x.ts", "--ids", "A.B,,C.D"],
      "otc: --ids takes tool ids separated by commas",
    ],
  ])("usage error: otc %j", async (args, message) => {
    const { code, stdout, stderr } = await otc([...args, "--url", server.url]);
    expect({ code, stdout }).toEqual({ code: EXIT.usage, stdout: "" });
    expect(stderr.startsWith(message), stderr).toBe(true);
  });
});

describe("otc codegen --ids", () => {
  /** The `Tools` members of a bindings file: the tool ids it has bindings for. */
  const boundIds = (code: string) => [...code.matchAll(/^ {2}"([^"]+)": \{ input/gm)].map((match) => match[1]);

  it("writes bindings for the tools named only, fetched by id", async () => {
    const out = path.join(tmp, "some.ts");
    const result = await otc([
      "codegen",
      "--from",
      server.url,
      "--out",
      out,
      "--ids",
      "Slack.PostMessage, Gmail.SendEmail@1",
    ]);
    expect(result).toEqual({ code: EXIT.ok, stdout: `wrote bindings for 2 tools to ${out}\n`, stderr: "" });
    const code = await readFile(out, "utf8");
    expect(boundIds(code)).toEqual(["Gmail.SendEmail@1.0.0", "Slack.PostMessage@1.0.0"]);
    // Annotated where the server offers it, as without --ids.
    expect(code).toContain("   * @deprecated Use Gmail.SendEmail@2.0.0.\n");
    expect(code).not.toContain("GmailListEmails");
  });

  it("stops at an id that names no tool, naming it (exit 5), and writes nothing", async () => {
    const out = path.join(tmp, "never.ts");
    const result = await otc(["codegen", "--from", server.url, "--out", out, "--ids", "Slack.PostMessage,Gmail.Nope"]);
    expect(result.code).toBe(EXIT.refused);
    expect(result.stderr).toBe(
      "The server refused the call: Some ids name no tool\n  'Gmail.Nope' is not the id of a tool on this server.\n",
    );
    await expect(readFile(out, "utf8")).rejects.toThrow(/ENOENT/);
  });

  it("picks the same tools from a server without search, and from a catalog file", async () => {
    const ids = "Gmail.SendEmail,Slack.PostMessage,Gmail.SendEmail@2.0.0";
    const withSearch = path.join(tmp, "with-search.ts");
    const without = path.join(tmp, "without-search.ts");
    expect(await otc(["codegen", "--from", server.url, "--out", withSearch, "--ids", ids])).toMatchObject({
      code: EXIT.ok,
      stdout: `wrote bindings for 2 tools to ${withSearch}\n`,
    });
    expect(await otc(["codegen", "--from", noSearch.url, "--out", without, "--ids", ids])).toMatchObject({
      code: EXIT.ok,
      stdout: `wrote bindings for 2 tools to ${without}\n`,
    });
    const body = (file: string) => readFile(file, "utf8").then((text) => text.replace(/^.*\n/, ""));
    expect(await body(without)).toBe(await body(withSearch));
    const listed = await otc(["tools", "--json", "--url", server.url]);
    const file = path.join(tmp, "catalog.json");
    await writeFile(file, listed.stdout);
    const fromFile = path.join(tmp, "from-file.ts");
    expect(await otc(["codegen", "--from", file, "--out", fromFile, "--ids", ids])).toMatchObject({ code: EXIT.ok });
    expect(await body(fromFile)).toBe(await body(withSearch));
    // An unknown id there is named as the server names it, exit 5 too.
    expect(await otc(["codegen", "--from", noSearch.url, "--out", without, "--ids", "Gmail.SendEmail@3,X"])).toEqual({
      code: EXIT.refused,
      stdout: "",
      stderr: `otc: --ids names no tool of ${noSearch.url}: 'Gmail.SendEmail@3', 'X'\n`,
    });
    expect((await otc(["codegen", "--from", file, "--out", fromFile, "--ids", "Gmail.Nope"])).stderr).toBe(
      "otc: --ids names no tool of catalog.json: 'Gmail.Nope'\n",
    );
  });
});

describe("the pure parts", () => {
  it("formatSearch lines the columns up on what is printed, and keeps a row on one line", () => {
    const item = { name: "A_B", version: "1.0.0", toolkit: "A" };
    expect(
      formatSearch(
        [
          { ...item, id: "A.B@1.0.0", description: "First.\nSecond.", score: 12.345 },
          { ...item, id: "A.Longer@1.0.0", description: "Evil \u001b[2J.", score: 3, deprecation_message: "Use A.B." },
        ],
        "b",
        false,
      ),
    ).toBe(
      "SCORE  TOOLKIT  ID              DESCRIPTION\n" +
        "12.35  A        A.B@1.0.0       First.\n" +
        " 3.00  A        A.Longer@1.0.0  Evil \\u001b[2J.  [deprecated]\n",
    );
  });

  it("parseIdList and pickTools resolve ids as a call's tool_id is", () => {
    expect(parseIdList(" A.B , C.D@2 ")).toEqual(["A.B", "C.D@2"]);
    expect(parseIdList("A.B,")).toBeUndefined();
    const listed = ["1.9.0", "1.10.0", "2.0.0"].map((version) => ({
      id: `A.B@${version}`,
      name: "A_B",
      description: "B.",
      version,
      input_schema: {},
      output_schema: null,
    }));
    const picked = (ids: string[]) => pickTools(listed, ids, "here").map((each) => each.id);
    expect(picked(["A.B", "A.B@2", "A.B@1.10.0", "A.B@2.0.0"])).toEqual(["A.B@2.0.0", "A.B@1.10.0"]);
    // `@1` is exactly 1.0.0, which is not listed.
    expect(() => picked(["A.B@1", "a.b"])).toThrow("--ids names no tool of here: 'A.B@1', 'a.b'");
  });
});
