/** Waiting in tests: one polling loop for every "until this shows up", and a sleep. */

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export interface PollOptions {
  /** How long to keep trying (default 20 s). */
  timeoutMs?: number;
  /** The pause between two tries (default 100 ms): short where the thing waited for is quick. */
  everyMs?: number;
}

/** Not there yet: `find` returns one of these while it should be asked again. */
type Pending = undefined | null | false;

/**
 * Asks `find` until it returns something (neither undefined, null nor false) and returns that, or
 * undefined once `timeoutMs` passed. `find` is asked at least once, and once more after the deadline
 * when the last pause crossed it.
 */
export async function poll<T>(
  find: () => T | Pending | Promise<T | Pending>,
  o: PollOptions = {},
): Promise<Exclude<T, Pending> | undefined> {
  const { timeoutMs = 20_000, everyMs = 100 } = o;
  const end = Date.now() + timeoutMs;
  for (;;) {
    const found = await find();
    if (found !== undefined && found !== null && found !== false) return found as Exclude<T, Pending>;
    if (Date.now() > end) return undefined;
    await sleep(everyMs);
  }
}

/** Like `poll`, but a timeout throws "timed out waiting for <what>". */
export async function waitFor<T>(
  what: string,
  find: () => T | Pending | Promise<T | Pending>,
  o: PollOptions = {},
): Promise<Exclude<T, Pending>> {
  const found = await poll(find, o);
  if (found === undefined) throw new Error(`timed out waiting for ${what}`);
  return found;
}

/** `p`, or a rejection "<what> did not finish within <ms> ms" once `ms` passed. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
