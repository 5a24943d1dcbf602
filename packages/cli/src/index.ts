/** @otc/cli as a library: the bindings generator and the command, for tools that build on them. */

export { EXIT, formatTools, HELP, type Io, run } from "./cli.js";
export { generateBindings, typeNameOf } from "./codegen.js";
