// The persistent protocol every warm node worker speaks (`judge_pool.rs`): announce it, then
// answer each request line ({id, payload}) with {id, result}, where `await answer(payload)`
// gives the result and `failed(error)` the result of an error it throws. Requests are answered
// as they finish, in any order (a multiplexed pool sends many at once); what the scripts print
// goes to stderr, so it never breaks the protocol. Prepended to each worker's own code, which
// ends by calling `serve`.
'use strict';
const readline = require('node:readline');

function serve(answer, failed) {
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = process.stderr.write.bind(process.stderr);
  const send = (line) => write(JSON.stringify(line) + '\n');
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
