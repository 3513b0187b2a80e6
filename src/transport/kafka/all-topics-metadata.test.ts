// The seam first, as a worker loads it: kafkajs is loaded through it.
import "./index.js";
import { createRequire } from "node:module";
import { expect, test } from "vitest";

const require = createRequire(import.meta.url);
type Parse = (data: unknown) => Promise<unknown>;
const { Metadata } = (require("kafkajs/src/protocol/requests/index.js") as { requests: { Metadata: unknown } }).requests as {
  Metadata: { versions: string[]; protocol: (v: { version: number }) => (a: { topics: string[] }) => { response: { parse: Parse } } };
};

/** A decoded Metadata response: `idd.requests` served, `other` with one partition that has no leader. */
const response = (otherError = 5, topicError = 0) => ({
  brokers: [{ nodeId: 1, host: "127.0.0.1", port: 9092 }],
  topicMetadata: [
    {
      topicErrorCode: 0,
      topic: "idd.requests",
      partitionMetadata: [{ partitionErrorCode: 0, partitionId: 0, leader: 1, replicas: [1], isr: [1] }],
    },
    {
      topicErrorCode: topicError,
      topic: "other",
      partitionMetadata: [{ partitionErrorCode: otherError, partitionId: 0, leader: -1, replicas: [3], isr: [] }],
    },
  ],
});

const parse = (version: number, topics: string[], data: unknown) => Metadata.protocol({ version })({ topics }).response.parse(data);

test.each(Metadata.versions.map(Number))(
  "v%i: a response for all topics keeps a partition without a leader (leader -1, its error code) instead of throwing",
  async (version) => {
    const got = (await parse(version, [], response())) as ReturnType<typeof response>;
    expect(got.topicMetadata[1]?.partitionMetadata[0]).toMatchObject({ leader: -1, partitionErrorCode: 5 });
    expect(got.topicMetadata[0]?.partitionMetadata[0]).toMatchObject({ leader: 1 });
  },
);

test.each(Metadata.versions.map(Number))(
  "v%i: a request naming topics still throws kafkajs's error, which kafkajs retries",
  async (version) => {
    await expect(parse(version, ["other"], response())).rejects.toMatchObject({ type: "LEADER_NOT_AVAILABLE", retriable: true });
  },
);

test("a topic-level error still throws for all topics", async () => {
  await expect(parse(6, [], response(0, 29))).rejects.toMatchObject({ type: "TOPIC_AUTHORIZATION_FAILED" });
});
