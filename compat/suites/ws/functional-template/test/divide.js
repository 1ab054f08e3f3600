import assert from "node:assert/strict";
const mod = await import("../src/index.js");
assert.equal(typeof mod.divide, "function", "divide is not implemented");
