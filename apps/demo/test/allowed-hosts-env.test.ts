// The demo process's DNS-rebinding protection and its setting from the environment (OXP_ALLOWED_HOSTS).
import { request } from "node:http";
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect, it } from "vitest";
import { startDemoProcess, stopDemoProcesses } from "./demo-process.js";

afterEach(stopDemoProcesses);

/** The status of `GET path` sent with the given Host header, as a DNS-rebinding page's browser would send it. */
function statusWithHost(url: string, host: string, path = "/tools"): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { headers: { host }, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the demo's Host check", () => {
  verifies(
    "limits.allowed-hosts",
    "with auth off on loopback, serves no page a rebound name reaches: tools, the Inspector, consent pages",
    async () => {
      const { url } = await startDemoProcess({});
      if (!url) {
        throw new Error("the demo did not start");
      }
      const port = new URL(url).port;
      for (const path of ["/tools", "/health", "/inspector", "/demo/authorize/x"]) {
        expect(await statusWithHost(url, `rebind.evil.example:${port}`, path), path).toBe(400);
      }
      expect(await statusWithHost(url, `localhost:${port}`)).toBe(200);
      expect(await statusWithHost(url, `127.0.0.1:${port}`)).toBe(200);
    },
  );

  verifies("limits.allowed-hosts", "takes OXP_ALLOWED_HOSTS: names to add, or any", async () => {
    const listed = await startDemoProcess({ OXP_ALLOWED_HOSTS: "tools.example.com, .example.org" });
    if (!listed.url) {
      throw new Error(`the demo did not start: ${listed.output}`);
    }
    expect(await statusWithHost(listed.url, "tools.example.com")).toBe(200);
    expect(await statusWithHost(listed.url, "a.example.org:8080")).toBe(200);
    expect(await statusWithHost(listed.url, "evil.example")).toBe(400);

    const any = await startDemoProcess({ OXP_ALLOWED_HOSTS: "any" });
    if (!any.url) {
      throw new Error(`the demo did not start: ${any.output}`);
    }
    expect(await statusWithHost(any.url, "evil.example")).toBe(200);
  });

  verifies("limits.allowed-hosts", "serves OXP_PUBLIC_URL's host, the name the proxy in front forwards", async () => {
    const { url, output } = await startDemoProcess({ OXP_PUBLIC_URL: "https://tools.example.net" });
    if (!url) {
      throw new Error(`the demo did not start: ${output}`);
    }
    expect(await statusWithHost(url, "tools.example.net")).toBe(200);
  });

  it("says in one line, without a stack, that OXP_ALLOWED_HOSTS is not a list of host names", async () => {
    const started = await startDemoProcess({ OXP_ALLOWED_HOSTS: "localhost, https://tools.example.com" });
    expect(started.code).toBe(2);
    expect(started.output.trim()).toBe(
      "OXP_ALLOWED_HOSTS takes comma-separated host names without scheme or port (.example.com for a domain), or 'any'; got 'https://tools.example.com'",
    );
  });
});
