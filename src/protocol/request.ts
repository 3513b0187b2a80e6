/**
 * Turns a raw Kafka record into a validated IdRequest, or into an error that says where to reply.
 * Never throws on input: every way a record can be wrong ends in a `Rejected` with a stable code.
 */

import type avro from "avsc";
import { type ErrorCode, IddError, isIddError } from "../core/errors.js";
import type { RegistryClient } from "../registry/client.js";
import { avroType, MAGIC_BYTE, requestSchemaText, requestType, unframe } from "./avro.js";
import type { IHeaders } from "./headers.js";
import { type ReplyAddress, replyAddress } from "./reply-address.js";

export interface IdRequest {
  requestId: string;
  sequence: string;
  count: number;
  replyTo: string | null;
  /** Epoch milliseconds; null when the client set none. */
  deadline: bigint | null;
  /** Values for a formatted sequence's `{field:name}` parts; the sequence's kind checks them. */
  fields: Record<string, string>;
  /** CONFIRM or VOID of a gapless sequence's pending numbers; absent for ISSUE (asking for numbers). */
  settle?: Settle;
}

/** What a CONFIRM or VOID request settles: numbers of one counter (`period`: null for sequences that never restart). */
export interface Settle {
  action: "CONFIRM" | "VOID";
  /** ≥ 0, as given (repeats allowed: settling a number twice in one request settles it once). */
  numbers: bigint[];
  /** Required for VOID. */
  reason: string | null;
  period: string | null;
}

export const ACTIONS = ["ISSUE", "CONFIRM", "VOID"] as const;
/** A VOID's reason is stored with every number it voids. */
export const MAX_REASON = 256;
const MAX_LONG = 2n ** 63n - 1n;
const PERIOD_TEXT = /^\d{4}(\d{2}){0,2}$/;

/** Bounds on `fields` checked while parsing (BAD_FIELDS); what a template allows is narrower. */
export const MAX_FIELDS = 16;
const MAX_FIELD_NAME = 64;
const MAX_FIELD_VALUE = 256;

export type WireFormat = "avro" | "json";

export type { ReplyAddress } from "./reply-address.js";

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
  maxCorrelationIdBytes: number;
  maxHeaderBytes: number;
  /** idd's own topics: never a reply address. */
  requestTopic: string;
  deadLetterTopic: string;
}

export const SEQUENCE_NAME = /^[A-Za-z0-9._-]{1,64}$/;
/** Registry lookups in flight while a step loads the schema ids its records name. */
const LOADS_IN_FLIGHT = 16;
const MAX_FAILED_SCHEMA_IDS = 10_000;

/** Decodes Avro bodies by the writer schema their frame names, resolved to IdRequest (cached per id). */
export class RequestDecoder {
  readonly #registry: RegistryClient;
  readonly #resolvers = new Map<number, avro.Resolver>();

  constructor(registry: RegistryClient) {
    this.#registry = registry;
  }

  readonly #failed = new Map<number, IddError>();

  /**
   * The schema id a value's frame names when the decoder has not loaded it yet (then `load` it
   * before `decode`); undefined for JSON, unframed values and known ids.
   */
  unknownSchemaId(value: Buffer | null): number | undefined {
    if (!value || value.length < 5 || value[0] !== MAGIC_BYTE) return undefined;
    const id = value.readUInt32BE(1);
    return this.#resolvers.has(id) || this.#failed.has(id) ? undefined : id;
  }

  /**
   * Fetches writer schemas from the registry. Ids the registry does not know, or whose schema cannot
   * be read as IdRequest, are remembered as such; a registry that cannot be reached throws (the
   * batch is retried, not its requests rejected).
   */
  async load(ids: Iterable<number>): Promise<void> {
    const todo = [...new Set(ids)];
    // Ids the registry does not know are remembered, boundedly: a stream of made-up ids must not grow memory.
    if (this.#failed.size + todo.length > MAX_FAILED_SCHEMA_IDS) this.#failed.clear();
    const next = async () => {
      for (let id = todo.pop(); id !== undefined; id = todo.pop()) await this.#loadOne(id);
    };
    await Promise.all(Array.from({ length: Math.min(LOADS_IN_FLIGHT, todo.length) }, next));
  }

  async #loadOne(schemaId: number): Promise<void> {
    let text: string;
    try {
      text = await this.#registry.schemaById(schemaId);
    } catch (e) {
      if (!isIddError(e, "REGISTRY_REJECTED")) throw e;
      this.#failed.set(schemaId, new IddError("UNKNOWN_SCHEMA_ID", `schema id ${schemaId} is not in the registry`, { cause: e }));
      return;
    }
    try {
      this.#resolvers.set(schemaId, requestType.createResolver(text === requestSchemaText ? requestType : avroType(text)));
    } catch (e) {
      const message = `schema id ${schemaId} cannot be read as idd.v1.IdRequest: ${(e as Error).message}`;
      this.#failed.set(schemaId, new IddError("SCHEMA_INCOMPATIBLE", message));
    }
  }

