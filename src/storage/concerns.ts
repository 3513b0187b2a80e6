/**
 * The write and read concerns idd's MongoDB calls use (I1, I4 on a replica set). A reservation is
 * the bound Redis may hand out to: it must survive a primary failover before Redis is raised to it,
 * so writes wait for a majority of the replica set and its journal. Replay computes counters from
 * reservations and grants: it must read only what a majority holds, or a write that is rolled back
 * after a failover could set Redis above what MongoDB keeps. On a single server both cost nothing.
 * A MONGODB_URL that sets its own (`w=`, `journal=`, `readConcernLevel=`) is taken as it is.
 */
import type { MongoClientOptions } from "mongodb";

export function mongoConcerns(url: string): Pick<MongoClientOptions, "writeConcern" | "readConcern"> {
  const query = url.includes("?") ? url.slice(url.indexOf("?") + 1) : "";
  const given = (name: string) => new RegExp(`(^|&)${name}=`, "i").test(query);
  return {
    ...(!given("w") && !given("journal") && { writeConcern: { w: "majority", journal: true } }),
    ...(!given("readConcernLevel") && { readConcern: { level: "majority" } }),
  };
}
