import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import avro from "avsc";
import { expect, inject, test } from "vitest";
import { isIddError } from "../../src/core/errors.js";
import { PACKAGE_ROOT } from "../../src/core/package-root.js";
import { RegistryClient } from "../../src/registry/client.js";

const url = inject("services").schemaRegistryUrl;
const requestSchema = readFileSync(join(PACKAGE_ROOT, "schemas", "IdRequest.avsc"), "utf8");

test("a schema from schemas/ is registered and returned by its id", async () => {
  const subject = `idd.requests-value-${randomUUID()}`;
  const id = await new RegistryClient(url).register(subject, requestSchema);
  expect(id).toBeGreaterThan(0);
  expect(await new RegistryClient(url).register(subject, requestSchema)).toBe(id); // same schema, same id

  const fetched = await new RegistryClient(url).schemaById(id); // a fresh client: no cache
  const type = avro.Type.forSchema(JSON.parse(fetched));
  expect(type.name).toBe("idd.v1.IdRequest");
  const record = { requestId: "r1", sequence: "order", count: 3, replyTo: null, deadline: null };
  expect(type.fromBuffer(avro.Type.forSchema(JSON.parse(requestSchema)).toBuffer(record))).toEqual({
    ...record,
    fields: {},
    action: "ISSUE",
    numbers: [],
    reason: null,
    period: null,
  });
});

test("an unknown schema id is a REGISTRY_REJECTED error, an unreachable registry REGISTRY_UNAVAILABLE", async () => {
  await expect(new RegistryClient(url).schemaById(987654321)).rejects.toSatisfy((e) => isIddError(e, "REGISTRY_REJECTED"));
  await expect(new RegistryClient("http://127.0.0.1:1/apis/ccompat/v7", { timeoutMs: 1000 }).schemaById(1)).rejects.toSatisfy((e) =>
    isIddError(e, "REGISTRY_UNAVAILABLE"),
  );
});

test("the registry's BACKWARD check passes the current IdRequest and IdReply against v1 (and fails a breaking change)", async () => {
  // fetch takes no user-info in URLs: the stack's registry wants basic auth, sent as a header.
  const u = new URL(url);
  const auth: Record<string, string> = u.username
    ? { authorization: `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString("base64")}` }
    : {};
  u.username = "";
  u.password = "";
  const call = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${u.toString().replace(/\/$/, "")}${path}`, {
      method,
      body: JSON.stringify(body),
      headers: { "content-type": "application/vnd.schemaregistry.v1+json", ...auth },
    });
    expect(res.ok, `${method} ${path}: ${res.status}`).toBe(true);
    return (await res.json()) as { is_compatible?: boolean };
  };
  const compatible = async (name: string, next: string) => {
    const subject = `compat-${name}-${randomUUID()}`;
    await new RegistryClient(url).register(subject, readFileSync(join(PACKAGE_ROOT, "test/fixtures/schemas-v1", name), "utf8"));
    await call("PUT", `/config/${subject}`, { compatibility: "BACKWARD" });
    return (await call("POST", `/compatibility/subjects/${subject}/versions/latest`, { schema: next, schemaType: "AVRO" })).is_compatible;
  };
  for (const name of ["IdRequest.avsc", "IdReply.avsc"]) {
    expect(await compatible(name, readFileSync(join(PACKAGE_ROOT, "schemas", name), "utf8")), name).toBe(true);
  }
  // The check can fail: a new field without a default cannot read v1 data.
  const breaking = JSON.parse(requestSchema) as { fields: object[] };
  breaking.fields.push({ name: "tenant", type: "string" });
  expect(await compatible("IdRequest.avsc", JSON.stringify(breaking))).toBe(false);
});
