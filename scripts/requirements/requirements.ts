/** The requirements manifest: each rule of docs/protocol.md as data (id, section, behaviour), and the tests that cite them. */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** One rule of the protocol document. */
export interface Requirement {
  /** The stable id in bold brackets, e.g. `idempotency.per-principal`. */
  id: string;
  /** The section of docs/protocol.md it stands in, e.g. `3.7`. */
  section: string;
  /** Its first sentence, as plain text. */
  behaviour: string;
}

/** The rules of the protocol document, in order: each `- **[id]** text` bullet under its numbered heading. */
export function parseRequirements(markdown: string): Requirement[] {
  const rules: Requirement[] = [];
  let section = "";
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const heading = /^#{2,3} (\d+(?:\.\d+)?)\.? /.exec(line);
    if (heading?.[1]) section = heading[1];
    if (/^## Index/.test(line)) break;
    const rule = /^- \*\*\[([a-z0-9.-]+)\]\*\* (.*)$/.exec(line);
    if (!rule?.[1]) continue;
    // A bullet goes on over its indented continuation lines.
    let text = rule[2] ?? "";
    while (/^ {2}\S/.test(lines[i + 1] ?? "")) text += ` ${(lines[++i] ?? "").trim()}`;
    rules.push({ id: rule[1], section, behaviour: firstSentence(text) });
  }
  return rules;
}

function firstSentence(text: string): string {
  const plain = text.replace(/`([^`]*)`/g, "$1").replace(/\*\*/g, "");
  const end = /[.!?](?=\s+[A-Z(`"]|\s*$)/.exec(plain);
  return (end ? plain.slice(0, end.index + 1) : plain).trim();
}

/** The manifest file's content: the rules as JSON, a header saying where they come from. */
export function manifestJson(rules: readonly Requirement[]): string {
  return `${JSON.stringify(
    {
      $comment: "Generated from docs/protocol.md by `npm run generate` (scripts/requirements). Do not edit.",
      requirements: rules,
    },
    null,
    2,
  )}\n`;
}

/**
 * The rule ids a source file cites: a `// rule: a.b, c.d` comment (test files: the tests right below
 * check those rules) or a `rules: ["a.b"]` field (conformance scenarios).
 */
export function citedIds(source: string): string[] {
  const ids: string[] = [];
  for (const match of source.matchAll(/\/\/ rules?: ([a-z0-9.-]+(?:, *[a-z0-9.-]+)*)/g)) {
    ids.push(...(match[1] ?? "").split(/, */));
  }
  for (const match of source.matchAll(/\brules: \[([^\]]*)\]/g)) {
    for (const id of (match[1] ?? "").matchAll(/"([a-z0-9.-]+)"/g)) if (id[1]) ids.push(id[1]);
  }
  return ids;
}

/**
 * Where tests and scenarios live: every `*.test.ts` and the conformance kit's scenarios, outside
 * node_modules and dist, and outside this folder (its own tests quote the citation syntax).
 */
export async function citingFiles(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".")) continue;
      const full = path.join(dir, entry.name);
      if (full === here) continue;
      if (entry.isDirectory()) await walk(full);
      else if (entry.name.endsWith(".test.ts") || full.includes(`${path.sep}scenarios${path.sep}`)) found.push(full);
    }
  };
  for (const top of ["spec", "scripts", "packages", "apps", "tests"]) await walk(path.join(root, top));
  return found.sort();
}

/** Every cited id with the files that cite it (paths relative to `root`). */
export async function citations(root: string): Promise<Map<string, string[]>> {
  const cited = new Map<string, string[]>();
  for (const file of await citingFiles(root)) {
    const relative = path.relative(root, file);
    for (const id of citedIds(await readFile(file, "utf8"))) {
      const files = cited.get(id) ?? [];
      if (!files.includes(relative)) files.push(relative);
      cited.set(id, files);
    }
  }
  return cited;
}
