/** What every command shares on the terminal: `idd: …` lines on stderr, and the exit codes. */
import { errorLines } from "../core/errors.js";

/** One line on stderr, prefixed `idd: ` (stdout carries only what the command prints as its result). */
export const say = (line: string) => process.stderr.write(`idd: ${line}\n`);

/** Exit codes, as the commands' help texts state them. */
export const EXIT = {
  /** done: numbers issued, value valid or computed, statuses read, replay done */
  ok: 0,
  /** done, with a result that is not all good: check invalid, some worker unreadable, some counter not restored */
  notAllGood: 1,
  /** could not run: usage, configuration, services, or an error reply to `idd next` */
  error: 2,
  /** `idd audit`: some skipped numbers are not explained by MongoDB's log (AUDIT_UNEXPLAINED) */
  unexplained: 3,
} as const;

/** An error no command handled: its lines on stderr, then exit 2. */
export function exitOnError(e: unknown): never {
  for (const line of errorLines(e)) say(line);
  process.exit(EXIT.error);
}
