/**
 * Routing a step's accepted requests (docs/wire-contract.md: Routing): the ones whose sequence
 * lives on the step's partition go to the dispenser; the others are forwarded, unchanged but for
 * the hop count, to their home partition.
 */
import type { Logger } from "pino";
import { IddError, isIddError } from "../core/errors.js";
import type { Dispenser } from "../issuing/dispenser.js";
import type { Ownership } from "../ownership/ownership.js";
import type { PartitionCount } from "../ownership/partition-count.js";
import { forwards, HEADER_FORWARDS } from "../protocol/headers.js";
import { homePartition } from "../protocol/home-partition.js";
import type { IdReply } from "../protocol/reply.js";
import type { OutRecord } from "../transport/kafka/index.js";
import { replyRecord } from "./answer.js";
import { type Item, type Pending, replyError } from "./item.js";

/**
 * A request forwarded this often without reaching home is answered UNROUTABLE. Workers that
 * disagree on the request topic's partition count ask the brokers when a forwarded record is not
 * home, so they agree within a hop or two; more only comes from a client's forged header.
 */
export const MAX_FORWARDS = 8;

/** Homes remembered per partition count; names are client input, so the memory is bounded (cleared when full). */
const MAX_REMEMBERED_HOMES = 10_000;

export interface RouterDeps {
  requestTopic: string;
  count: PartitionCount;
  dispenser: Dispenser;
  ownership: Ownership;
  replySchemaId: number;
  clock: () => number;
  log: Logger;
}

export class Router {
  readonly #d: RouterDeps;
  /** Home partitions by sequence name under `#homesOf` partitions: murmur2 once per name, not per request. */
  readonly #homes = new Map<string, number>();
  #homesOf = 0;

  constructor(d: RouterDeps) {
    this.#d = d;
  }

  #home(sequence: string, partitions: number): number {
    if (partitions !== this.#homesOf || this.#homes.size >= MAX_REMEMBERED_HOMES) {
      this.#homes.clear();
      this.#homesOf = partitions;
    }
    let home = this.#homes.get(sequence);
    if (home === undefined) {
      home = homePartition(sequence, partitions);
      this.#homes.set(sequence, home);
    }
    return home;
  }

  /**
   * Answers the requests whose sequence lives on `partition` and forwards the others (each item
   * gets its `out` record). The ones forwarded are handed to `forward` as soon as they are routed,
   * before the dispenser answers the rest: a forwarded request does not wait for its step's numbers
   * (issue #30). The home is computed under the partition count the dispenser records with; when
   * that count turns out stale (ROUTE_STALE: another worker took a partition under a larger one),
   * no reply was published: the count is learnt and the requests routed again.
   */
  async answerOrForward(
    partition: number,
    accepted: Pending[],
    heartbeat: () => Promise<void>,
    forward: (items: Pending[]) => void,
  ): Promise<void> {
    const { count, dispenser } = this.#d;
    let todo = accepted;
    for (let attempt = 1; todo.length > 0; attempt++) {
      // A record on a partition this worker does not know of, or forwarded here by a worker that
      // knows another count: ask the brokers first (at most every 100 ms).
      const offHome = (i: Pending) => this.#home(i.parsed.request.sequence, count.value) !== partition;
      if (partition >= count.value || todo.some((i) => offHome(i) && forwards(i.record.headers) > 0)) await count.refresh();
      const partitions = count.value;
      const here: Pending[] = [];
      const away: Pending[] = [];
      for (const item of todo) {
        const home = this.#home(item.parsed.request.sequence, partitions);
        if (home === partition) here.push(item);
        else if (this.#forward(item, home)) away.push(item);
      }
      if (away.length > 0) forward(away);
      if (here.length === 0) return;
      try {
        const replies = await dispenser.answer(
          partition,
          here.map((p) => p.parsed.request),
          heartbeat,
          partitions,
        );
        here.forEach((p, i) => {
          p.out = replyRecord(replies[i] as IdReply, p.parsed.address, p.record.key, p.parsed.format, this.#d.replySchemaId);
        });
        return;
      } catch (e) {
        if (!isIddError(e, "ROUTE_STALE") || attempt >= 3) throw e;
        this.#d.log.info({ partition, partitions, err: e.message }, "routing by a stale partition count: learning it and routing again");
        count.raise(await this.#d.ownership.partitionsInForce());
        await count.refresh();
        todo = here;
      }
    }
  }

  /**
   * Makes `out` the request record as it came, to `home`, counting the hop (true); a request
   * forwarded too often gets its UNROUTABLE error reply instead (false).
   */
  #forward(item: Pending, home: number): boolean {
    const hops = forwards(item.record.headers);
    if (hops >= MAX_FORWARDS) {
      const { request, format, address } = item.parsed;
      const error = new IddError(
        "UNROUTABLE",
        `forwarded ${hops} times without reaching partition ${home}, the home of sequence "${request.sequence}"`,
      );
      const refused: Item = item;
      refused.parsed = { ok: false, error, format, address, requestId: request.requestId, sequence: request.sequence };
      replyError(refused, this.#d.replySchemaId, this.#d.clock());
      return false;
    }
    const headers: OutRecord["headers"] = {};
    for (const [k, v] of Object.entries(item.record.headers)) if (v !== undefined) headers[k] = v;
    headers[HEADER_FORWARDS] = String(hops + 1);
    item.out = { topic: this.#d.requestTopic, partition: home, key: item.record.key, value: item.record.value as Buffer, headers };
    item.forwardedTo = home;
    return true;
  }
}
