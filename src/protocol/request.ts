/**
 * Turns a raw Kafka record into a validated IdRequest, or into an error that says where to reply.
 * Never throws on input: every way a record can be wrong ends in a `Rejected` with a stable code.
 */

import type avro from "avsc";
import type { IHeaders } from "kafkajs";
import { type ErrorCode, IddError, isIddError } from "../errors.js";
import type { RegistryClient } from "../registry/client.js";
import { avroType, requestSchemaText, requestType, unframe } from "./avro.js";
import { HEADER_CORRELATION_ID, HEADER_REPLY_TOPIC, headerBytes, headerString, replyPartition } from "./headers.js";

export interface IdRequest {
  requestId: string;
  sequence: string;
  count: number;
  replyTo: string | null;
  /** Epoch milliseconds; null when the client set none. */
  deadline: bigint | null;
}

export type WireFormat = "avro" | "json";

export interface ReplyAddress {
  topic: string;
  partition?: number;
  correlationId?: Buffer;
}

export interface RawRecord {
  key: Buffer | null;
  value: Buffer | null;
  headers?: IHeaders;
}

export interface Accepted {
  ok: true;
  request: IdRequest;
  format: WireFormat;
  address: ReplyAddress;
}

export interface Rejected {
  ok: false;
  error: IddError;
  format: WireFormat;
  /** Known when the headers or the decoded value name a reply topic; else the record is dead-lettered. */
  address?: ReplyAddress;
  requestId: string;
  sequence: string;
}

export interface RequestLimits {
  maxCount: number;
  maxRequestBytes: number;
}

export const SEQUENCE_NAME = /^[A-Za-z0-9._-]{1,64}$/;
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;

/** Decodes Avro bodies by the writer schema their frame names, resolved to IdRequest (cached per id). */
export class RequestDecoder {
  readonly #registry: RegistryClient;
  readonly #resolvers = new Map<number, avro.Resolver>();

  constructor(registry: RegistryClient) {
    this.#registry = registry;
  }

  async decodeAvro(value: Buffer): Promise<unknown> {
    const { schemaId, body } = unframe(value);
    let resolver = this.#resolvers.get(schemaId);
    if (!resolver) {
      let text: string;
      try {
        text = await this.#registry.schemaById(schemaId);
      } catch (e) {
        if (isIddError(e, "REGISTRY_REJECTED"))
          throw new IddError("UNKNOWN_SCHEMA_ID", `schema id ${schemaId} is not in the registry`, { cause: e });
        throw e; // registry down: retriable, not the request's fault
      }
      try {
        resolver = requestType.createResolver(text === requestSchemaText ? requestType : avroType(text));
      } catch (e) {
        throw new IddError("SCHEMA_INCOMPATIBLE", `schema id ${schemaId} cannot be read as idd.v1.IdRequest: ${(e as Error).message}`);
      }
      this.#resolvers.set(schemaId, resolver);
    }
    try {
      return requestType.fromBuffer(body, resolver);
    } catch (e) {
      throw new IddError("BAD_AVRO", `Avro body does not decode with schema ${schemaId}: ${(e as Error).message}`);
    }
  }
}

function isJson(value: Buffer): boolean {
  for (const byte of value) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b; // "{"
  }
  return false;
}

/** JSON requests: the same fields; count defaults to 1; deadline as epoch milliseconds. */
function fromJson(value: Buffer): unknown {
  try {
    return JSON.parse(value.toString("utf8"));
  } catch (e) {
    throw new IddError("BAD_JSON", `invalid JSON: ${(e as Error).message}`);
  }
}

function fields(v: unknown): IdRequest {
  const o = (v ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  const str = (k: string, optional = false) => {
    const x = o[k];
    if (x === undefined || x === null) {
      if (!optional) problems.push(`${k} is missing`);
      return null;
    }
    if (typeof x !== "string") problems.push(`${k} must be a string`);
    return typeof x === "string" ? x : null;
  };
  const requestId = str("requestId") ?? "";
  const sequence = str("sequence") ?? "";
  const replyTo = str("replyTo", true);
  const c = o.count ?? 1;
  const count = typeof c === "number" && Number.isInteger(c) ? c : Number.NaN;
  if (Number.isNaN(count)) problems.push("count must be an integer");
  const d = o.deadline;
  let deadline: bigint | null = null;
  if (typeof d === "bigint") deadline = d;
  else if (typeof d === "number" && Number.isInteger(d)) deadline = BigInt(d);
  else if (d !== undefined && d !== null) problems.push("deadline must be epoch milliseconds");
  if (problems.length > 0) throw new IddError("BAD_REQUEST", problems.join("; "));
  return { requestId, sequence, count, replyTo, deadline };
}

function rejected(code: ErrorCode, message: string, base: Omit<Rejected, "ok" | "error">): Rejected {
  return { ok: false, error: new IddError(code, message), ...base };
}

export async function parseRequest(record: RawRecord, decoder: RequestDecoder, limits: RequestLimits): Promise<Accepted | Rejected> {
  const key = record.key?.toString("utf8") ?? "";
  const headerTopic = headerString(record.headers, HEADER_REPLY_TOPIC);
  const address = (topic: string | null | undefined): ReplyAddress | undefined => {
    if (!topic || !TOPIC_NAME.test(topic)) return undefined;
    const partition = replyPartition(record.headers);
    const correlationId = headerBytes(record.headers, HEADER_CORRELATION_ID);
    return { topic, ...(partition !== undefined && { partition }), ...(correlationId && { correlationId }) };
  };
  const value = record.value ?? Buffer.alloc(0);
  const format: WireFormat = isJson(value) ? "json" : "avro";
  const base = { format, address: address(headerTopic), requestId: "", sequence: key };

  if (value.length > limits.maxRequestBytes) {
    return rejected("REQUEST_TOO_LARGE", `value has ${value.length} bytes; the maximum is ${limits.maxRequestBytes}`, base);
  }
  let request: IdRequest;
  try {
    request = fields(format === "json" ? fromJson(value) : await decoder.decodeAvro(value));
  } catch (e) {
    if (isIddError(e) && !e.retriable) return { ok: false, error: e, ...base };
    throw e; // e.g. the registry is down: the record is retried, not rejected
  }
  const withBody = {
    ...base,
    requestId: request.requestId,
    sequence: request.sequence || key,
    address: base.address ?? address(request.replyTo),
  };
  if (!withBody.address) {
    return rejected("NO_REPLY_ADDRESS", "no kafka_replyTopic header and no valid replyTo field", withBody);
  }
  if (!SEQUENCE_NAME.test(request.sequence)) {
    return rejected(
      "INVALID_SEQUENCE_NAME",
      `sequence name must match ${SEQUENCE_NAME.source} (${request.sequence.length} characters given)`,
      {
        ...withBody,
        sequence: request.sequence.slice(0, 64),
      },
    );
  }
  if (key !== request.sequence) {
    return rejected("KEY_MISMATCH", `the message key "${key.slice(0, 64)}" is not the sequence name "${request.sequence}"`, withBody);
  }
  if (request.count < 1 || request.count > limits.maxCount) {
    return rejected("INVALID_COUNT", `count ${request.count} is not between 1 and ${limits.maxCount}`, withBody);
  }
  return { ok: true, request, format, address: withBody.address };
}
