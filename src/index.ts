/** idd's public API for Node services. */

export { IdClient, type IdClientOptions, type IdResult, type SettleOptions } from "./client/id-client.js";
export { type CreateOptions, SequenceCatalog } from "./client/sequence-catalog.js";
export { Secret } from "./config/secret.js";
export type { KafkaSecurity, RegistrySecurity, SaslMechanism } from "./config/security.js";
export { type ErrorCode, ErrorCodes, IddError, isIddError } from "./core/errors.js";
export type { BeforeResult, FailedEvent, HookContext, HookModule, HookRequest, IssuanceHook, IssuedEvent } from "./hooks/hook.js";
export { homePartition, murmur2 } from "./protocol/home-partition.js";
export type { IdReply, Range } from "./protocol/reply.js";
export type { IdRequest } from "./protocol/request.js";
export { CHECK_ALGORITHMS, type CheckAlgorithm, checkAlgorithm } from "./sequences/check-digits.js";
export type { SequenceInput } from "./sequences/definition.js";
export type { KeyPartitioner } from "./transport/kafka/index.js";
