/**
 * The Kafka half of a partition's lease (design §5.17, ownership lease): a step starts only while
 * the group coordinator vouched for this worker less than the lease ago (`proven`, kept by the
 * consumer's membership, src/transport/kafka/membership.ts). A worker cut from the coordinator
 * still fetches, and must not answer what another owner answers by then.
 */
import type { Logger } from "pino";

/** What a batch knows of this worker's membership (src/transport/kafka/ `BatchContext`). */
export interface Member {
  /** Whether the coordinator vouched for this member within the lease. */
  proven(): boolean;
  isRunning(): boolean;
  heartbeat(): Promise<void>;
}

/**
 * Waits until the group coordinator vouched for this member within the ownership lease (a
 * heartbeat answered without error); false when the batch stops first. A heartbeat that fails
 * throws: the partition moves on, and this worker answers nothing more of it.
 */
export async function vouched(member: Member, partition: number, log: Logger): Promise<boolean> {
  if (member.proven()) return true;
  const since = performance.now();
  log.warn(
    { partition },
    "the group has not vouched for this worker within the ownership lease: answering nothing until a heartbeat succeeds",
  );
  while (!member.proven()) {
    if (!member.isRunning()) return false;
    await member.heartbeat();
    if (!member.proven()) await new Promise((r) => setTimeout(r, 50));
  }
  log.info({ partition, waitedMs: Math.round(performance.now() - since) }, "the group vouched for this worker again: answering");
  return true;
}
