"""The librdkafka echo service: test/bench/echo.ts on confluent-kafka (librdkafka) instead of kafkajs.

The limit of request/reply on the broker with a C client, for the open-loop benchmark's ratios.
Like the kafkajs echo it answers every request with a JSON IdReply on the request's
kafka_replyTopic (and kafka_replyPartition), echoing kafka_correlationId, numbers from an in-memory
counter per sequence. Replies are produced as records arrive (acks=all) without waiting for a
batch's acknowledgements, and a partition's offsets are committed at most every 50 ms
(IDD_COMMIT_INTERVAL_MS's default), up to the first record whose reply is not acknowledged yet:
at-least-once as idd is, at the pace librdkafka allows. (Flushing per batch and committing each
batch held the echo to one produce round trip per poll and one commit per batch: it was slower than
idd on a slow machine, a reference that hid the gap.) Run with the Python of the examples' venv
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
# Per partition: offsets read, in order, each with whether its reply is acknowledged.
pending = {}
running = True


def on_assign(_c, partitions):
    log(msg="partitions assigned", partitions=sorted(p.partition for p in partitions if p.topic == topic))


def on_revoke(_c, partitions):
    # What was read of a partition that moves is the next owner's: read again from the last commit.
    for p in partitions:
        pending.pop(p.partition, None)


def stop(_sig, _frame):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)


def reply_partition(b):
    """kafka_replyPartition: ASCII decimal or 4 bytes big-endian (Spring)."""
    if not b:
        return None
    if b.isdigit() and len(b) <= 9:
        return int(b)
    return int.from_bytes(b, "big", signed=True) if len(b) == 4 else None


COMMIT_EVERY_S = 0.05
last_commit = time.monotonic()


def acked(partition, offset):
    def on_delivery(err, _msg):
        if err is None:
            pending[partition][offset] = True
        else:
            log(msg="reply failed", err=str(err))
            pending[partition][offset] = True  # counted as an error by the bench (missing reply), not retried

    return on_delivery


def commit_acknowledged():
    """Commits, per partition, up to the first offset whose reply is not acknowledged."""
    out = []
    for p, offs in pending.items():
        upto = None
        while offs:
            first = next(iter(offs))
            if not offs[first]:
                break
            offs.pop(first)
            upto = first + 1
        if upto is not None:
            out.append(TopicPartition(topic, p, upto))
    if out:
        consumer.commit(offsets=out, asynchronous=True)


while running:
    # consume() waits for a full batch or its timeout: wait for the first record only, then take what is there.
    first = consumer.poll(0.01 if any(pending.values()) else 0.1)
    producer.poll(0)
    if time.monotonic() - last_commit >= COMMIT_EVERY_S:
        commit_acknowledged()
        last_commit = time.monotonic()
    if first is None:
        continue
    msgs = [first, *consumer.consume(num_messages=999, timeout=0)]
    stats["batches"] += 1
    now = int(time.time() * 1000)
    for m in msgs:
        if m.error():
            continue
        stats["requests"] += 1
        offs = pending.setdefault(m.partition(), {})
        h = dict(m.headers() or ())
        correlation = h.get("kafka_correlationId")
        reply_topic = h.get("kafka_replyTopic")
        if not m.value() or correlation is None or reply_topic is None:
            stats["unanswerable"] += 1
            offs[m.offset()] = True
            continue
        offs[m.offset()] = False
        req = json.loads(m.value())
        seq = req["sequence"]
        count = req.get("count", 1)
        first_n = counters.get(seq, 0) + 1
        counters[seq] = first_n + count - 1
        value = (
            '{"requestId":%s,"sequence":%s,"period":null,"status":"OK","ranges":[{"first":%d,"last":%d}],'
            '"formatted":[],"error":null,"issuedAt":%d}' % (json.dumps(req["requestId"]), json.dumps(seq), first_n, first_n + count - 1, now)
        )
        kw = {"key": m.key(), "value": value, "headers": [("kafka_correlationId", correlation)], "on_delivery": acked(m.partition(), m.offset())}
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

producer.flush(5)
commit_acknowledged()
consumer.close()
log(msg="echo stopped", **stats)
