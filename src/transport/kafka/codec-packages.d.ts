/** The parts of the pure-JavaScript codec packages that codecs.ts uses (they ship no types). */

declare module "snappyjs" {
  const snappy: {
    compress(data: Uint8Array): Uint8Array;
    /** Throws when the data says it is longer than `maxLength` once uncompressed. */
    uncompress(data: Uint8Array, maxLength?: number): Uint8Array;
  };
  export default snappy;
}

declare module "lz4js" {
  const lz4: {
    compressBound(n: number): number;
    /** An upper bound of a frame's decompressed size, read from its header and block sizes. */
    decompressBound(frame: Uint8Array): number;
    decompress(frame: Uint8Array, maxSize?: number): Uint8Array;
    /** Compresses src[from, from + size) into dst from 0; returns the bytes written (0: incompressible). */
    compressBlock(src: Uint8Array, dst: Uint8Array, from: number, size: number, hashTable: Uint32Array): number;
  };
  export default lz4;
}

declare module "lz4js/xxh32.js" {
  const xxh32: { hash(seed: number, data: Uint8Array, from: number, length: number): number };
  export default xxh32;
}
