import { randomUUID } from "node:crypto";
import { MongoClient, MongoServerError } from "mongodb";
import { afterAll, expect, inject, test } from "vitest";

const client = new MongoClient(inject("services").mongodbUrl);
const db = client.db(`smoke_${randomUUID().replaceAll("-", "")}`);

afterAll(async () => {
  await db.dropDatabase().catch(() => {});
  await client.close();
});

interface Reservation {
  sequence: string;
  period: string;
  max: number;
}

test("insert, find, findOneAndUpdate with $inc and a unique index work against the MongoDB-protocol server", async () => {
  const reservations = db.collection<Reservation>("reservations");
  await reservations.createIndex({ sequence: 1, period: 1 }, { unique: true, name: "sequence_period" });
  const indexes = await reservations.indexes();
  expect(indexes.find((i) => i.name === "sequence_period")?.unique).toBe(true);

  await reservations.insertOne({ sequence: "order", period: "20261121", max: 1000 });
  await expect(reservations.insertOne({ sequence: "order", period: "20261121", max: 5 })).rejects.toBeInstanceOf(MongoServerError);

  const raised = await reservations.findOneAndUpdate(
    { sequence: "order", period: "20261121" },
    { $inc: { max: 500 } },
    { returnDocument: "after" },
  );
  expect(raised?.max).toBe(1500);

  const upserted = await reservations.findOneAndUpdate(
    { sequence: "invoice", period: "20261121" },
    { $inc: { max: 100 } },
    { upsert: true, returnDocument: "after" },
  );
  expect(upserted?.max).toBe(100);

  const all = await reservations
    .find({}, { projection: { _id: 0 } })
    .sort({ sequence: 1 })
    .toArray();
  expect(all).toEqual([
    { sequence: "invoice", period: "20261121", max: 100 },
    { sequence: "order", period: "20261121", max: 1500 },
  ]);
});
