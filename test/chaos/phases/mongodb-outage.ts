/** `mongodb-outage`: MongoDB down for a while, then up again on its data. */
import { sleep } from "../../support/wait.js";
import type { StackControl } from "../private-stack.js";
import type { PhaseState } from "../records.js";

export interface MongodbOutageContext {
  stack: Pick<StackControl, "service">;
  mongodbOutageMs: number;
}

export async function mongodbOutage(p: PhaseState, { stack, mongodbOutageMs }: MongodbOutageContext): Promise<void> {
  await stack.service("mongodb", "down", p.notes);
  await sleep(mongodbOutageMs);
  await stack.service("mongodb", "up", p.notes);
  p.healedAt = Date.now();
}
