/** The requirements manifest: each rule of docs/protocol.md as data (id, section, behaviour), and the tests and scenarios that cite them. */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

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
    if (heading?.[1]) {
      section = heading[1];
    }
    if (/^## Index/.test(line)) {
      break;
    }
    const rule = /^- \*\*\[([a-z0-9.-]+)\]\*\* (.*)$/.exec(line);
    if (!rule?.[1]) {
      continue;
    }
    // A bullet goes on over its indented continuation lines.
    let text = rule[2] ?? "";
    while (/^ {2}\S/.test(lines[i + 1] ?? "")) {
      text += ` ${(lines[++i] ?? "").trim()}`;
    }
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

/** A place that cites rules: a test's `verifies(...)` call or a scenario's `rules` field. */
export interface Citation {
  /** The rule ids, as written. */
  ids: string[];
  /** Where the place starts, from 1. */
  line: number;
}

/** What the check cannot accept in a file, at a line. */
export interface CitationProblem {
  line: number;
  message: string;
}

/**
 * What a test file (`*.test.ts`) cites: the first argument of each `verifies(ids, name, fn)` and
 * `verifies.each(table)(ids, name, fn)` (@otc/test-helpers/verifies), a string or an array of strings.
 * A first argument the check cannot read, and a `// rule:` comment (the old form), are problems.
 */
export function testCitations(source: string): { citations: Citation[]; problems: CitationProblem[] } {
  const file = ts.createSourceFile("cites.test.ts", source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lineOf = (node: ts.Node) => file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
  const citations: Citation[] = [];
  const problems: CitationProblem[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && isVerifies(node.expression)) {
      const ids = literalIds(node.arguments[0]);
      if (ids) {
        citations.push({ ids, line: lineOf(node) });
      } else {
        problems.push({
          line: lineOf(node),
          message:
            "the rule ids of verifies(...) are not a string or an array of strings written out, so no check reads them",
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  source.split("\n").forEach((text, index) => {
    if (/\/\/ rules?: [a-z0-9]/.test(text)) {
      problems.push({
        line: index + 1,
        message:
          "a `// rule:` comment no longer cites a rule: declare the test with verifies(ids, name, fn) from @otc/test-helpers/verifies",
      });
    }
  });
  return { citations, problems: problems.sort((a, b) => a.line - b.line) };
}

/** `verifies` or `verifies.each(table)`: the callee of a call whose first argument is the rule ids. */
function isVerifies(callee: ts.Expression): boolean {
  if (ts.isIdentifier(callee)) {
    return callee.text === "verifies";
  }
  return (
    ts.isCallExpression(callee) &&
    ts.isPropertyAccessExpression(callee.expression) &&
    ts.isIdentifier(callee.expression.expression) &&
    callee.expression.expression.text === "verifies"
  );
}

/** The ids a string or an array of strings names; undefined for anything else, which the check cannot read. */
function literalIds(node: ts.Expression | undefined): string[] | undefined {
  if (node && ts.isStringLiteralLike(node)) {
    return [node.text];
  }
  if (!node || !ts.isArrayLiteralExpression(node) || node.elements.length === 0) {
    return undefined;
  }
  const ids = node.elements.map((element) => (ts.isStringLiteralLike(element) ? element.text : undefined));
  return ids.every((id) => id !== undefined) ? ids : undefined;
}

/** What a conformance scenario file cites: each scenario's `rules: ["a.b", ...]` field. */
export function scenarioCitations(source: string): Citation[] {
  return [...source.matchAll(/\brules: \[([^\]]*)\]/g)].map((match) => ({
    ids: [...(match[1] ?? "").matchAll(/"([a-z0-9.-]+)"/g)].map((id) => id[1] ?? ""),
    line: source.slice(0, match.index).split("\n").length,
  }));
}

/**
 * Where tests and scenarios live: every `*.test.ts` and the conformance kit's scenarios, outside
 * node_modules and dist, and outside the files that quote the citation syntax with made-up ids (this
 * folder's tests, and those of the verifies helper).
 */
export async function citingFiles(root: string): Promise<string[]> {
  const quoting = [here, path.join(root, "tests/helpers/test/verifies.test.ts")];
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".")) {
        continue;
      }
      const full = path.join(dir, entry.name);
      if (quoting.includes(full)) {
        continue;
      }
      if (entry.isDirectory()) {
        await walk(full);
      } else if (entry.name.endsWith(".test.ts") || full.includes(`${path.sep}scenarios${path.sep}`)) {
        found.push(full);
      }
    }
  };
  for (const top of ["spec", "scripts", "packages", "apps", "tests"]) {
    await walk(path.join(root, top));
  }
  return found.sort();
}

/**
 * Every cited id with the places that cite it (`path:line`, relative to `root`), and every problem
 * (`path:line: message`): a test file cites with verifies(...), a scenario file with `rules`.
 */
export async function citations(root: string): Promise<{ cited: Map<string, string[]>; problems: string[] }> {
  const cited = new Map<string, string[]>();
  const problems: string[] = [];
  for (const file of await citingFiles(root)) {
    const relative = path.relative(root, file);
    const source = await readFile(file, "utf8");
    const found = file.endsWith(".test.ts")
      ? testCitations(source)
      : { citations: scenarioCitations(source), problems: [] };
    for (const { ids, line } of found.citations) {
      for (const id of ids) {
        cited.set(id, [...(cited.get(id) ?? []), `${relative}:${line}`]);
      }
    }
    for (const { line, message } of found.problems) {
      problems.push(`${relative}:${line}: ${message}`);
    }
  }
  return { cited, problems };
}
