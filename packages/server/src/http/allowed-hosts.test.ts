// The Host decision of createHostCheck for requests that loopback sockets cannot stage: those arriving on other addresses.
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { createHostCheck, isLoopback } from "./allowed-hosts.js";

/** The parts of a request the check reads: where it arrived, its target and its Host. */
const arriving = (localAddress: string, host: string | undefined) => ({
  host,
  localAddress,
  remoteAddress: "192.0.2.99",
  connection: undefined,
});

describe("createHostCheck", () => {
  verifies("limits.allowed-hosts", "by default checks only requests that arrive on a loopback address", () => {
    const check = createHostCheck(undefined, undefined);
    expect(check?.(arriving("192.0.2.2", "evil.example"))).toBe(true);
    expect(check?.(arriving("fd00::2", "evil.example"))).toBe(true);
    for (const local of ["127.0.0.1", "127.3.2.1", "::1", "::ffff:127.0.0.1"]) {
      expect(check?.(arriving(local, "evil.example")), local).toBe(false);
      expect(check?.(arriving(local, "localhost:8080")), local).toBe(true);
    }
  });

  verifies("limits.allowed-hosts", "with a list, checks requests on every address", () => {
    const check = createHostCheck(["tools.example.com"], undefined);
    expect(check?.(arriving("192.0.2.2", "evil.example"))).toBe(false);
    expect(check?.(arriving("192.0.2.2", "tools.example.com"))).toBe(true);
    expect(check?.(arriving("192.0.2.2", "192.0.2.2:8080"))).toBe(true);
  });

  verifies("limits.allowed-hosts", "lets an HTTP/1.0 request without Host through: it names nothing to rebind", () => {
    expect(createHostCheck(undefined, undefined)?.(arriving("127.0.0.1", undefined))).toBe(true);
  });

  it('has nothing to check for "any"', () => {
    expect(createHostCheck("any", undefined)).toBeUndefined();
  });
});

describe("without a local address (a fetch host)", () => {
  verifies(
    "limits.allowed-hosts",
    "judges by the client's address: a loopback client reached a loopback server",
    () => {
      const check = createHostCheck(undefined, undefined);
      const from = (remoteAddress: string) => ({
        host: "evil.example",
        localAddress: undefined,
        remoteAddress,
        connection: undefined,
      });
      expect(check?.(from("127.0.0.1"))).toBe(false);
      expect(check?.(from("192.0.2.7"))).toBe(true);
    },
  );
});

describe("isLoopback", () => {
  it.each([
    ["127.0.0.1", true],
    ["127.255.0.9", true],
    ["::1", true],
    ["::ffff:127.0.0.1", true],
    ["192.0.2.2", false],
    ["::ffff:192.0.2.2", false],
    ["fd00::1", false],
    [undefined, false],
  ])("%s: %s", (address, expected) => {
    expect(isLoopback(address)).toBe(expected);
  });
});
