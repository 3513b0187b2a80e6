"""An outside client for tests: librdkafka (confluent-kafka) as services configure it, JSON requests.

Args: brokers, sequences (comma list), requests, requests in flight, request topic, compression.type
(none, gzip, snappy, lz4, zstd). Batches form as in a busy service (linger.ms=20), so they are
compressed. librdkafka's default partitioner (consistent_random, CRC32): most requests are forwarded.
Prints one line per number: sequence TAB number TAB sendNanos TAB replyNanos (time.monotonic_ns); the summary (JSON) goes to stderr as the last line.
Gives up on what is unanswered after 90 s; exits 1 when a request failed or went unanswered.
"""

import json, sys, time, uuid

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic

brokers, sequences, requests, in_flight, request_topic, codec = sys.argv[1:7]
sequences, requests, in_flight = sequences.split(","), int(requests), int(in_flight)
reply_topic = f"idd-librdkafka-replies-{uuid.uuid4()}"
admin = AdminClient({"bootstrap.servers": brokers})
admin.create_topics([NewTopic(reply_topic, 1, 1)])[reply_topic].result()
producer = Producer({"bootstrap.servers": brokers, "linger.ms": 20, "compression.type": codec})
consumer = Consumer({"bootstrap.servers": brokers, "group.id": reply_topic, "enable.auto.commit": False})
consumer.assign([TopicPartition(reply_topic, 0, OFFSET_BEGINNING)])

pending, sent, numbers, failures, started = {}, 0, 0, [], time.monotonic()
while (sent < requests or pending) and time.monotonic() - started < 90:
    while sent < requests and len(pending) < in_flight:
        sequence, request_id = sequences[sent % len(sequences)], str(uuid.uuid4())
        pending[request_id] = (sequence, time.monotonic_ns())
        value = json.dumps({"requestId": request_id, "sequence": sequence, "count": 1}).encode()
        producer.produce(request_topic, value, sequence, headers=[("kafka_correlationId", request_id.encode()), ("kafka_replyTopic", reply_topic)])
        sent += 1
    producer.poll(0)
    message = consumer.poll(0.05)
    if message is None or message.error():
        continue
    received = time.monotonic_ns()
    reply = json.loads(message.value())
    if reply["requestId"] not in pending:
        continue
    sequence, sent_ns = pending.pop(reply["requestId"])
    if reply["status"] != "OK":
        failures.append(reply["error"]["code"])
    for r in reply["ranges"]:
        for n in range(int(r["first"]), int(r["last"]) + 1):
            print(f"{sequence}\t{n}\t{sent_ns}\t{received}")
            numbers += 1

producer.flush(5)
consumer.close()
admin.delete_topics([reply_topic])[reply_topic].result()
summary = {"codec": codec, "requests": requests, "numbers": numbers, "failures": failures, "unanswered": len(pending), "seconds": round(time.monotonic() - started, 1)}
print(json.dumps(summary), file=sys.stderr)
sys.exit(1 if failures or pending else 0)
