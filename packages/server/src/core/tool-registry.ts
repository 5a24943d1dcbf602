/** The tools a server offers, checked and compiled once at start-up, found by tool id. */
import { defaultValidators } from "@otc/server/validation/default";
import {
  compareToolVersions,
  formatToolId,
  type ParsedToolId,
  parseToolId,
  resolveToolVersion,
  type ToolDefinition,
} from "@otc/types";
import { ServerConfigError } from "./errors.js";
import { checkValidators, type InputValidatorChoice, type SchemaValidator } from "./input-validation.js";
import { describeHint, selfContainedHint } from "./standard-schema.js";
import { inputSchemaLibrary, type Tool } from "./tool.js";
import { checkToolDefinition, type ListForm, listedForm, toToolDefinition } from "./tool-definitions.js";
import { type InputParser, standardInputParser } from "./validation/standard-schema.js";

/** A tool with everything the server needs per call worked out in advance. */
export interface RegisteredTool {
  readonly tool: Tool;
  readonly definition: ToolDefinition;
  readonly input: SchemaValidator;
  /** Undefined when the output schema is `null` (the value is always null) or accepts anything. */
  readonly output: SchemaValidator | undefined;
  /**
   * For a tool whose input a schema library validates (a Standard Schema): that check, used instead of `input`,
   * which then only proves the JSON Schema the tool is listed with compiles.
   */
  readonly parse?: InputParser | undefined;
}

/** Why a tool id did not resolve. */
export type ToolLookup =
  | { found: true; registered: RegisteredTool }
  | { found: false; reason: "invalid_id"; available: readonly string[] }
  | { found: false; reason: "unknown_tool" | "unknown_version"; request: ParsedToolId; available: readonly string[] };

/** Holds the tools; refuses bad or duplicate definitions when built. */
export class ToolRegistry {
  private readonly byId = new Map<string, RegisteredTool>();
  private readonly versionsByName = new Map<string, string[]>();
  /** Every definition with every extension's fields, in the order the tools were given. */
  private readonly full: ToolDefinition[] = [];
  /** The list in each form (see {@link formSlot}), made when first asked for. */
  private readonly forms: (readonly ToolDefinition[] | undefined)[] = [];
  /** Every tool's `required_scopes`, for the oauth extension's resource metadata. */
  readonly requiredScopes = new Set<string>();
  /**
   * Successful lookups by the id as written. Bounded: only ids that name a registered tool get in,
   * and each tool has a handful of spellings (`A.B`, `A.B@1`, `A.B@1.0.0`). The catalog never changes.
   */
  private readonly found = new Map<string, { found: true; registered: RegisteredTool }>();
  /** The name of the validator the tools' schemas were compiled with (`ajv`, `cfworker`). */
  readonly validator: string;

  /** Checks and compiles `tools` with `inputValidator`, or the runtime's default (see {@link InputValidatorChoice}). */
  constructor(tools: readonly Tool[], inputValidator?: InputValidatorChoice) {
    // The runtime's own when none is given, chosen by export condition: the core never loads the other one.
    const validators = inputValidator === undefined ? defaultValidators() : checkValidators(inputValidator);
    this.validator = validators.name;
    for (const tool of tools) {
      const definition = toToolDefinition(tool);
      if (this.byId.has(definition.id)) {
        throw new ServerConfigError(`Tool '${definition.id}' is defined twice`);
      }
      const vendor = inputSchemaLibrary(tool);
      const compiled = checkToolDefinition(definition, {
        toolkit: tool.toolkit,
        validators,
        library: tool.inputStandardSchema && {
          hints:
            vendor === undefined
              ? undefined
              : { selfContained: selfContainedHint(vendor), description: describeHint(vendor) },
        },
      });
      if (tool.timeoutMs !== undefined && !(tool.timeoutMs > 0)) {
        throw new ServerConfigError(`Tool '${definition.id}' is refused: timeoutMs must be a positive number`);
      }
      const output = definition.output_schema;
      const registered: RegisteredTool = {
        tool,
        definition,
        input: compiled.input,
        // An empty output schema accepts anything: no check at all.
        output: output === null || Object.keys(output).length === 0 ? undefined : compiled.output,
        parse: tool.inputStandardSchema ? standardInputParser(tool.inputStandardSchema) : undefined,
      };
      this.byId.set(definition.id, registered);
      const qualified = formatToolId({ toolkit: tool.toolkit, tool: tool.name });
      this.versionsByName.set(qualified, [...(this.versionsByName.get(qualified) ?? []), tool.version]);
      this.full.push(definition);
      for (const scope of definition.required_scopes ?? []) {
        this.requiredScopes.add(scope);
      }
    }
    for (const versions of this.versionsByName.values()) {
      versions.sort(compareToolVersions);
    }
  }

  /**
   * Every definition, in the order the tools were given: as OXP 1.0 lists them, or with the annotations
   * extension's fields (docs/protocol.md 9.2).
   */
  list(form: ListForm = {}): readonly ToolDefinition[] {
    const slot = formSlot(form);
    let list = this.forms[slot];
    if (!list) {
      list = Object.freeze(this.full.map((definition) => listedForm(definition, form)));
      this.forms[slot] = list;
    }
    return list;
  }

  /** Resolves a tool id (`Toolkit.Tool`, `@x`, `@x.y.z`) to one registered version. */
  lookup(toolId: string): ToolLookup {
    const known = this.found.get(toolId);
    if (known) {
      return known;
    }
    const request = parseToolId(toolId);
    if (!request) {
      return { found: false, reason: "invalid_id", available: [] };
    }
    const available = this.versionsByName.get(request.qualifiedName) ?? [];
    if (available.length === 0) {
      return { found: false, reason: "unknown_tool", request, available };
    }
    const version = resolveToolVersion(available, request);
    const registered = version === undefined ? undefined : this.byId.get(formatToolId({ ...request, version }));
    if (!registered) {
      return { found: false, reason: "unknown_version", request, available };
    }
    const result = { found: true as const, registered };
    this.found.set(toolId, result);
    return result;
  }
}

/** A list form's index among the four: one bit per extension whose fields it carries. */
export function formSlot(form: ListForm): number {
  return (form.annotations ? 1 : 0) | (form.scopes ? 2 : 0);
}
