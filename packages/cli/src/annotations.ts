/** How otc words a tool's annotations (docs/protocol.md 9.2), the same in the tools table and in generated bindings. */
import { type ToolAnnotations, ToolAnnotationsSchema } from "@otc/types";

/** The hints (the annotations that are booleans), in the spec's order, each with its word: `read_only` is `read-only`. */
const HINTS = Object.entries(ToolAnnotationsSchema.properties)
  .filter(([, property]) => property.type === "boolean")
  .map(([key]) => [key, key.replaceAll("_", "-")] as const);

/**
 * The hints a tool states, in words: `read-only` for `read_only: true`, `not read-only` for `false`, and so on.
 * An absent hint is not shown: it takes the protocol's default, and the tool said nothing about it. Anything
 * but a boolean is left out (a server's list is checked against the spec; a catalog file may hold anything).
 *
 * @example
 * hintWords({ read_only: true, open_world: false }); // ["read-only", "not open-world"]
 */
export function hintWords(annotations: ToolAnnotations | undefined): string[] {
  const words: string[] = [];
  for (const [key, word] of HINTS) {
    const value: unknown = (annotations as Record<string, unknown> | undefined)?.[key];
    if (value === true) {
      words.push(word);
    } else if (value === false) {
      words.push(`not ${word}`);
    }
  }
  return words;
}
