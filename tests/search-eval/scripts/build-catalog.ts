/**
 * Builds fixtures/catalog.json: the tools of published MCP servers, listed through @otc/mcp's `mcpTools` and written
 * as the OXP ToolDefinitions an OXP server lists for them. A one-off, run by hand (no test runs it: it needs the
 * servers installed, and some of them start a browser's worth of code); see README.md for how to rerun it.
 *
 *   npx tsx --tsconfig tsconfig.sources.json tests/search-eval/scripts/build-catalog.ts [--scratch DIR] [--only Toolkit,...] [--dry]
 *
 * Every server here lists its tools without credentials: where one refuses to start without a key in its environment
 * or its arguments, it gets the placeholder `unused`, never a real one; listing tools makes no call with it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { mcpTools } from "@otc/mcp";
import { OxpCore } from "@otc/server/core";
import type { ToolDefinition } from "@otc/types";

/** One published MCP server: the npm package, pinned, and how it is started to list its tools. */
interface Source {
  package: string;
  version: string;
  /** The OXP toolkit its tools go in. */
  toolkit: string;
  /** One line: what the toolkit is for. */
  description: string;
  /** The package's bin to run, when it has several. */
  bin?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Runs under Node 22 (the package's `engines` asks for it). */
  node22?: boolean;
}

/** The placeholder a server gets where it will not start without a key: never a credential. */
const PLACEHOLDER = "unused";

/** The catalog's sources, in the order they are written. */
export const SOURCES: Source[] = [
  // MCP's reference servers.
  {
    package: "@modelcontextprotocol/server-everything",
    version: "2026.8.31",
    toolkit: "Everything",
    description:
      "MCP's reference test server: echo, sums, long operations, sampling, images and other protocol features.",
  },
  {
    package: "@modelcontextprotocol/server-filesystem",
    version: "2026.8.31",
    toolkit: "Filesystem",
    description: "Reads, writes, moves and searches files and directories inside the directories it is allowed.",
    args: ["sandbox"],
  },
  {
    package: "@modelcontextprotocol/server-memory",
    version: "2026.8.31",
    toolkit: "Memory",
    description: "A persistent knowledge graph of entities, relations and observations.",
  },
  {
    package: "@modelcontextprotocol/server-sequential-thinking",
    version: "2026.8.31",
    toolkit: "SequentialThinking",
    description: "Step-by-step, revisable reasoning through a problem.",
  },
  {
    package: "@modelcontextprotocol/server-github",
    version: "2025.4.8",
    toolkit: "GitHub",
    description: "GitHub repositories, files, branches, issues, pull requests and code search.",
  },
  {
    package: "@modelcontextprotocol/server-gitlab",
    version: "2025.4.25",
    toolkit: "GitLab",
    description: "GitLab projects, files, branches, issues and merge requests.",
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: PLACEHOLDER },
  },
  {
    package: "@modelcontextprotocol/server-slack",
    version: "2025.4.25",
    toolkit: "Slack",
    description: "Slack channels, messages, threads, reactions and users.",
    env: { SLACK_BOT_TOKEN: PLACEHOLDER, SLACK_TEAM_ID: PLACEHOLDER },
  },
  {
    package: "@modelcontextprotocol/server-google-maps",
    version: "0.6.2",
    toolkit: "GoogleMaps",
    description: "Google Maps geocoding, places, distances, elevation and directions.",
    env: { GOOGLE_MAPS_API_KEY: PLACEHOLDER },
  },
  {
    package: "@modelcontextprotocol/server-brave-search",
    version: "0.6.2",
    toolkit: "BraveWebSearch",
    description: "MCP's reference Brave Search server: web and local business search.",
    env: { BRAVE_API_KEY: PLACEHOLDER },
  },
  {
    package: "@modelcontextprotocol/server-puppeteer",
    version: "2025.5.12",
    toolkit: "Puppeteer",
    description: "A Puppeteer-driven browser: navigate, click, fill, screenshot and run scripts.",
  },
  {
    package: "@modelcontextprotocol/server-postgres",
    version: "0.6.2",
    toolkit: "Postgres",
    description: "Read-only SQL queries against a PostgreSQL database.",
    // Never connected to: the server connects when a query runs.
    args: ["postgresql://127.0.0.1:1/unused"],
  },
  {
    package: "@modelcontextprotocol/server-everart",
    version: "0.6.2",
    toolkit: "EverArt",
    description: "Image generation with EverArt's models.",
    env: { EVERART_API_KEY: PLACEHOLDER },
  },
  {
    package: "@modelcontextprotocol/server-aws-kb-retrieval",
    version: "0.6.2",
    toolkit: "AwsKnowledgeBase",
    description: "Retrieval from an AWS Bedrock knowledge base.",
  },
  // Vendors' and widely used community servers.
  {
    package: "@playwright/mcp",
    version: "0.0.83",
    toolkit: "Playwright",
    description: "Microsoft's Playwright browser automation through the page's accessibility snapshot.",
  },
  {
    package: "@executeautomation/playwright-mcp-server",
    version: "1.0.12",
    toolkit: "PlaywrightAutomation",
    description: "Browser automation and API testing with Playwright, with test code generation.",
  },
  {
    package: "chrome-devtools-mcp",
    version: "1.11.0",
    toolkit: "ChromeDevTools",
    description: "Google's Chrome DevTools: drive Chrome, inspect network and console, record performance traces.",
    bin: "chrome-devtools-mcp",
    args: ["--no-usage-statistics", "--no-performance-crux"],
  },
  {
    package: "@notionhq/notion-mcp-server",
    version: "2.5.2",
    toolkit: "Notion",
    description: "Notion's API: pages, databases, blocks, comments, users and search.",
  },
  {
    package: "@sentry/mcp-server",
    version: "0.39.0",
    toolkit: "Sentry",
    description: "Sentry's error monitoring: issues, events, projects, releases and Seer analysis.",
    env: { SENTRY_ACCESS_TOKEN: PLACEHOLDER },
    node22: true,
  },
  {
    package: "@upstash/context7-mcp",
    version: "4.1.1",
    toolkit: "Context7",
    description: "Up-to-date documentation and code examples of programming libraries.",
  },
  {
    package: "tavily-mcp",
    version: "0.2.22",
    toolkit: "Tavily",
    description: "Tavily's web search, extraction, crawling and site mapping.",
  },
  {
    package: "firecrawl-mcp",
    version: "3.26.0",
    toolkit: "Firecrawl",
    description: "Firecrawl's web scraping, crawling, search and structured extraction.",
    node22: true,
  },
  {
    package: "exa-mcp-server",
    version: "3.4.1",
    toolkit: "Exa",
    description: "Exa's neural web search and page content fetching.",
  },
  {
    package: "@brave/brave-search-mcp-server",
    version: "2.1.4",
    toolkit: "BraveSearch",
    description: "Brave's own Search server: web, news, image, video and local results and AI summaries.",
    env: { BRAVE_API_KEY: PLACEHOLDER },
  },
  {
    package: "@browserbasehq/mcp-server-browserbase",
    version: "2.4.3",
    toolkit: "Browserbase",
    description: "Cloud browser sessions driven by Browserbase and Stagehand.",
  },
  {
    package: "mongodb-mcp-server",
    version: "3.0.4",
    toolkit: "MongoDB",
    description: "MongoDB databases and collections, and MongoDB Atlas clusters and users.",
    env: { MDB_MCP_TELEMETRY: "disabled" },
  },
  {
    package: "@circleci/mcp-server-circleci",
    version: "0.20.0",
    toolkit: "CircleCI",
    description: "CircleCI pipelines, build failures, flaky tests and config validation.",
  },
  {
    package: "@zereight/mcp-gitlab",
    version: "2.1.64",
    toolkit: "GitLabCommunity",
    description: "A community GitLab server: merge requests, issues, pipelines, wiki, releases and more.",
    env: { GITLAB_PERSONAL_ACCESS_TOKEN: PLACEHOLDER },
  },
  {
    package: "@wonderwhy-er/desktop-commander",
    version: "0.2.52",
    toolkit: "DesktopCommander",
    description: "Terminal commands, processes and file editing on the local machine.",
  },
  {
    package: "@hubspot/mcp-server",
    version: "0.4.0",
    toolkit: "HubSpot",
    description: "HubSpot CRM objects: contacts, companies, deals, associations, engagements and workflows.",
    env: { PRIVATE_APP_ACCESS_TOKEN: PLACEHOLDER },
  },
  {
    package: "@shortcut/mcp",
    version: "0.25.0",
    toolkit: "Shortcut",
    description: "Shortcut's project management: stories, epics, iterations, objectives and docs.",
    env: { SHORTCUT_API_TOKEN: PLACEHOLDER },
  },
  {
    package: "@launchdarkly/mcp-server",
    version: "0.6.2",
    toolkit: "LaunchDarkly",
    description: "LaunchDarkly feature flags, AI configs and code references.",
    args: ["start", "--api-key", PLACEHOLDER],
  },
  {
    package: "@perplexity-ai/mcp-server",
    version: "1.2.1",
    toolkit: "Perplexity",
    description: "Perplexity's answers, web search, reasoning and deep research.",
    env: { PERPLEXITY_API_KEY: PLACEHOLDER },
  },
  {
    package: "@winor30/mcp-server-datadog",
    version: "1.8.0",
    toolkit: "Datadog",
    description: "Datadog incidents, monitors, logs, metrics, traces, dashboards and hosts.",
    env: { DATADOG_API_KEY: PLACEHOLDER, DATADOG_APP_KEY: PLACEHOLDER },
  },
  {
    package: "@antv/mcp-server-chart",
    version: "0.9.10",
    toolkit: "AntvChart",
    description: "Charts and diagrams drawn with AntV: bar, line, pie, maps, flow diagrams and more.",
  },
  {
    package: "@cloudflare/mcp-server-cloudflare",
    version: "0.2.0",
    toolkit: "Cloudflare",
    description: "Cloudflare Workers, KV, R2, D1, DNS zones, analytics and more.",
    // `run <account id>`: the account is never called while listing.
    args: ["run", PLACEHOLDER],
    env: { CLOUDFLARE_API_TOKEN: PLACEHOLDER },
  },
  {
    package: "mcp-server-kubernetes",
    version: "4.1.7",
    toolkit: "Kubernetes",
    description: "Kubernetes resources through kubectl, and Helm charts.",
  },
  {
    package: "@eslint/mcp",
    version: "0.3.13",
    toolkit: "ESLint",
    description: "Lints files with ESLint.",
  },
  {
    package: "@mobilenext/mobile-mcp",
    version: "1.0.4",
    toolkit: "Mobile",
    description: "Drives iOS and Android devices, simulators and emulators.",
  },
  {
    package: "figma-developer-mcp",
    version: "0.13.2",
    toolkit: "Figma",
    description: "Figma design data and image downloads for implementing designs.",
    args: ["--stdio"],
    env: { FIGMA_API_KEY: PLACEHOLDER },
  },
  {
    package: "resend-mcp",
    version: "2.22.0",
    toolkit: "Resend",
    description: "Resend's email API: send and schedule emails, domains, contacts, audiences and broadcasts.",
    env: { RESEND_API_KEY: `re_${PLACEHOLDER}` },
    node22: true,
  },
  {
    package: "@doist/todoist-mcp",
    version: "11.0.0",
    toolkit: "Todoist",
    description: "Todoist tasks, projects, sections, labels, comments and reminders.",
    env: { TODOIST_API_KEY: PLACEHOLDER },
  },
  {
    package: "@cyanheads/git-mcp-server",
    version: "2.15.3",
    toolkit: "Git",
    description: "Local git repositories: status, commits, branches, diffs, logs, tags and worktrees.",
  },
  {
    package: "airtable-mcp-server",
    version: "1.14.0",
    toolkit: "Airtable",
    description: "Airtable bases, tables, fields and records.",
    env: { AIRTABLE_API_KEY: PLACEHOLDER },
  },
  {
    package: "mcp-discord",
    version: "1.3.4",
    toolkit: "Discord",
    description: "Discord messages, channels, forums, reactions and webhooks through a bot.",
    env: { DISCORD_TOKEN: PLACEHOLDER },
  },
];