  /** Decodes a framed Avro value whose schema id was loaded. */
  decode(value: Buffer): unknown {
    const { schemaId, body } = unframe(value);
    const failed = this.#failed.get(schemaId);
    if (failed) throw failed;
    const resolver = this.#resolvers.get(schemaId);
    if (!resolver) throw new IddError("INTERNAL", `schema id ${schemaId} was not loaded before decoding`);
    try {
      return requestType.fromBuffer(body, resolver);
    } catch (e) {
      throw new IddError("BAD_AVRO", `Avro body does not decode with schema ${schemaId}: ${(e as Error).message}`);
    }
  }
}

function isJson(value: Buffer): boolean {
  for (let i = 0; i < value.length; i++) {
    const byte = value[i];
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

/** Field `k` of a request body: a string, or null when absent (a problem unless optional) or not a string. */
function stringField(o: Record<string, unknown>, k: string, problems: string[], optional = false): string | null {
  const x = o[k];
  if (x === undefined || x === null) {
    if (!optional) problems.push(`${k} is missing`);
    return null;
  }
  if (typeof x === "string") return x;
  problems.push(`${k} must be a string`);
  return null;
}

/** `fields`: an object of short strings (BAD_FIELDS beyond the bounds). */
function fieldsOf(f: unknown, problems: string[], fieldProblems: string[]): Record<string, string> {
  const fields: Record<string, string> = {};
  if (f === undefined || f === null) return fields;
  if (typeof f !== "object" || Array.isArray(f) || f instanceof Map) {
    problems.push("fields must be an object of strings");
    return fields;
  }
  const entries = Object.entries(f as Record<string, unknown>);
  if (entries.length > MAX_FIELDS) fieldProblems.push(`fields has ${entries.length} entries; the maximum is ${MAX_FIELDS}`);
  for (const [k, x] of entries.slice(0, MAX_FIELDS)) {
    if (typeof x !== "string" || k.length > MAX_FIELD_NAME || x.length > MAX_FIELD_VALUE) {
      fieldProblems.push(`fields.${k.slice(0, MAX_FIELD_NAME)} must be a string of at most ${MAX_FIELD_VALUE} characters`);
    } else fields[k] = x;
  }
  return fields;
}

function requestOf(v: unknown): IdRequest {
  const o = (v ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  const fieldProblems: string[] = [];
  const requestId = stringField(o, "requestId", problems) ?? "";
  const sequence = stringField(o, "sequence", problems) ?? "";
  const replyTo = stringField(o, "replyTo", problems, true);
  const c = o.count ?? 1;
  const count = typeof c === "number" && Number.isInteger(c) ? c : Number.NaN;
  if (Number.isNaN(count)) problems.push("count must be an integer");
  const d = o.deadline;
  let deadline: bigint | null = null;
  if (typeof d === "bigint") deadline = d;
  else if (typeof d === "number" && Number.isInteger(d)) deadline = BigInt(d);
  else if (d !== undefined && d !== null) problems.push("deadline must be epoch milliseconds");
  const fields = fieldsOf(o.fields, problems, fieldProblems);
  // An ISSUE naming none of a settlement's fields (the common request) skips their checks.
  const plain = o.action == null && o.numbers == null && o.reason == null && o.period == null;
  const settle = plain ? undefined : settleOf(o, problems);
  // Only the fields wrong: BAD_FIELDS, the code documented for fields; anything else too: BAD_REQUEST, every problem.
  if (problems.length > 0) throw new IddError("BAD_REQUEST", [...problems, ...fieldProblems].join("; "));
  if (fieldProblems.length > 0) throw new IddError("BAD_FIELDS", fieldProblems.join("; "));
  const request: IdRequest = { requestId, sequence, count, replyTo, deadline, fields };
  if (settle) request.settle = settle;
  return request;
}

/** `action`, `numbers`, `reason` and `period`: a CONFIRM or VOID, or undefined for ISSUE (which takes none of them). */
function settleOf(o: Record<string, unknown>, problems: string[]): Settle | undefined {
  const action = o.action ?? "ISSUE";
  const n = o.numbers ?? [];
  const reason = o.reason ?? null;
  const period = o.period ?? null;
  if (typeof action !== "string" || !(ACTIONS as readonly string[]).includes(action)) {
    problems.push(`action must be one of ${ACTIONS.join(", ")}`);
    return undefined;
  }
  if (!Array.isArray(n)) problems.push("numbers must be an array of integers");
  if (reason !== null && (typeof reason !== "string" || reason.length > MAX_REASON))
    problems.push(`reason must be a string of at most ${MAX_REASON} characters`);
  if (period !== null && (typeof period !== "string" || !PERIOD_TEXT.test(period)))
    problems.push("period must be yyyy, yyyyMM or yyyyMMdd");
  if (action === "ISSUE") {
    if (Array.isArray(n) && n.length > 0) problems.push("numbers are for CONFIRM and VOID, not ISSUE");
    return undefined;
  }
  if (action === "VOID" && (typeof reason !== "string" || reason.trim() === "")) problems.push("VOID needs a reason");
  if (!Array.isArray(n)) return undefined;
  const numbers: bigint[] = [];
  let bad = 0;
  for (const x of n as unknown[]) {
    const v =
      typeof x === "bigint"
        ? x
        : typeof x === "number" && Number.isSafeInteger(x)
          ? BigInt(x)
          : typeof x === "string" && /^\d{1,19}$/.test(x)
            ? BigInt(x)
            : -1n;
    if (v < 0n || v > MAX_LONG) bad++;
    else numbers.push(v);
  }
  if (bad > 0) problems.push(`numbers must be integers from 0 to 2^63 - 1 (${bad} are not)`);
  return {
    action: action as Settle["action"],
    numbers,
    reason: typeof reason === "string" ? reason : null,
    period: typeof period === "string" ? period : null,
  };
}

function rejected(code: ErrorCode, message: string, base: Omit<Rejected, "ok" | "error">): Rejected {
  return { ok: false, error: new IddError(code, message), ...base };
}

/** What a rejection of a record carries before its body is read. */
const unread = (format: WireFormat, key: string, address?: ReplyAddress): Omit<Rejected, "ok" | "error"> => ({
  format,
  requestId: "",
  sequence: key.slice(0, 64),
  ...(address && { address }),
});

/**
 * Parses one record. Synchronous: Avro values must name schema ids the decoder has loaded
 * (`RequestDecoder.unknownSchemaId` / `load`). A reply address that can never be delivered to
 * (illegal or internal topic, oversized correlation id or headers) is a rejection without an
 * address: the record is dead-lettered.
 */
export function parseRequest(record: RawRecord, decoder: RequestDecoder, limits: RequestLimits): Accepted | Rejected {
  const key = record.key?.toString("utf8") ?? "";
  const value = record.value ?? EMPTY;
  const format: WireFormat = isJson(value) ? "json" : "avro";
  const fromHeaders = replyAddress(record.headers, undefined, limits);
  if (fromHeaders instanceof IddError) return { ok: false, error: fromHeaders, ...unread(format, key) };

  if (value.length > limits.maxRequestBytes) {
    const message = `value has ${value.length} bytes; the maximum is ${limits.maxRequestBytes}`;
    return rejected("REQUEST_TOO_LARGE", message, unread(format, key, fromHeaders));
  }
  let request: IdRequest;
  try {
    request = requestOf(format === "json" ? fromJson(value) : decoder.decode(value));
  } catch (e) {
    if (isIddError(e) && !e.retriable) return { ok: false, error: e, ...unread(format, key, fromHeaders) };
    throw e;
  }
  const address = fromHeaders ?? replyAddress(record.headers, request.replyTo, limits);
  const { requestId, sequence } = request;
  if (address instanceof IddError) return { ok: false, error: address, format, requestId, sequence: sequence || key };
  if (!address)
    return rejected("NO_REPLY_ADDRESS", "no kafka_replyTopic or REPLY_TOPIC header and no replyTo field", {
      format,
      requestId,
      sequence: sequence || key,
    });
  if (!SEQUENCE_NAME.test(sequence)) {
    return rejected("INVALID_SEQUENCE_NAME", `sequence name must match ${SEQUENCE_NAME.source} (${sequence.length} characters given)`, {
      format,
      requestId,
      sequence: sequence.slice(0, 64),
      address,
    });
  }
  const addressed = { format, requestId, sequence, address };
  if (key !== sequence) {
    return rejected("KEY_MISMATCH", `the message key "${key.slice(0, 64)}" is not the sequence name "${sequence}"`, addressed);
  }
  if (request.count < 1 || request.count > limits.maxCount) {
    return rejected("INVALID_COUNT", `count ${request.count} is not between 1 and ${limits.maxCount}`, addressed);
  }
  const settled = request.settle?.numbers.length;
  if (settled !== undefined && (settled < 1 || settled > limits.maxCount)) {
    return rejected("INVALID_COUNT", `numbers has ${settled} entries; ${request.settle?.action} takes 1 to ${limits.maxCount}`, addressed);
  }
  return { ok: true, request, format, address };
}

const EMPTY = Buffer.alloc(0);
