/** Numbers are stored as MongoDB int64 (`Long`) and read back as BigInt (the client sets `useBigInt64`). */
import { Long } from "mongodb";

export const toInt64 = (n: bigint): Long => Long.fromBigInt(n);

/** A stored int64 as a BigInt, whether the driver gave a bigint or a Long (documents written before `useBigInt64`). */
export const fromInt64 = (x: bigint | Long): bigint => BigInt(x.toString());