/** The arguments after the script's path, as `--name value` pairs and flags. */
function argument(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? undefined : (process.argv[index + 1] ?? "");
}

const scratch = argument("scratch") ?? "/tmp/mcp-catalog";
const only = argument("only")?.split(",");
const dry = process.argv.includes("--dry");
/** The Node 22 that the sources marked `node22` run under: the `node` package installed in the scratch directory. */
const NODE22 = "22.23.3";

if (process.argv.includes("--print-install")) {
  // Scripts off: no server needs its own, and some (puppeteer's) would download a browser. The `node` package's
  // script is what installs its binary, hence the rebuild.
  const specs = [...SOURCES.map((source) => `${source.package}@${source.version}`), `node@${NODE22}`];
  console.log(`npm install --no-audit --no-fund --ignore-scripts --save-exact ${specs.join(" ")} && npm rebuild node`);
  process.exit(0);
}
// The filesystem server is allowed this directory, relative to the scratch directory it runs in.
mkdirSync(join(scratch, "sandbox"), { recursive: true });
const fixture = fileURLToPath(new URL("../fixtures/catalog.json", import.meta.url));

interface PackageJson {
  name: string;
  version: string;
  license?: string;
  bin?: string | Record<string, string>;
}

/** The installed package's manifest, or an error saying how to install it. */
function manifest(source: Source): { dir: string; json: PackageJson } {
  const dir = join(scratch, "node_modules", source.package);
  if (!existsSync(join(dir, "package.json"))) {
    throw new Error(`${source.package} is not installed in ${scratch} (see README.md)`);
  }
  const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as PackageJson;
  if (json.version !== source.version) {
    throw new Error(`${source.package} is ${json.version} in ${scratch}, the catalog pins ${source.version}`);
  }
  return { dir, json };
}

