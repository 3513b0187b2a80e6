import { configDefaults, defineConfig } from "vitest/config";

/**
 * Tests that need no service and start no process: the unit tests next to the pure logic in `src/`,
 * the checkers of test/support, the bench's tables, the error table of docs/wire-contract.md, and the links and the
 * README's client excerpts of the docs. They run without the global setup, so
 * `npx vitest run --project unit` works on a machine with nothing running. Everything else under
 * test/ is `integration` (test/cli/check.test.ts needs no service either, but runs `idd` as processes).
 */
const UNIT = [
  "src/**/*.test.ts",
  "test/support/*.test.ts",
  "test/bench/*.test.ts",
  "test/errors.test.ts",
  "test/docs-links.test.ts",
  "test/docs-examples.test.ts",
  "test/architecture/*.test.ts",
  "test/ops/observability-files.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores and four real services: a little parallelism, not more.
    maxWorkers: 2,
    // idd's kafkajs modules in place before any test file loads kafkajs (test/support/kafkajs-seam.ts).
    setupFiles: ["test/support/kafkajs-seam.ts"],
    // One closing "tests: N passed, N failed, N skipped" line for the whole run, both projects.
    reporters: ["default", "./test/support/summary-reporter.ts"],
    projects: [
      // One module registry per vitest worker, not per file: the unit files share src/ modules and
      // the kafkajs seam instead of loading them again each (42 s → 19 s for the project on 2
      // cores, most of it setup and import). Unit tests keep no state in modules between files;
      // `--sequence.shuffle` runs show it.
      { extends: true, test: { name: "unit", include: UNIT, isolate: false } },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...UNIT],
          // Brings the real services up once (or finds them) and provides their settings.
          globalSetup: ["test/global-setup.ts"],
        },
      },
    ],
  },
});
