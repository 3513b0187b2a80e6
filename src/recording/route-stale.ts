/** The errors of recording under a partition's owner token: a newer owner, or a larger partition count. */
import { IddError } from "../errors.js";

/** Thrown when the request topic's partition count in force is larger than the one the caller routes by. */
export function routeStale(partitions: number, inForce: number): IddError {
  return new IddError(
    "ROUTE_STALE",
    `the request topic has ${inForce} partitions in force; this worker routed by ${partitions}: it learns the new count and routes again`,
    { retriable: true },
  );
}

/** Thrown when another worker took the partition's owner token. */
export function workerFenced(partition: number, token: string): IddError {
  return new IddError("WORKER_FENCED", `partition ${partition} has a newer owner than token ${token}`);
}
