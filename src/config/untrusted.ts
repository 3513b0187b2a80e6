/**
 * Whether a connection failed because the server's TLS certificate is not trusted (unknown CA, wrong
 * host name, expired, or a client certificate the server wanted and did not get): Node's error codes,
 * or their messages as the clients (kafkajs, the MongoDB driver) pass them on, anywhere in the cause
 * chain. Retrying cannot help such a failure: each service's client turns it into its *_TLS_FAILED code.
 */
const CODES = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS/;
const MESSAGES = /certificate|self[- ]signed|altnames/i;

/** An error's message on one line (OpenSSL's carry line breaks): coded errors print as one line. */
export const oneLine = (e: unknown): string =>
  String((e as Error)?.message ?? e)
    .replace(/\s+/g, " ")
    .trim();

export function untrustedCertificate(e: unknown): boolean {
  for (
    let x = e as { code?: unknown; message?: unknown; cause?: unknown; originalError?: unknown } | undefined, depth = 0;
    x && depth < 8;
    depth++
  ) {
    if (CODES.test(String(x.code ?? "")) || MESSAGES.test(String(x.message ?? ""))) return true;
    x = (x.cause ?? x.originalError) as typeof x;
  }
  return false;
}
