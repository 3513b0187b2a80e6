/**
 * kafkajs keeps every topic a client ever sent to among its cluster's target topics, and asks for
 * their metadata on every refresh. A send naming a topic new to it refreshes, and failed with
 * UNKNOWN_TOPIC_OR_PARTITION when one of the earlier topics had been deleted since (kafkajs #1622:
 * a client's reply topic, deleted when the client closed), after the send's retries. Here
 * `addMultipleTargetTopics` meets that failure by asking which topics exist (one request for all
 * topics), dropping the earlier targets that no longer do, and refreshing once more. A topic this
 * call names that does not exist still fails it, as before.
 */

import { isUnknownTopic } from "./errors.js";

const DROPS = Symbol.for("idd.kafkajs.dropGoneTargets");

interface ClusterProto {
  targetTopics: Set<string>;
  brokerPool: {
    withBroker<T>(
      f: (b: { broker: { metadata(topics: string[]): Promise<{ topicMetadata: { topic: string }[] }> } }) => Promise<T>,
    ): Promise<T>;
  };
  addMultipleTargetTopics(topics: string[]): Promise<void>;
  [DROPS]?: true;
}

/** Patches kafkajs's `Cluster.prototype` (once). */
export function dropGoneTargets(proto: ClusterProto): void {
  if (proto[DROPS]) return;
  const add = proto.addMultipleTargetTopics;
  proto.addMultipleTargetTopics = async function (this: ClusterProto, topics: string[]) {
    try {
      return await add.call(this, topics);
    } catch (e) {
      // kafkajs put back the targets it had before the call: the earlier ones are those not named now.
      const before = [...this.targetTopics].filter((t) => !topics.includes(t));
      if (!isUnknownTopic(e) || before.length === 0) throw e;
      const { topicMetadata } = await this.brokerPool.withBroker(({ broker }) => broker.metadata([]));
      const existing = new Set(topicMetadata.map((t) => t.topic));
      const gone = before.filter((t) => !existing.has(t));
      if (gone.length === 0) throw e;
      for (const t of gone) this.targetTopics.delete(t);
      return await add.call(this, topics);
    }
  };
  proto[DROPS] = true;
}
