/**
 * What a consumer can prove about its place in the group, from the group coordinator's answers:
 * when it last heard that it is still a member of the current generation, and whether it joined as
 * a new member (an expulsion) since the last time. Fetching proves nothing: a broker serves fetches
 * to a member the coordinator expelled long ago, so a worker cut from the coordinator (a zombie)
 * could otherwise answer requests another worker owns by then.
 *
 * The proof is the time a heartbeat (or the SyncGroup request of a join) that the coordinator
 * answered without error was *sent*: the coordinator received it later, so it expels this member no
 * sooner than that plus the session timeout. A worker starts a step only while its proof is younger
 * than the lease, half the session timeout, which leaves the other half for the step (design §5.17,
 * ownership lease).
 */
import type { Consumer as KConsumer } from "kafkajs";

export class Membership {
  readonly leaseMs: number;
  /** performance.now() when the proving request was sent; -Infinity: nothing proven yet. */
  #provenAt = Number.NEGATIVE_INFINITY;
  /** When the latest Heartbeat and SyncGroup requests (answered, with or without error) were sent. */
  readonly #sent = { Heartbeat: Number.NEGATIVE_INFINITY, SyncGroup: Number.NEGATIVE_INFINITY };
  #memberId: string | undefined;

  constructor(sessionTimeoutMs: number) {
    this.leaseMs = sessionTimeoutMs / 2;
  }

  /**
   * Follows `member`'s requests and group events. `onJoin` is told, at every join, whether this is a
   * new membership (another member id than the last join's: the coordinator expelled the old one,
   * and the partitions may have had other owners in between even if the same ones come back).
   */
  follow(member: KConsumer, onJoin: (fresh: boolean) => void): void {
    member.on(member.events.REQUEST, (e) => {
      const api = e.payload.apiName;
      if (api === "Heartbeat" || api === "SyncGroup") this.#sent[api] = performance.now() - e.payload.duration;
    });
    member.on(member.events.HEARTBEAT, () => this.#prove(this.#sent.Heartbeat));
    member.on(member.events.GROUP_JOIN, (e) => {
      this.#prove(this.#sent.SyncGroup);
      const fresh = this.#memberId !== undefined && this.#memberId !== e.payload.memberId;
      this.#memberId = e.payload.memberId;
      onJoin(fresh);
    });
  }

  #prove(sentAt: number): void {
    if (sentAt > this.#provenAt) this.#provenAt = sentAt;
  }

  /** Whether the coordinator said this member is in the group less than the lease ago (by when it was asked). */
  proven(now = performance.now()): boolean {
    return now - this.#provenAt < this.leaseMs;
  }

  /** ms since the proving request was sent. */
  age(now = performance.now()): number {
    return now - this.#provenAt;
  }

  /** A member that left or crashed proves nothing; the next member starts from nothing. */
  forget(): void {
    this.#provenAt = Number.NEGATIVE_INFINITY;
  }
}
