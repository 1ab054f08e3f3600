import assert from "node:assert/strict";
const { add } = await import("../src/index.js");
assert.equal(add(2, 3), 5);
