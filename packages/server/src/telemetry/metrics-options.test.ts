// The metrics' registry option: a prom-client Registry given is the one used (and typed as such), anything else a clear error.
import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ServerConfigError } from "../core/errors.js";
import { createTelemetry } from "./index.js";

describe("metrics.registry", () => {
  it("is the prom-client Registry given, typed as one", async () => {
    const registry = new Registry();
    const telemetry = await createTelemetry({ metrics: { registry }, logger: false });
    // A compile-time check too: `telemetry.registry` has the given registry's type, so prom-client takes it.
    const mine: Registry | undefined = telemetry.registry;
    new Counter({ name: "mine_total", help: "The caller's own.", registers: mine ? [mine] : [] }).inc();
    expect(await registry.metrics()).toContain("mine_total 1");
    expect(await registry.metrics()).toContain("oxp_calls_total");
  });

  it("refuses what is not a prom-client Registry with a ServerConfigError naming the option", async () => {
    const fake = { metrics: async () => "", contentType: "text/plain" };
    await expect(createTelemetry({ metrics: { registry: fake }, logger: false })).rejects.toThrow(ServerConfigError);
    await expect(createTelemetry({ metrics: { registry: fake }, logger: false })).rejects.toThrow(
      "metrics.registry must be a prom-client Registry",
    );
  });
});
