import assert from "node:assert/strict";
const { multiply } = await import("../src/index.js");
assert.equal(multiply(3, 4), 12);
