/** Summaries of V8 CPU profiles (`node --cpu-prof`): top self-time functions, and the share of each package. */

/** Where a frame's code lives: a workspace package, an npm package, Node itself, or V8. */
export function owner(url) {
  if (!url) {
    return "(V8 / native)";
  }
  if (url.startsWith("node:")) {
    return "node internals";
  }
  const npm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (npm && !/node_modules\/@otc\//.test(url)) {
    return npm[1];
  }
  const workspace = /\/(packages|apps)\/([^/]+)\//.exec(url);
  if (workspace) {
    return `@otc/${workspace[2]}`;
  }
  if (/\/bench\//.test(url)) {
    return "bench harness";
  }
  return url;
}

/** A `.cpuprofile`'s busy time, its idle share, and its top self-time functions and packages (`root` cut from paths). */
export function summarise(profile, { root, top = 15 }) {
  const total = profile.samples.length;
  const msPerSample = (profile.endTime - profile.startTime) / 1000 / total;
  const byFunction = new Map();
  const byOwner = new Map();
  let idle = 0;
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idle += node.hitCount;
      continue;
    }
    const key = `${functionName || "(anonymous)"} ${url ? `${url.replace(/^file:\/\//, "").replace(root, "")}:${lineNumber + 1}` : ""}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + node.hitCount);
    const who = ["(garbage collector)", "(program)"].includes(functionName) ? functionName : owner(url);
    byOwner.set(who, (byOwner.get(who) ?? 0) + node.hitCount);
  }
  const busy = total - idle;
  const share = (hits) => `${((100 * hits) / busy).toFixed(1)}%`;
  const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);
  return {
    busyMs: busy * msPerSample,
    idleShare: idle / total,
    functions: sorted(byFunction)
      .slice(0, top)
      .map(([name, hits]) => ({ name, share: share(hits) })),
    owners: sorted(byOwner)
      .slice(0, 12)
      .map(([name, hits]) => ({ name, share: share(hits) })),
  };
}

/** A summary's two Markdown tables, top self time and share by package, as lines. */
export function summaryTables(summary) {
  return [
    "| top self time | share |",
    "| --- | ---: |",
    ...summary.functions.map((entry) => `| \`${entry.name.trim()}\` | ${entry.share} |`),
    "",
    "| by package | share |",
    "| --- | ---: |",
    ...summary.owners.map((entry) => `| ${entry.name} | ${entry.share} |`),
  ];
}
