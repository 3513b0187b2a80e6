/**
 * A checkout of an earlier release, made from this repository's own history (`git worktree add
 * --detach`), with this checkout's node_modules linked in (the releases share their dependencies), for
 * tests that run old workers beside new ones. A clone without the commit (a shallow one) fails with
 * what to do: the test needs the history, it is not optional.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "../../stack/paths.js";

export interface OldCheckout {
  root: string;
  remove(): void;
}

const git = (args: string[]) => execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();

export function oldCheckout(commit: string): OldCheckout {
  try {
    git(["cat-file", "-e", `${commit}^{commit}`]);
  } catch {
    const shallow = (() => {
      try {
        return git(["rev-parse", "--is-shallow-repository"]) === "true";
      } catch {
        return false;
      }
    })();
    throw new Error(
      `commit ${commit} (the release this test upgrades from) is not in ${REPO_ROOT}'s history${shallow ? ": the clone is shallow; run `git fetch --unshallow` (or clone with full history)" : ""}`,
    );
  }
  const root = join(mkdtempSync(join(tmpdir(), "idd-old-")), "idd");
  git(["worktree", "add", "--detach", root, commit]);
  symlinkSync(realpathSync(join(REPO_ROOT, "node_modules")), join(root, "node_modules"));
  return {
    root,
    remove() {
      try {
        git(["worktree", "remove", "--force", root]);
      } finally {
        rmSync(join(root, ".."), { recursive: true, force: true });
        git(["worktree", "prune"]);
      }
    },
  };
}
