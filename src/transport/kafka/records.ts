/** The records that cross the Kafka seam: what idd sends, what it reads, and a fetched batch with its context. */

export interface OutRecord {
  topic: string;
  partition?: number;
  key: Buffer | string | null;
  value: Buffer;
  /** A header given more than once (a forwarded request keeps its headers as they came) is an array. */
  headers: Record<string, Buffer | string | (Buffer | string)[]>;
}

export interface InRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer | string | (Buffer | string)[] | undefined>;
  offset: string;
  /** Milliseconds since the epoch: its producer's clock when it was sent (CreateTime), or the broker's (LogAppendTime). */
  timestamp: string;
  /**
   * Set when this record stands for a whole batch that could not be decoded (unreadable-batch.ts):
   * its offset is the batch's last, its value the batch's bytes as fetched, its headers empty.
   */
  unreadable?: Unreadable;
}

/** A fetched batch that could not be decoded: which offsets it held, its codec, and why. */
export interface Unreadable {
  firstOffset: string;
  lastOffset: string;
  codec: string;
  reason: string;
}

export interface Batch {
  topic: string;
  partition: number;
  records: InRecord[];
  /** The partition's end offset when the batch was fetched (its lag: this minus the next offset to read). */
  highWatermark: string;
}

export interface BatchContext {
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping or rebalancing: no new work should start. */
  isRunning(): boolean;
  /**
   * Whether the group coordinator vouched for this member less than the ownership lease (half the
   * session timeout) ago: no other member can own the partition before that lease runs out. False:
   * answer nothing until a heartbeat succeeds (or fails, and the partition moves on).
   */
  proven(): boolean;
  /**
   * Marks everything before `offset` (the next offset to read) done and commits it in the
   * background, in order per partition, so the next fetch need not wait for the round trip. A
   * commit that fails is logged: the partition's next owner reads those records again (idd answers
   * them alike). Closing the consumer waits for the commits in flight.
   */
  commit(offset: string): void;
}
