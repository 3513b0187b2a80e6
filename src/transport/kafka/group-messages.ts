/**
 * A linear grouping of a produce call's messages per partition, put in place of kafkajs's own.
 *
 * kafkajs's `src/producer/groupMessagesPerPartition.js` copies a partition's array for every message
 * it adds (`[...current, message]`): quadratic in the messages of one partition, and under a burst a
 * fifth of the bytes a worker allocates. kafkajs's `sendMessages.js` requires that module once, when
 * kafkajs is loaded; so this module, imported by kafka/index.ts before anything that loads kafkajs,
 * puts `groupMessagesPerPartition` below in Node's require cache under that module's path, and
 * kafkajs then takes it from there. node_modules stays as installed. group-messages.test.ts fails
 * when kafkajs no longer loads the module from that path, or when the two disagree.
 */
import { createRequire, Module } from "node:module";

const require = createRequire(import.meta.url);

/** kafkajs's module that this one replaces, and the module that requires it. */
export const GROUPING_MODULE = require.resolve("kafkajs/src/producer/groupMessagesPerPartition.js");
export const SEND_MESSAGES_MODULE = require.resolve("kafkajs/src/producer/sendMessages.js");

interface GroupArgs<M> {
  topic: string;
  partitionMetadata: unknown[];
  messages: M[];
  partitioner: (a: { topic: string; partitionMetadata: unknown[]; message: M }) => number;
}

/** What kafkajs's module returns (messages by partition, in their order), in one pass. */
export function groupMessagesPerPartition<M>({ topic, partitionMetadata, messages, partitioner }: GroupArgs<M>): Record<number, M[]> {
  const out: Record<number, M[]> = {};
  if (partitionMetadata.length === 0) return out;
  for (const message of messages) {
    const partition = partitioner({ topic, partitionMetadata, message });
    const current = out[partition];
    if (current) current.push(message);
    else out[partition] = [message];
  }
  return out;
}

/**
 * Puts the linear grouping in the require cache; false when kafkajs's producer was loaded before
 * (then it keeps its own, which gives the same result, only slower).
 */
function install(): boolean {
  if (require.cache[SEND_MESSAGES_MODULE]) return require.cache[GROUPING_MODULE]?.exports === groupMessagesPerPartition;
  const m = new Module(GROUPING_MODULE);
  m.filename = GROUPING_MODULE;
  m.exports = groupMessagesPerPartition;
  m.loaded = true;
  require.cache[GROUPING_MODULE] = m;
  return true;
}

export const installed = install();
