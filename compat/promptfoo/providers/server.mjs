// The HTTP API the `http` and `webhook:` providers of this config call, on 127.0.0.1:18731.
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
      if (req.url === '/hook') {
        const c = find(json.prompt);
        res.end(JSON.stringify({ output: c ? `Capital: ${capitals[c]}` : 'unknown' }));
      } else {
        const c = find(json.country || json.question);
        res.end(JSON.stringify({ answer: c ? `${capitals[c]}, of course.` : 'unknown', question: json.question }));
      }
    });
  })
  .listen(18731, '127.0.0.1');
