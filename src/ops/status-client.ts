/** Reads a worker's `/status.json` (for `idd status --url`), with a timeout and a version check. */
import { IddError } from "../core/errors.js";
import { STATUS_VERSION, type StatusSnapshot } from "./status.js";

/** `token`: the worker's IDD_HTTP_TOKEN, sent as a bearer token. */
export async function readStatus(base: string, o: { timeoutMs?: number; token?: string } = {}): Promise<StatusSnapshot> {
  const timeoutMs = o.timeoutMs ?? 5000;
  let url: URL;
  try {
    url = new URL("status.json", base.endsWith("/") ? base : `${base}/`);
  } catch {
    throw new IddError("STATUS_UNAVAILABLE", `${base}: not a URL (expected e.g. http://127.0.0.1:9464)`);
  }
  let res: Response;
  try {
    res = await fetch(url, {
      signal: AbortSignal.timeout(timeoutMs),
      ...(o.token && { headers: { authorization: `Bearer ${o.token}` } }),
    });
  } catch (e) {
    // fetch says "fetch failed"; the reason (ECONNREFUSED, a timeout) is its cause
    const why = (e as { cause?: { message?: string } }).cause?.message ?? (e as Error).message;
    throw new IddError("STATUS_UNAVAILABLE", `${url}: ${why}`, { cause: e });
  }
  if (res.status === 401) throw new IddError("STATUS_UNAVAILABLE", `${url}: HTTP 401: pass the worker's token (--token or IDD_HTTP_TOKEN)`);
  if (!res.ok) throw new IddError("STATUS_UNAVAILABLE", `${url}: HTTP ${res.status}`);
  const body = (await res.json().catch(() => undefined)) as StatusSnapshot | undefined;
  if (body?.version !== STATUS_VERSION) {
    throw new IddError("STATUS_UNAVAILABLE", `${url}: not an idd status snapshot of version ${STATUS_VERSION}`);
  }
  return body;
}
