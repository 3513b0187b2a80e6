"""An invoice flow on a gapless sequence from Python: take two numbers, confirm one, void the other.

Args: brokers, registry URL (basic auth as user:password@ in it), a gapless sequence, [request topic].
Each number idd issues must be confirmed (used) or voided with a reason within the sequence's confirm
timeout (docs/sequences.md: Gapless numbering). Prints `confirmed N`, `voided N` and the period (or `-`), one a line.
"""

import base64, io, json, os, ssl, struct, sys, urllib.parse, urllib.request, uuid
from pathlib import Path

import fastavro
from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING
from confluent_kafka.admin import AdminClient, NewTopic

brokers, registry, sequence = sys.argv[1], sys.argv[2], sys.argv[3]
request_topic = sys.argv[4] if len(sys.argv) > 4 else "idd.requests"
url = urllib.parse.urlsplit(registry)
auth = base64.b64encode(f"{urllib.parse.unquote(url.username or '')}:{urllib.parse.unquote(url.password or '')}".encode()).decode()
base = url._replace(netloc=url.netloc.rpartition("@")[2]).geturl().rstrip("/")
tls = ssl.create_default_context(cafile=os.environ.get("SCHEMA_REGISTRY_CA_FILE"))


def registry_call(path, body=None):
    headers = {"Content-Type": "application/vnd.schemaregistry.v1+json", "Authorization": f"Basic {auth}"}
    data = json.dumps(body).encode() if body else None
    with urllib.request.urlopen(urllib.request.Request(base + path, data, headers), context=tls) as r:
        return json.load(r)


request_avsc = (Path(__file__).parent / "../../schemas/IdRequest.avsc").read_text()
request_schema = fastavro.parse_schema(json.loads(request_avsc))
schema_id = registry_call(f"/subjects/{request_topic}-value/versions", {"schema": request_avsc, "schemaType": "AVRO"})["id"]
reply_schemas = {}

reply_topic = f"idd-python-gapless-{uuid.uuid4()}"
admin = AdminClient({"bootstrap.servers": brokers})
admin.create_topics([NewTopic(reply_topic, 1, 1)])[reply_topic].result()
producer = Producer({"bootstrap.servers": brokers, "partitioner": "murmur2_random"})  # straight to the sequence's home partition
consumer = Consumer({"bootstrap.servers": brokers, "group.id": reply_topic, "enable.auto.commit": False})
consumer.assign([TopicPartition(reply_topic, 0, OFFSET_BEGINNING)])


def ask(**fields):
    """One request, its reply; a retry would reuse the requestId (and get the same answer)."""
    body = io.BytesIO()
    body.write(b"\0" + struct.pack(">I", schema_id))
    fastavro.schemaless_writer(body, request_schema, {"requestId": str(uuid.uuid4()), "sequence": sequence, **fields})
    correlation = uuid.uuid4().bytes
    producer.produce(request_topic, body.getvalue(), sequence, headers=[("kafka_correlationId", correlation), ("kafka_replyTopic", reply_topic)])
    producer.flush()
    while True:
        message = consumer.poll(30)
        if message is None:
            sys.exit(f"no reply within 30 s to {fields}")
        if message.error() or dict(message.headers()).get("kafka_correlationId") != correlation:
            continue
        frame = message.value()
        reply_id = struct.unpack(">I", frame[1:5])[0]
        if reply_id not in reply_schemas:
            reply_schemas[reply_id] = fastavro.parse_schema(json.loads(registry_call(f"/schemas/ids/{reply_id}")["schema"]))
        reply = fastavro.schemaless_reader(io.BytesIO(frame[5:]), reply_schemas[reply_id])
        if reply["status"] != "OK":
            sys.exit(f"{fields.get('action', 'ISSUE')}: {reply['error']['code']}: {reply['error']['message']}")
        return reply


taken = ask(count=2)  # two invoice numbers, pending until settled
first, second = [n for r in taken["ranges"] for n in range(r["first"], r["last"] + 1)]
period = taken["period"]  # a sequence that restarts (daily, monthly, yearly) needs it to settle
ask(action="CONFIRM", numbers=[first], period=period)  # invoice written: the number is used
ask(action="VOID", numbers=[second], reason="order cancelled before invoicing", period=period)  # never used, and why
print(f"confirmed {first}\nvoided {second}\nperiod {period or '-'}")
consumer.close()
admin.delete_topics([reply_topic])[reply_topic].result()
