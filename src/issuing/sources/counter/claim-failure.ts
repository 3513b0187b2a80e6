/**
 * A claim that failed on an error neither store's seam coded (an IddError passes as it is): Redis
 * refused, reset or timed out, or the MongoDB driver failed (reading the reservation in force, a
 * restore's records, a grant written before use). The message names the store the error came from;
 * it used to say "Redis unreachable" for both, and sent operators to the wrong service.
 */
import { IddError } from "../../../core/errors.js";
import { fromMongoDB } from "../../../storage/connection.js";

export type FailedStore = "MongoDB" | "Redis";

/** The store `e` came from: MongoDB's driver errors are MongoDB's, anything else the claim's Redis. */
export const failedStore = (e: unknown): FailedStore => (fromMongoDB(e) ? "MongoDB" : "Redis");

/** The UNAVAILABLE a claim of counter `key` answers for `e`. */
export function claimFailure(key: string, e: unknown): IddError {
  return new IddError("UNAVAILABLE", `${key}: ${failedStore(e)} unreachable (${(e as Error).message})`, { cause: e });
}