/** The license a LICENSE-like file names: its first line, with the next where that says the version ("Apache License" then "Version 2.0, ..."). */
function licenseFileNames(path: string): string | undefined {
  if (!existsSync(path)) {
    return undefined;
  }
  const lines = readFileSync(path, "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter(Boolean);
  const version = lines[1]?.match(/^Version [\d.]+/)?.[0];
  return lines[0] && (version ? `${lines[0]} ${version}` : lines[0]);
}

/**
 * The license as the package's manifest states it. Where it points at a file ("SEE LICENSE IN ...") or states none,
 * what the file names (LICENSE when the manifest names none) is added, or that the package ships no such file.
 */
function licenseOf(dir: string, json: PackageJson): string {
  const stated = json.license;
  const file = stated === undefined ? "LICENSE" : stated.match(/^SEE LICENSE IN (.+)$/)?.[1];
  if (file === undefined) {
    return stated as string;
  }
  const named = licenseFileNames(join(dir, file));
  const found = named ? `${file}: ${named}` : `the package ships no ${file}`;
  return stated === undefined ? `none stated in package.json (${found})` : `${stated} (${found})`;
}

function binOf(source: Source, json: PackageJson): string {
  if (typeof json.bin === "string") {
    return json.bin;
  }
  const bins = Object.entries(json.bin ?? {});
  const chosen = source.bin === undefined ? bins[0] : bins.find(([name]) => name === source.bin);
  if (!chosen) {
    throw new Error(`${source.package} has no bin ${source.bin ?? ""}`);
  }
  return chosen[1];
}

/** The OXP tool version: the package's own, less any pre-release or build tail OXP's x.y.z has no room for. */
const toolVersion = (version: string) => version.replace(/[-+].*$/, "");

interface Listed {
  package: string;
  version: string;
  license: string;
  toolkit: string;
  description: string;
  skipped: { name: string; reason: string }[];
  tools: ToolDefinition[];
}

async function list(source: Source): Promise<Listed> {
  const { dir, json } = manifest(source);
  const node = source.node22 ? join(scratch, "node_modules", ".bin", "node") : process.execPath;
  const listed = await mcpTools(
    {
      command: node,
      args: [join(dir, binOf(source, json)), ...(source.args ?? [])],
      // Telemetry off where a server honours the convention: the catalog needs nothing from the network.
      env: { DO_NOT_TRACK: "1", ...source.env },
      cwd: scratch,
      stderr: "ignore",
    },
    { toolkit: source.toolkit, version: toolVersion(source.version), stdioProbeTimeoutMs: 5_000 },
  );
  try {
    // The definitions an OXP server lists for these tools, annotations included, as GET /tools sends them.
    const tools = new OxpCore({ tools: listed.tools }).listTools({ annotations: true }).items;
    return {
      package: source.package,
      version: source.version,
      license: licenseOf(dir, json),
      toolkit: source.toolkit,
      description: source.description,
      skipped: listed.skipped,
      tools,
    };
  } finally {
    await listed.close();
  }
}

/** Gives up on a server that neither lists its tools nor fails within `ms`. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no tool list within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const results: Listed[] = [];
const failures: string[] = [];
for (const source of SOURCES.filter((candidate) => only === undefined || only.includes(candidate.toolkit))) {
  try {
    const listed = await within(90_000, source.package, list(source));
    results.push(listed);
    console.log(
      `${source.toolkit}\t${source.package}@${source.version}\t${listed.tools.length} tools\t${listed.license}`,
    );
    for (const skipped of listed.skipped) {
      console.log(`  skipped ${skipped.name}: ${skipped.reason}`);
    }
  } catch (error) {
    failures.push(`${source.package}: ${error instanceof Error ? error.message : String(error)}`);
    console.log(`${source.toolkit}\t${source.package}\tFAILED: ${failures.at(-1)}`);
  }
}
const total = results.reduce((sum, source) => sum + source.tools.length, 0);
console.log(`${results.length} sources, ${total} tools; ${failures.length} failed`);
if (!dry && only === undefined) {
  if (failures.length > 0) {
    console.error("not written: every source must list its tools");
    process.exit(1);
  }
  const catalog = {
    about:
      "Tools of published MCP servers as OXP ToolDefinitions, listed through @otc/mcp's mcpTools by scripts/build-catalog.ts (see README.md).",
    sources: results,
  };
  writeFileSync(fixture, `${JSON.stringify(catalog, null, 2)}\n`);
  console.log(`wrote ${fixture}`);
}
// A server that ignored its stdin's end would keep the event loop alive.
process.exit(0);
