"""The librdkafka echo service: test/bench/echo.ts on confluent-kafka (librdkafka) instead of kafkajs.

The limit of request/reply on the broker with a C client, for the open-loop benchmark's ratios.
Like the kafkajs echo it answers every request with a JSON IdReply on the request's
kafka_replyTopic (and kafka_replyPartition), echoing kafka_correlationId, numbers from an in-memory
counter per sequence; per batch of consumed records it waits until every reply is acknowledged
(acks=all), then commits the batch's offsets. Run with the Python of the examples' venv
(stack/examples.ts). Environment: KAFKA_BROKERS, ECHO_TOPIC, ECHO_GROUP, ECHO_ID. Logs one JSON line
per assignment to stderr ({"msg":"partitions assigned","partitions":[...]}, the line the bench
waits for) and its counts on SIGTERM.
"""

import json
import os
import signal
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

topic = os.environ["ECHO_TOPIC"]
echo_id = os.environ.get("ECHO_ID", "0")


def log(**o):
    sys.stderr.write(json.dumps({"echo": echo_id, **o}) + "\n")
    sys.stderr.flush()


common = {"bootstrap.servers": os.environ["KAFKA_BROKERS"], "client.id": f"echo-rdk-{echo_id}"}
consumer = Consumer(
    {
        **common,
        "group.id": os.environ["ECHO_GROUP"],
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
        "heartbeat.interval.ms": 1000,
        "fetch.wait.max.ms": 100,
    }
)
producer = Producer({**common, "acks": "all", "linger.ms": 1, "enable.idempotence": False})

stats = {"requests": 0, "replies": 0, "unanswerable": 0, "batches": 0}
counters = {}
running = True


def on_assign(_c, partitions):
    log(msg="partitions assigned", partitions=sorted(p.partition for p in partitions if p.topic == topic))


def stop(_sig, _frame):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
consumer.subscribe([topic], on_assign=on_assign)


def reply_partition(b):
    """kafka_replyPartition: ASCII decimal or 4 bytes big-endian (Spring)."""
    if not b:
        return None
    if b.isdigit() and len(b) <= 9:
        return int(b)
    return int.from_bytes(b, "big", signed=True) if len(b) == 4 else None


while running:
    # consume() waits for a full batch or its timeout: wait for the first record only, then take what is there.
    first = consumer.poll(0.1)
    if first is None:
        producer.poll(0)
        continue
    msgs = [first, *consumer.consume(num_messages=999, timeout=0)]
    stats["batches"] += 1
    now = int(time.time() * 1000)
    offsets = {}
    for m in msgs:
        if m.error():
            continue
        stats["requests"] += 1
        offsets[m.partition()] = m.offset() + 1
        h = dict(m.headers() or ())
        correlation = h.get("kafka_correlationId")
        reply_topic = h.get("kafka_replyTopic")
        if not m.value() or correlation is None or reply_topic is None:
            stats["unanswerable"] += 1
            continue
        req = json.loads(m.value())
        seq = req["sequence"]
        count = req.get("count", 1)
        first = counters.get(seq, 0) + 1
        counters[seq] = first + count - 1
        value = (
            '{"requestId":%s,"sequence":%s,"period":null,"status":"OK","ranges":[{"first":%d,"last":%d}],'
            '"formatted":[],"error":null,"issuedAt":%d}' % (json.dumps(req["requestId"]), json.dumps(seq), first, first + count - 1, now)
        )
        kw = {"key": m.key(), "value": value, "headers": [("kafka_correlationId", correlation)]}
        partition = reply_partition(h.get("kafka_replyPartition"))
        if partition is not None:
            kw["partition"] = partition
        while True:
            try:
                producer.produce(reply_topic.decode(), **kw)
                break
            except BufferError:
                producer.poll(0.01)
        stats["replies"] += 1
    producer.flush()
    if offsets:
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=True)

consumer.close()
producer.flush(5)
log(msg="echo stopped", **stats)
