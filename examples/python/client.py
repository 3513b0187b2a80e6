"""Asks idd for numbers from Python: confluent-kafka, Avro values framed for the schema registry.

Args: brokers, registry URL (basic auth as user:password@ in it), sequences (comma list), requests,
requests in flight, [request topic]. Prints one line per number: sequence TAB number TAB sendNanos
TAB replyNanos (time.monotonic_ns); a summary goes to stderr.
"""

import base64, io, json, os, ssl, struct, sys, time, urllib.parse, urllib.request, uuid
from pathlib import Path

import fastavro
from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic

brokers, registry, sequences, requests, in_flight = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), int(sys.argv[5])
request_topic = sys.argv[6] if len(sys.argv) > 6 else "idd.requests"
url = urllib.parse.urlsplit(registry)
auth = base64.b64encode(f"{urllib.parse.unquote(url.username or '')}:{urllib.parse.unquote(url.password or '')}".encode()).decode()
base = url._replace(netloc=url.netloc.rpartition("@")[2]).geturl().rstrip("/")
tls = ssl.create_default_context(cafile=os.environ.get("SCHEMA_REGISTRY_CA_FILE"))


def registry_call(path, body=None):
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json", "Authorization": f"Basic {auth}"}
    data = json.dumps(body).encode() if body else None
    with urllib.request.urlopen(urllib.request.Request(base + path, data, headers), context=tls) as r:
        return json.load(r)


# Register the request schema under "<request topic>-value" (a no-op when it is there); replies name theirs by id.
request_avsc = (Path(__file__).parent / "../../schemas/IdRequest.avsc").read_text()
request_schema = fastavro.parse_schema(json.loads(request_avsc))
request_id = registry_call(f"/subjects/{request_topic}-value/versions", {"schema": request_avsc, "schemaType": "AVRO"})["id"]
reply_schemas = {}

reply_topic = f"idd-python-replies-{uuid.uuid4()}"  # the client creates its reply topic
admin = AdminClient({"bootstrap.servers": brokers})
admin.create_topics([NewTopic(reply_topic, 1, 1)])[reply_topic].result()
producer = Producer({"bootstrap.servers": brokers, "linger.ms": 1})  # default partitioner: consistent_random (CRC32)
consumer = Consumer({"bootstrap.servers": brokers, "group.id": reply_topic, "enable.auto.commit": False})
consumer.assign([TopicPartition(reply_topic, 0, OFFSET_BEGINNING)])

pending, sent, numbers, failures, started = {}, 0, 0, 0, time.monotonic()
while sent < requests or pending:
    while sent < requests and len(pending) < in_flight:
        sequence = sequences[sent % len(sequences)]
        body = io.BytesIO()
        body.write(b"\0" + struct.pack(">I", request_id))  # magic byte, schema id, then the Avro body
        fastavro.schemaless_writer(body, request_schema, {"requestId": str(uuid.uuid4()), "sequence": sequence, "count": 1})
        correlation = uuid.uuid4().bytes
        pending[correlation] = (sequence, time.monotonic_ns())
        producer.produce(request_topic, body.getvalue(), sequence, headers=[("kafka_correlationId", correlation), ("kafka_replyTopic", reply_topic)])
        producer.poll(0)
        sent += 1
    message = consumer.poll(0.05)
    producer.poll(0)
    if message is None or message.error():
        continue
    received = time.monotonic_ns()
    sequence, send_ns = pending.pop(dict(message.headers())["kafka_correlationId"])
    frame = message.value()
    schema_id = struct.unpack(">I", frame[1:5])[0]
    if schema_id not in reply_schemas:
        reply_schemas[schema_id] = fastavro.parse_schema(json.loads(registry_call(f"/schemas/ids/{schema_id}")["schema"]))
    reply = fastavro.schemaless_reader(io.BytesIO(frame[5:]), reply_schemas[schema_id])
    if reply["status"] != "OK":
        failures += 1
        print(f"{sequence}: {reply['error']}", file=sys.stderr)
    for r in reply["ranges"]:
        for n in range(r["first"], r["last"] + 1):
            print(f"{sequence}\t{n}\t{send_ns}\t{received}")
            numbers += 1

seconds = time.monotonic() - started
print(f"python: {requests} requests, {numbers} numbers, {failures} failures in {seconds:.1f}s ({requests / seconds:.0f} requests/s)", file=sys.stderr)
consumer.close()
admin.delete_topics([reply_topic])[reply_topic].result()
sys.exit(1 if failures else 0)
