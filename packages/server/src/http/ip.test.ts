// The neutral IP checks, pinned to node:net's, and the address groups connections and clients are counted under.
import * as net from "node:net";
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { addressGroup, isIPv4, isIPv6 } from "./ip.js";

describe("isIPv4 and isIPv6", () => {
  const samples = [
    "127.0.0.1",
    "0.0.0.0",
    "255.255.255.255",
    "256.1.1.1",
    "1.2.3",
    "1.2.3.04",
    "01.2.3.4",
    "1.2.3.4 ",
    "a.b.c.d",
    "::1",
    "::",
    "2001:db8::1",
    "2001:0db8:0000:0000:ffff:1:2:3",
    "fe80::1%eth0",
    "fe80::1%",
    "::ffff:192.0.2.7",
    "1::2::3",
    "12345::1",
    "2001:db8:0:0:0:0:0:0:1",
    ":1",
    "1:",
    "g::1",
    "[::1]",
    "::ffff:1.2.3.256",
    "localhost",
    "",
  ];
  it.each(samples)("%j as node:net judges it", (text) => {
    expect(isIPv4(text)).toBe(net.isIPv4(text));
    expect(isIPv6(text)).toBe(net.isIPv6(text));
  });
});

describe("addressGroup", () => {
  verifies.each([
    ["127.0.0.2", "127.0.0.2"],
    ["::ffff:192.0.2.7", "192.0.2.7"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["2001:0db8:0000:0000:ffff:1:2:3", "2001:db8:0:0::/64"],
    ["2001:db8:0:0:abcd::9%eth0", "2001:db8:0:0::/64"],
    ["2001:db8:0:1::1", "2001:db8:0:1::/64"],
    ["::1", "0:0:0:0::/64"],
    ["fe80::1", "fe80:0:0:0::/64"],
  ])("limits.connection-allowances", "%s counts as %s", (address, group) => {
    expect(addressGroup(address)).toBe(group);
  });
});
