import { expect, test } from "vitest";
import { mongoConcerns } from "./concerns.js";

test("majority writes with the journal and majority reads, unless the URL says otherwise", () => {
  expect(mongoConcerns("mongodb://h1:27017,h2:27017/idd?replicaSet=rs0")).toEqual({
    writeConcern: { w: "majority", journal: true },
    readConcern: { level: "majority" },
  });
  expect(mongoConcerns("mongodb://h/idd?w=1&readConcernLevel=local")).toEqual({});
  expect(mongoConcerns("mongodb://h/idd?journal=false")).toEqual({ readConcern: { level: "majority" } });
  expect(mongoConcerns("mongodb://h/idd")).toMatchObject({ writeConcern: { w: "majority" } });
});
