/**
 * Client partitioners as tests need them: librdkafka's default (`consistent_random`, what Python,
 * Go, .NET, Rust and C/C++ clients use unless told otherwise) emulated for kafkajs, so that one
 * Node process can be a "non-Java" client.
 */
import { crc32 } from "node:zlib";
import type { KeyPartitioner } from "../../src/transport/kafka/index.js";

/** librdkafka `consistent_random`: CRC-32 of the key modulo the partition count; a random partition for no key. */
export const librdkafkaDefault: KeyPartitioner = (key, partitions) =>
  key === null || key.length === 0 ? Math.floor(Math.random() * partitions) : crc32(key) % partitions;
