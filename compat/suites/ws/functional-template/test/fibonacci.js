import assert from "node:assert/strict";
const { fibonacci } = await import("../src/index.js");
assert.equal(fibonacci(10), 55);
