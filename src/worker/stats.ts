/** What a worker counts of its requests, as `idd worker` logs it when it stops. */
import type { DeliveryStats } from "./delivery.js";

export interface WorkerStats extends DeliveryStats {
  requests: number;
  /** Consumer crashes (an error escaped a batch): each one costs a rejoin. */
  crashes: number;
}

export function newWorkerStats(): WorkerStats {
  return { requests: 0, replies: 0, deadLetters: 0, lost: 0, crashes: 0, forwarded: 0 };
}
