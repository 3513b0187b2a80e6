/** Reads a worker's `/status.json` (for `idd status --url`), with a timeout and a version check. */
import { IddError } from "../errors.js";
import { STATUS_VERSION, type StatusSnapshot } from "./status.js";

export async function readStatus(base: string, timeoutMs = 5000): Promise<StatusSnapshot> {
  let url: URL;
  try {
    url = new URL("status.json", base.endsWith("/") ? base : `${base}/`);
  } catch {
    throw new IddError("STATUS_UNAVAILABLE", `${base}: not a URL (expected e.g. http://127.0.0.1:9464)`);
  }
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    // fetch says "fetch failed"; the reason (ECONNREFUSED, a timeout) is its cause
    const why = (e as { cause?: { message?: string } }).cause?.message ?? (e as Error).message;
    throw new IddError("STATUS_UNAVAILABLE", `${url}: ${why}`, { cause: e });
  }
  if (!res.ok) throw new IddError("STATUS_UNAVAILABLE", `${url}: HTTP ${res.status}`);
  const body = (await res.json().catch(() => undefined)) as StatusSnapshot | undefined;
  if (body?.version !== STATUS_VERSION) {
    throw new IddError("STATUS_UNAVAILABLE", `${url}: not an idd status snapshot of version ${STATUS_VERSION}`);
  }
  return body;
}
