/**
 * Asks idd for numbers from NestJS with its Kafka transport's client, `ClientKafka`, as a Nest
 * service uses it: `lastValueFrom(client.send(topic, { key, value }))`. NestJS sends
 * kafka_correlationId (a string), kafka_replyTopic (`<topic>.reply`) and kafka_replyPartition (ASCII
 * decimal); its observable completes on a reply carrying kafka_nest-is-disposed and errors with what
 * kafka_nest-err holds, both of which idd sets (docs/wire-contract.md: Headers).
 *
 * Args: brokers (comma list), sequences (comma list), requests, requests in flight, [request topic].
 * Prints one line per number: sequence TAB number TAB sendNanos TAB replyNanos (CLOCK_MONOTONIC,
 * comparable with the other example clients on one machine). Then asks for a sequence that does not
 * exist and shows the error the NestJS way (catchError); a summary goes to stderr.
 */
import "reflect-metadata";
import { randomUUID } from "node:crypto";
import { ClientKafka } from "@nestjs/microservices";
import { Kafka, logLevel } from "kafkajs";
import { catchError, lastValueFrom, of, timeout } from "rxjs";

interface IdReply {
  requestId: string;
  sequence: string;
  status: "OK" | "ERROR";
  ranges: { first: number | string; last: number | string }[];
}

const fail = (message: string): never => {
  process.stderr.write(`nestjs: ${message}\n`);
  process.exit(2);
};

const [brokerList, sequenceList, requestsArg, inFlightArg, requestTopic = "idd.requests"] = process.argv.slice(2);
if (!brokerList || !sequenceList || !requestsArg || !inFlightArg)
  fail("usage: client <brokers> <sequences> <requests> <in flight> [request topic]");
const brokers = (brokerList as string).split(",");
const sequences = (sequenceList as string).split(",");
const requests = Number(requestsArg);
const inFlight = Number(inFlightArg);
if (!Number.isInteger(requests) || requests < 0 || !Number.isInteger(inFlight) || inFlight < 1)
  fail("requests and in flight must be numbers");

// NestJS reads replies from `<request topic>.reply`; a user creates it once, like any topic.
const replyTopic = `${requestTopic}.reply`;
const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING }).admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic: replyTopic, numPartitions: 1 }], waitForLeaders: true });
await admin.disconnect();

// A new group's consumer starts at the end of the reply topic only once it has looked that end up,
// which kafkajs does after joining, while `send` already works: a fast reply written in between
// would be skipped and its request time out. Reading from the start closes that gap (replies to
// other clients' requests are dropped by correlation id), as the other examples do.
const client = new ClientKafka({
  client: { clientId: `nestjs-example-${randomUUID().slice(0, 8)}`, brokers, logLevel: logLevel.NOTHING },
  consumer: { groupId: `nestjs-example-${randomUUID().slice(0, 8)}` },
  subscribe: { fromBeginning: true },
  producer: { allowAutoTopicCreation: false },
});
client.subscribeToResponseOf(requestTopic);
await client.connect();

const ask = (sequence: string) =>
  lastValueFrom(
    client.send<IdReply>(requestTopic, { key: sequence, value: { requestId: randomUUID(), sequence, count: 1 } }).pipe(timeout(30_000)),
  );

let next = 0;
let failed = 0;
const lines: string[] = [];
async function lane(): Promise<void> {
  while (next < requests) {
    const sequence = sequences[next++ % sequences.length] as string;
    const sent = process.hrtime.bigint();
    try {
      const reply = await ask(sequence);
      const got = process.hrtime.bigint();
      const range = reply.ranges[0];
      if (reply.status !== "OK" || !range) throw new Error(`reply ${JSON.stringify(reply)}`);
      lines.push(`${sequence}\t${range.first}\t${sent}\t${got}`);
    } catch (e) {
      failed++;
      process.stderr.write(`nestjs: ${sequence}: ${JSON.stringify(e)}\n`);
    }
  }
}
const started = performance.now();
await Promise.all(Array.from({ length: inFlight }, lane));
const seconds = (performance.now() - started) / 1000;
process.stdout.write(lines.length > 0 ? `${lines.join("\n")}\n` : "");

// An error reply is the observable's error: kafka_nest-err holds idd's error, { code, message }.
const missing = `no-such-sequence-${randomUUID().slice(0, 8)}`;
const handled = await lastValueFrom(
  client.send<IdReply>(requestTopic, { key: missing, value: { requestId: randomUUID(), sequence: missing, count: 1 } }).pipe(
    timeout(30_000),
    catchError((e: { code?: string; message?: string }) => of({ handledCode: e.code ?? String(e) })),
  ),
);
await client.close();
process.stderr.write(
  `nestjs: ${lines.length} numbers in ${seconds.toFixed(1)} s, ${inFlight} in flight, ${failed} failed; an unknown sequence: ${JSON.stringify(handled)}\n`,
);
process.exit(failed > 0 || !("handledCode" in handled) ? 1 : 0);
