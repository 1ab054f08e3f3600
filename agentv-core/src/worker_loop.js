// The persistent protocol every warm node worker speaks (`judge_pool.rs`): announce it, then
// answer one request per line ({id, payload}) with {id, result}, where `await answer(payload)`
// gives the result and `failed(error)` the result of an error it throws. Prepended to each
// worker's own code, which ends by calling `serve`.
'use strict';
const readline = require('node:readline');

function serve(answer, failed) {
  const send = (line) => process.stdout.write(JSON.stringify(line) + '\n');
  // The protocol owns stdout; what the scripts log goes to stderr.
  globalThis.console = new console.Console({ stdout: process.stderr, stderr: process.stderr });
  send({ ready: true, protocol: 1 });
  readline.createInterface({ input: process.stdin }).on('line', async (line) => {
    let request;
    try {
      request = JSON.parse(line);
    } catch {
      return;
    }
    let result;
    try {
      result = await answer(request.payload);
    } catch (e) {
      result = failed(e);
    }
    send({ id: request.id, result });
  });
}

