/**
 * Runs the `idd` CLI in this process (`node --import tsx test/support/max-rss.ts <args>`) and, on
 * exit, prints the process's peak resident set on stderr as `max-rss-kb N`: for tests of bounded
 * memory, which read it without racing the process's end.
 */
process.on("exit", () => {
  process.stderr.write(`max-rss-kb ${process.resourceUsage().maxRSS}\n`);
});
await import("../../src/cli/main.js");
