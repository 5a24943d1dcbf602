/** What every `otc` command shares: where it writes (`Io`) and its exit codes (`EXIT`), apart from the commands so none imports another. */

/** Exit codes, one per kind of outcome; `otc --help` lists them. */
export const EXIT = {
  ok: 0,
  toolFailed: 1,
  usage: 2,
  connection: 3,
  authentication: 4,
  refused: 5,
  invalidInput: 6,
  protocol: 7,
  /** Ctrl-C (SIGINT), as a shell reports a process it stopped: 128 + 2. */
  interrupted: 130,
} as const;

/** Where the command writes, and what it reads from its environment. */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  /** Present when stderr is a terminal: its width. Progress is then drawn in place; without it, printed line by line. */
  terminal?: { columns: number };
  /**
   * Aborts as Ctrl-C does, for a caller that runs the command in process (tests). Without it, a command that
   * handles Ctrl-C itself (`otc call --async`) listens for SIGINT while it runs, and only then.
   */
  interrupt?: AbortSignal;
}
