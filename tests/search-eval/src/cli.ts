/**
 * `npm run eval:search`: prints each ranker's Recall@1, Recall@5, MRR and Recall@5 per kind of query over the
 * fixtures. Writes nothing (scripts/record-figures.ts updates fixtures/recorded.json).
 */
import { definitionsOf, evaluate, floor3, loadCatalog, loadQueries, QUERY_KINDS, RANKERS } from "./eval.js";

const catalog = loadCatalog();
const definitions = definitionsOf(catalog);
const queries = loadQueries();

const counts = QUERY_KINDS.map((kind) => `${kind} ${queries.filter((query) => query.kind === kind).length}`);
const rows = [
  ["ranker", "Recall@1", "Recall@5", "MRR", ...QUERY_KINDS.map((kind) => `R@5 ${kind}`)],
  ...RANKERS.map(({ name, ranker }) => {
    const figures = evaluate(ranker, definitions, queries);
    const cells = [
      figures.recallAt1,
      figures.recallAt5,
      figures.mrr,
      ...QUERY_KINDS.map((k) => figures.byKind[k].recallAt5),
    ];
    return [name, ...cells.map((value) => floor3(value).toFixed(3))];
  }),
];
const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
const lines = [
  `${queries.length} queries (${counts.join(", ")}) over ${definitions.length} tools from ${catalog.sources.length} MCP servers`,
  "",
  ...rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd(),
  ),
];
process.stdout.write(`${lines.join("\n")}\n`);
