// The HTTP API the `http`, `webhook:` and `openai:responses:` providers of these configs call,
// on 127.0.0.1:18731.
import http from 'node:http';
import fs from 'node:fs';

const capitals = JSON.parse(fs.readFileSync(new URL('./capitals.json', import.meta.url)));
const find = (text) => Object.keys(capitals).find((c) => String(text).toLowerCase().includes(c.toLowerCase()));

http
  .createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const json = body ? JSON.parse(body) : {};
      res.setHeader('content-type', 'application/json');
      if (req.url === '/v1/responses') {
        // The Responses API, as `openai:responses:` calls it: the answer as one message item.
        const c = find(JSON.stringify(json.input));
        const text = c ? `${capitals[c]}, of course.` : 'unknown';
        res.end(JSON.stringify({
          id: 'resp_1', object: 'response', status: 'completed', model: json.model,
          output: [{ type: 'message', id: 'msg_1', role: 'assistant', status: 'completed',
                     content: [{ type: 'output_text', text, annotations: [] }] }],
          usage: { input_tokens: 12, output_tokens: 4, total_tokens: 16 },
        }));
      } else if (req.url === '/hook') {
        const c = find(json.prompt);
        res.end(JSON.stringify({ output: c ? `Capital: ${capitals[c]}` : 'unknown' }));
      } else {
        const c = find(json.country || json.question);
        res.end(JSON.stringify({ answer: c ? `${capitals[c]}, of course.` : 'unknown', question: json.question }));
      }
    });
  })
  .listen(18731, '127.0.0.1');
