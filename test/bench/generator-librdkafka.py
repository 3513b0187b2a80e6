"""The open-loop load generator on librdkafka (confluent-kafka): a client from outside the project.

test/bench/rdk-generator.ts runs it in the examples' Python venv (stack/examples.ts) and drives it
over stdin/stdout, one JSON line per command, so one process (one producer, one reply consumer)
serves every run of a bench. It publishes single-number JSON requests on idd's wire contract (key =
sequence name; headers kafka_correlationId = 4-byte run tag + 4-byte index, kafka_replyTopic,
kafka_replyPartition = 4 bytes of 0) whether or not earlier ones were answered, and matches the
replies on its reply topic by correlation id, as test/bench/load-generator.ts does with kafkajs.

- The producer places records as a client of the chosen partitioner does: `murmur2_random` (Kafka's
  Java partitioner, requests land on their sequence's home partition) or `consistent_random`
  (librdkafka's default, CRC-32 of the key, as Python, Go, .NET and C clients publish by default).
- burst: the requests published as fast as librdkafka takes them; a request's latency counts from
  its produce() call.
- paced: `rate` a second for `seconds`, round-robin over the sequences, or with `jump` the first
  sequence's rate multiplied by `factor` from `atSeconds` on; latency counts from each request's
  scheduled time, so a generator that falls behind shows as latency (and as lagMs).

Environment: KAFKA_BROKERS, GEN_PARTITIONER (murmur2_random | consistent_random), GEN_REPLY_TOPIC
(one partition, made by the caller). Commands:
  {"cmd": "run", "topic": T, "plan": {...}, "sequences": [...], "latencies": PATH, "idleTimeoutMs": N}
    → {"requests", "answered", "duplicates", "errors", "missing", "numbers", "elapsedMs", "publishMs",
       "lagMs", "windowFrom", "firstError"}; PATH gets one little-endian float64 per request: its
       latency in ms, NaN when it was not answered.
  {"cmd": "stop"}
"""

import json
import math
import os
import struct
import sys
import threading
import time

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

brokers = os.environ["KAFKA_BROKERS"]
reply_topic = os.environ["GEN_REPLY_TOPIC"]
partitioner = os.environ.get("GEN_PARTITIONER", "consistent_random")

producer = Producer(
    {
        "bootstrap.servers": brokers,
        "client.id": "bench-generator-rdk",
        "acks": "all",
        "linger.ms": 1,
        "enable.idempotence": False,
        "partitioner": partitioner,
        "queue.buffering.max.messages": 2_000_000,
    }
)
consumer = Consumer(
    {
        "bootstrap.servers": brokers,
        "group.id": "bench-generator-rdk",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 10,
    }
)
consumer.assign([TopicPartition(reply_topic, 0, OFFSET_BEGINNING)])

# Two threads share the interpreter: hand it over every 0.5 ms rather than 5 ms, so a reply is timed when it comes.
sys.setswitchinterval(0.0005)
now_ms = lambda: time.monotonic() * 1000.0  # noqa: E731
lock = threading.Lock()
run = None  # the run in progress: dict, replaced per command
stray = 0
stopping = False


def on_reply(m, at):
    global stray
    r = run
    c = dict(m.headers() or ()).get("kafka_correlationId")
    if r is None or c is None or len(c) != 8:
        stray += 1
        return
    tag, i = struct.unpack(">II", c)
    if tag != r["tag"] or i >= r["requests"]:
        stray += 1
        return
    if r["replies"][i] > 0:
        r["duplicates"] += 1
        return
    r["replies"][i] = 1
    r["latency"][i] = at - r["sendAt"][i]
    r["answered"] += 1
    r["lastReplyAt"] = at
    try:
        reply = json.loads(m.value())
        if reply.get("status") != "OK":
            r["errors"] += 1
            if r["firstError"] is None:
                r["firstError"] = json.dumps(reply.get("error"))
        for rng in reply.get("ranges") or ():
            r["numbers"] += int(rng["last"]) - int(rng["first"]) + 1
    except Exception as e:  # noqa: BLE001 - a broken reply is counted, not fatal
        r["errors"] += 1
        if r["firstError"] is None:
            r["firstError"] = f"undecodable reply: {e}"


def read_replies():
    while not stopping:
        # consume() waits for a full batch or its timeout: wait for the first reply only, then take what is there.
        first = consumer.poll(0.05)
        at = now_ms()
        if first is None:
            continue
        msgs = [first, *consumer.consume(num_messages=999, timeout=0)]
        with lock:
            for m in msgs:
                if m.error() is None:
                    on_reply(m, at)


