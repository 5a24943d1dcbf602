// `OXP_EXAMPLE_ACCOUNTS=1 npm start`: what main.ts prints (the URL, the test user's sign-in, the flow's commands), the issuer it serves, and the vault key it refuses.
import { afterEach, describe, expect, it } from "vitest";
import { startDemoProcess, stopDemoProcesses } from "./demo-process.js";

afterEach(stopDemoProcesses);

describe("OXP_EXAMPLE_ACCOUNTS", () => {
  it("starts Example Accounts at <url>/accounts and prints the sign-in and the commands of the flow", async () => {
    const { url, output } = await startDemoProcess({ OXP_EXAMPLE_ACCOUNTS: "1", OXP_EXAMPLE_PASSWORD: "pw-3f9a" });
    if (!url) {
      throw new Error(`the demo did not start: ${output}`);
    }
    // main.ts writes its start-up lines at once.
    expect(output).toContain("authentication: OAuth;");
    expect(output).toContain(`Example Accounts: ${url}/accounts   sign in as demo, password pw-3f9a`);
    expect(output).toContain(`${url}/demo/signin`);
    expect(output).toContain(`npx otc login ${url}`);
    expect(output).toContain("npx otc connections add example");
    expect(output).toContain("npx otc call Example.Profile");
    const metadata = (await (await fetch(`${url}/.well-known/oauth-protected-resource`)).json()) as Record<
      string,
      unknown
    >;
    expect(metadata).toMatchObject({ resource: url, authorization_servers: [`${url}/accounts`] });
    const issuer = (await (await fetch(`${url}/accounts/.well-known/openid-configuration`)).json()) as {
      issuer: string;
    };
    expect(issuer.issuer).toBe(`${url}/accounts`);
    // Anonymous calls are refused while OAuth is on, with the challenge that says where to sign in.
    const tools = await fetch(`${url}/tools`);
    expect(tools.status).toBe(401);
    expect(tools.headers.get("www-authenticate")).toContain(
      `resource_metadata="${url}/.well-known/oauth-protected-resource"`,
    );
  });

  it("refuses a public URL it could not fetch its own Example Accounts at, in one line", async () => {
    const started = await startDemoProcess({ OXP_EXAMPLE_ACCOUNTS: "1", OXP_PUBLIC_URL: "http://tools.example.net" });
    expect(started.code).toBe(2);
    expect(started.output.trim()).toBe(
      "OXP_EXAMPLE_ACCOUNTS needs a public URL on https, or on http at a loopback address; got 'http://tools.example.net' (set OXP_PUBLIC_URL)",
    );
  });

  it("refuses an OXP_VAULT_KEY that is not 32 bytes of base64url, in one line", async () => {
    const started = await startDemoProcess({ OXP_EXAMPLE_ACCOUNTS: "1", OXP_VAULT_KEY: "short" });
    expect(started.code).toBe(2);
    expect(started.output.trim()).toBe(
      "OXP_VAULT_KEY must be 32 random bytes, base64url (e.g. openssl rand 32 | basenc --base64url)",
    );
  });
});
