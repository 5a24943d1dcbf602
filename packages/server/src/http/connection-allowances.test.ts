// The address groups connections are counted under: an IPv4 address, or an IPv6 /64 (one subscriber's usual share).
import { describe, expect, it } from "vitest";
import { addressGroup } from "./connection-allowances.js";

describe("addressGroup", () => {
  // rule: limits.connection-allowances
  it.each([
    ["127.0.0.2", "127.0.0.2"],
    ["::ffff:192.0.2.7", "192.0.2.7"],
    ["2001:db8::1", "2001:db8:0:0::/64"],
    ["2001:0db8:0000:0000:ffff:1:2:3", "2001:db8:0:0::/64"],
    ["2001:db8:0:0:abcd::9%eth0", "2001:db8:0:0::/64"],
    ["2001:db8:0:1::1", "2001:db8:0:1::/64"],
    ["::1", "0:0:0:0::/64"],
    ["fe80::1", "fe80:0:0:0::/64"],
  ])("%s counts as %s", (address, group) => {
    expect(addressGroup(address)).toBe(group);
  });
});
