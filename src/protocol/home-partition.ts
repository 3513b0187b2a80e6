/**
 * A sequence's home partition: the one request partition whose owner issues the sequence's numbers
 * (G2 for every client, whatever its partitioner). It is Kafka's Java default for a record keyed by
 * the sequence name — murmur2 of the name's UTF-8 bytes, made positive, modulo the request topic's
 * partition count — so Java, Spring, kafkajs and librdkafka `partitioner=murmur2_random` clients
 * send requests straight home; other partitioners' requests are forwarded there by the worker that
 * reads them (docs/wire-contract.md: Routing).
 */

/** Kafka's `Utils.murmur2` (32-bit MurmurHash2, seed 0x9747b28c), as a signed 32-bit integer. */
export function murmur2(data: Uint8Array): number {
  const m = 0x5bd1e995;
  const length = data.length;
  let h = (0x9747b28c ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = (data[i] as number) | ((data[i + 1] as number) << 8) | ((data[i + 2] as number) << 16) | ((data[i + 3] as number) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  // The 1 to 3 bytes left over, as Kafka's switch that falls through from case 3 to case 1.
  const tail = length & 3;
  if (tail >= 3) h ^= (data[whole + 2] as number) << 16;
  if (tail >= 2) h ^= (data[whole + 1] as number) << 8;
  if (tail >= 1) {
    h ^= data[whole] as number;
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h;
}

/** The partition of `partitions` whose owner issues `sequence`: `(murmur2(utf8(sequence)) & 0x7fffffff) % partitions`. */
export function homePartition(sequence: string, partitions: number): number {
  return (murmur2(Buffer.from(sequence, "utf8")) & 0x7fffffff) % partitions;
}
