/** Loads an optional peer dependency, or says which package to install and what needs it. */
import { ServerConfigError } from "../core/errors.js";

/** The module `load` imports; when the package is not installed, a {@link ServerConfigError} naming it and the install command. */
export async function optionalPeer<T>(load: () => Promise<T>, name: string, neededBy: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown } | undefined)?.code;
    if (code !== "ERR_MODULE_NOT_FOUND" && code !== "MODULE_NOT_FOUND") {
      throw error;
    }
    throw new ServerConfigError(`${neededBy} needs the package '${name}': npm install ${name}`);
  }
}