def schedule(plan, n):
    """(requests, at(i) in ms from the start, sequence(i), windowFrom): test/bench/load-generator.ts's pacedSchedule."""
    rate = plan["rate"]
    per_ms = rate / 1000
    jump = plan.get("jump")
    if not jump:
        return round(rate * plan["seconds"]), (lambda i: i / per_ms), (lambda i: i % n), 0
    before = round(rate * jump["atSeconds"])
    factor = jump["factor"]
    cycle = n - 1 + factor
    per_ms2 = per_ms * cycle / n
    jump_ms = jump["atSeconds"] * 1000
    requests = before + round(per_ms2 * (plan["seconds"] * 1000 - jump_ms))

    def seq(i):
        if i < before:
            return i % n
        k = (i - before) % cycle
        return 0 if k < factor else 1 + k - factor

    return requests, (lambda i: i / per_ms if i < before else jump_ms + (i - before) / per_ms2), seq, before


def do_run(cmd):
    global run
    plan = cmd["plan"]
    names = cmd["sequences"]
    keys = [s.encode() for s in names]
    topic = cmd["topic"]
    if plan["kind"] == "paced":
        requests, at, seq, window_from = schedule(plan, len(names))
    else:
        requests, at, seq, window_from = plan["requests"], None, (lambda i: i % len(names)), 0
    tag = int.from_bytes(os.urandom(4), "big")
    r = {
        "tag": tag,
        "requests": requests,
        "sendAt": [0.0] * requests,
        "latency": [math.nan] * requests,
        "replies": bytearray(requests),
        "answered": 0,
        "duplicates": 0,
        "errors": 0,
        "numbers": 0,
        "lastReplyAt": 0.0,
        "firstError": None,
    }
    partition0 = b"\x00\x00\x00\x00"
    rt = reply_topic.encode()
    acked = [0, 0.0]  # count, last ack time
    send_error = []

    def delivered(err, _msg):
        if err is not None:
            if not send_error:
                send_error.append(str(err))
            return
        acked[0] += 1
        acked[1] = now_ms()

    def request(i, sent_at):
        s = seq(i)
        r["sendAt"][i] = sent_at
        value = b'{"requestId":"%x-%d","sequence":"%s","count":1}' % (tag, i, names[s].encode())
        headers = [("kafka_correlationId", struct.pack(">II", tag, i)), ("kafka_replyTopic", rt), ("kafka_replyPartition", partition0)]
        while True:
            try:
                producer.produce(topic, key=keys[s], value=value, headers=headers, on_delivery=delivered)
                return
            except BufferError:
                producer.poll(0.001)

    with lock:
        run = r
    start = now_ms()
    lag = 0.0
    if at is None:
        for i in range(requests):
            if send_error:
                break
            request(i, now_ms())
            if i % 500 == 499:
                producer.poll(0)
    else:
        sent = 0
        while sent < requests and not send_error:
            now = now_ms()
            due = min(requests, math.floor((now - start) * plan["rate"] / 1000)) if not plan.get("jump") else due_of(at, requests, now - start, sent)
            if due > sent:
                lag = max(lag, now - (start + at(sent)))
                for i in range(sent, due):
                    request(i, start + at(i))
                sent = due
            producer.poll(0)
            time.sleep(0.0005)
    while producer.flush(1) > 0:
        pass
    if send_error:
        raise RuntimeError(send_error[0])
    idle_ms = cmd.get("idleTimeoutMs", 30000)
    seen, since = -1, now_ms()
    while r["answered"] < requests:
        time.sleep(0.01)
        if r["answered"] != seen:
            seen, since = r["answered"], now_ms()
        elif now_ms() - since > idle_ms:
            break
    with lock:
        run = None
    with open(cmd["latencies"], "wb") as f:
        f.write(struct.pack("<%dd" % requests, *r["latency"]))
    return {
        "requests": requests,
        "answered": r["answered"],
        "duplicates": r["duplicates"],
        "errors": r["errors"],
        "missing": requests - r["answered"],
        "numbers": r["numbers"],
        "elapsedMs": (r["lastReplyAt"] if r["answered"] > 0 else now_ms()) - start,
        "publishMs": acked[1] - start,
        "lagMs": lag,
        "windowFrom": window_from,
        "firstError": r["firstError"],
    }


def due_of(at, requests, elapsed, sent):
    """How many requests of a jump schedule are due `elapsed` ms after the start (at() is increasing)."""
    i = sent
    while i < requests and at(i) <= elapsed:
        i += 1
    return i


reader = threading.Thread(target=read_replies, daemon=True)
reader.start()
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["cmd"] == "stop":
        break
    try:
        out = do_run(cmd)
    except (KafkaException, RuntimeError) as e:
        out = {"error": str(e)}
    out["stray"] = stray
    print(json.dumps(out), flush=True)
stopping = True
reader.join(2)
consumer.close()
producer.flush(5)
