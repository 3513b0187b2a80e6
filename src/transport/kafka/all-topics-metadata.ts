/**
 * kafkajs throws on the first partition-level error of a Metadata response, whatever the topic. A
 * request for all topics (what kafkajs asks when a client connects before it names a topic, and
 * what an admin's listing asks) then fails for any topic of the cluster: one partition without a
 * leader (a one-copy topic on a broker that is down) kept every worker from starting and every
 * client from connecting, though none of them uses that topic.
 *
 * Here a response to a request for all topics keeps such partitions, with the leader the broker
 * gave (-1) and their error code, instead of throwing; topic-level errors still throw. A request
 * naming topics keeps kafkajs's parse: those topics are the caller's, and kafkajs waits out their
 * LEADER_NOT_AVAILABLE by retrying (a topic just created). What reads a kept partition's leader
 * sees -1: kafkajs's consumer and producer find no broker for it, refresh the metadata and retry.
 */

/** A Metadata response as kafkajs's decoders give it. */
interface MetadataResponse {
  topicMetadata: { topicErrorCode: number; partitionMetadata: { partitionErrorCode: number }[] }[];
}

type Parse = (data: MetadataResponse) => Promise<MetadataResponse>;
type Built = { request: unknown; response: { decode: unknown; parse: Parse } };
type MetadataModule = {
  versions: string[];
  protocol: (v: { version: number }) => (args: { topics?: string[] }) => Built;
};

/**
 * kafkajs's `protocol/requests/metadata/index.js` with requests for all topics (an empty topic list,
 * which kafkajs encodes as null) parsed by `keepLeaderless`.
 */
export function metadataForAllTopics(original: MetadataModule): MetadataModule {
  return {
    ...original,
    protocol: (v) => {
      const make = original.protocol(v);
      return (args) => {
        const built = make(args);
        if ((args.topics?.length ?? 0) > 0) return built;
        const strict = built.response.parse;
        return { ...built, response: { ...built.response, parse: (data) => keepLeaderless(data, strict) } };
      };
    },
  };
}

/** kafkajs's parse with every partition-level error left in the data instead of thrown. */
function keepLeaderless(data: MetadataResponse, strict: Parse): Promise<MetadataResponse> {
  const withoutPartitionErrors = {
    ...data,
    topicMetadata: data.topicMetadata.map((t) => ({
      ...t,
      partitionMetadata: t.partitionMetadata.map((p) => ({ ...p, partitionErrorCode: 0 })),
    })),
  };
  return strict(withoutPartitionErrors).then(() => data);
}
