/** `idd check`: validates a typed number's check digit, or computes it; needs no services. */
import type { Command } from "commander";
import { CHECK_ALGORITHMS, checkAlgorithm, typedValueDigits } from "../../sequences/check-digits.js";
import { EXIT } from "../output.js";

const caught = (all: boolean) => (all ? "all" : "not all");

/** One line per algorithm: its name, whether it catches every single error / every adjacent transposition, its summary. */
const ALGORITHMS_HELP = CHECK_ALGORITHMS.map((name) => {
  const a = checkAlgorithm(name);
  return `  ${name.padEnd(9)} ${caught(a.catchesAllSingleErrors).padEnd(7)} / ${caught(a.catchesAllAdjacentTranspositions).padEnd(7)}  ${a.summary}`;
}).join("\n");

export function addCheckCommand(program: Command): void {
  program
    .command("check")
    .argument("<value>", "the number as typed; spaces, dashes and letters are ignored (a trailing X counts for mod11-2)")
    .requiredOption("--algorithm <name>", `check-digit algorithm: ${CHECK_ALGORITHMS.join(", ")}`)
    .option("--compute", "treat <value> as a payload and print its check character(s) instead")
    .description("check a number's check digit: prints valid (exit 0) or invalid (exit 1); --compute prints the check instead")
    .addHelpText(
      "after",
      `
Algorithms, and whether each catches every single-digit error / every adjacent transposition (ab -> ba)
(each claim is verified by brute force in idd's unit tests):
${ALGORITHMS_HELP}
Exit codes: 0 valid (or computed), 1 invalid, 2 usage error or unknown algorithm.`,
    )
    .exitOverride((e) => process.exit(e.exitCode === 0 ? EXIT.ok : EXIT.error))
    .action((value: string, o: { algorithm: string; compute?: boolean }) => {
      const algorithm = checkAlgorithm(o.algorithm);
      if (o.compute) {
        const digits = value.replace(/[^0-9]/g, "");
        if (!digits) throw new Error(`--compute needs a payload with at least one digit (got "${value.slice(0, 40)}")`);
        process.stdout.write(`${algorithm.compute(digits)}\n`);
        return;
      }
      const valid = algorithm.validate(typedValueDigits(algorithm, value));
      process.stdout.write(valid ? "valid\n" : "invalid\n");
      process.exitCode = valid ? EXIT.ok : EXIT.notAllGood;
    });
}
