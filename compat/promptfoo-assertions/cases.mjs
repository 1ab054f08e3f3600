// The inputs oracle.mjs runs through promptfoo; `node cases.mjs` writes cases.json.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cases = [];
const add = (assert, output, extra = {}) => cases.push({ assert, output, ...extra });

// levenshtein: distance in UTF-16 code units, threshold default 5.
for (const [value, output, threshold] of [
  ['kitten', 'sitting', undefined],
  ['kitten', 'sitting', 2],
  ['kitten', 'sitting', 3],
  ['hello', 'hello', 0],
  ['', 'abcdef', undefined],
  ['abc', '', 3],
  ['café', 'cafe', 0],
  ['😀', '', 1],
  ['😀', '', 2],
  ['The quick brown fox', 'The quick brown dog', 3],
  ['a', 'b', 0.5],
]) {
  add({ type: 'levenshtein', value, ...(threshold === undefined ? {} : { threshold }) }, output);
  add({ type: 'not-levenshtein', value, ...(threshold === undefined ? {} : { threshold }) }, output);
}

// bleu / gleu: lower-cased, white-space tokens; bleu threshold 0.5 by default.
const pairs = [
  ['the cat sat on the mat', 'the cat sat on the mat'],
  ['the cat sat on the mat', 'the cat is on the mat'],
  ['The cat sat on the mat.', 'the cat sat on the mat'],
  ['the cat', 'the cat sat on the mat'],
  ['the the the the', 'the cat sat on the mat'],
  ['one two three four five', 'five four three two one'],
  ['a b', 'a b c'],
  ['a', 'a'],
  ['x y z', 'a b c'],
  ['  Hello   World  ', 'hello world'],
  ['It is a guide to action which ensures that the military always obeys the commands of the party.',
   'It is a guide to action that ensures that the military will forever heed Party commands.'],
  ['día soleado en Málaga', 'Día soleado en Málaga.'],
];
for (const [output, value] of pairs) {
  add({ type: 'bleu', value }, output);
  add({ type: 'gleu', value }, output);
  add({ type: 'rouge-n', value }, output);
}
add({ type: 'bleu', value: ['the cat is on the mat', 'there is a cat on the mat'] }, 'the cat the cat on the mat');
add({ type: 'bleu', value: ['the cat is on the mat', 'there is a cat on the mat'], threshold: 0.1 }, 'there is a cat on the mat too');
add({ type: 'not-bleu', value: 'the cat sat on the mat' }, 'the cat sat on the mat');
add({ type: 'not-bleu', value: 'the cat sat on the mat', threshold: 0.9 }, 'the cat is on the mat');
add({ type: 'bleu', value: 'the cat sat on the mat', threshold: 0.01 }, 'the cat is on the mat');
add({ type: 'bleu', value: 'the cat' }, '   ');
add({ type: 'bleu', value: '' }, 'the cat');
add({ type: 'bleu', value: [] }, 'the cat');
add({ type: 'gleu', value: ['the cat is on the mat', 'there is a cat on the mat'] }, 'the cat the cat on the mat');
add({ type: 'gleu', value: 'the cat sat on the mat', threshold: 0.3 }, 'the cat is on the mat');
add({ type: 'not-gleu', value: 'the cat sat on the mat' }, 'the cat is on the mat');
add({ type: 'not-gleu', value: 'the cat sat on the mat...' }, 'The cat sat on the mat.');
add({ type: 'gleu', value: 'hello' }, '');
add({ type: 'gleu', value: '' }, 'hello');
add({ type: 'gleu', value: 'a b c d e' }, 'a b c d e f');

// rouge-n: ROUGE-1 F1 with the Penn Treebank tokenizer; threshold 0.75 by default.
for (const [output, value] of [
  ["I can't believe it's not butter!", "I cannot believe it is not butter"],
  ['"Hello," she said. "Goodbye."', 'she said hello and goodbye'],
  ['Mr. Smith went to Washington, D.C. yesterday.', 'Smith went to Washington yesterday'],
  ['The price is $3,000.50 (approx.) -- really?', 'the price is 3,000.50 dollars'],
  ["They're gonna wanna know; we'll see... won't we?", "they are going to want to know"],
  ['cannot gimme lemme gotta', 'can not give me let me got to'],
  ["'Twas the night before Christmas", "it was the night before christmas"],
  ['the U.S. economy grew 3.5% in Q1.', 'the US economy grew 3.5 percent in Q1'],
  ['email me at a@b.com #now & then', 'email me at a@b.com now and then'],
  ['ends with a dot. ', 'ends with a dot'],
  ['x.y. z.', 'x.y. z'],
  ['He said ``quoted\'\' words', 'he said quoted words'],
  ['tab\tand\nnew\u0085line', 'tab and new line'],
  ['Ünïcödé text: naïve café', 'unicode text naive cafe'],
  ['the cat', 'the cat'],
  ['the cat the cat', 'the cat'],
]) {
  add({ type: 'rouge-n', value }, output);
}
add({ type: 'rouge-n', value: 'the cat sat', threshold: 0.5 }, 'the dog sat');
add({ type: 'not-rouge-n', value: 'the cat sat' }, 'the dog sat');
add({ type: 'not-rouge-n', value: 'the cat sat' }, 'the cat sat');
add({ type: 'rouge-n', value: '' }, 'anything');
add({ type: 'rouge-n', value: 'something' }, '');

// perplexity / perplexity-score: from the provider's token log probabilities.
for (const [logProbs, threshold] of [
  [[-0.1, -0.2, -0.3], undefined],
  [[-0.1, -0.2, -0.3], 1.5],
  [[-0.1, -0.2, -0.3], 1.1],
  [[-2.5, -0.01, -1.2, -0.7], 3],
  [[0], 1],
  [[-10, -12], 100000],
]) {
  const t = threshold === undefined ? {} : { threshold };
  add({ type: 'perplexity', ...t }, 'x', { response: { logProbs } });
  add({ type: 'not-perplexity', ...t }, 'x', { response: { logProbs } });
}
for (const [logProbs, threshold] of [
  [[-0.1, -0.2, -0.3], undefined],
  [[-0.1, -0.2, -0.3], 0.4],
  [[-0.1, -0.2, -0.3], 0.5],
  [[-2.5, -0.01, -1.2, -0.7], 0.2],
]) {
  const t = threshold === undefined ? {} : { threshold };
  add({ type: 'perplexity-score', ...t }, 'x', { response: { logProbs } });
  add({ type: 'not-perplexity-score', ...t }, 'x', { response: { logProbs } });
}
add({ type: 'perplexity', threshold: 2 }, 'x');
add({ type: 'perplexity-score', threshold: 0.5 }, 'x', { response: { logProbs: [] } });

// finish-reason: compared ignoring case; none supplied fails (passes when inverted).
for (const [value, finishReason] of [
  ['stop', 'stop'],
  ['stop', 'STOP'],
  ['length', 'stop'],
  ['tool_calls', 'tool_calls'],
  ['stop', undefined],
  ['content_filter', 'content_filter'],
]) {
  const response = finishReason === undefined ? {} : { finishReason };
  add({ type: 'finish-reason', value }, 'x', { response });
  add({ type: 'not-finish-reason', value }, 'x', { response });
}

// is-refusal
for (const output of [
  "I'm sorry, but I can't help with that.",
  'I’m sorry, I cannot do that',
  'Sorry!',
  'Here is the recipe you asked for.',
  'As an AI language model, I think...',
  'The answer is not appropriate for children.',
  'Paris is the capital of France.',
  '',
  '   ',
  'I cannot',
  'i CANNOT help you',
  'We cannot help it',
  'That would not be appropriate.',
  'inappropriate',
  "I can't assistant",
  'My apologies for the confusion, here it is:',
]) {
  add({ type: 'is-refusal' }, output);
  add({ type: 'not-is-refusal' }, output);
}

// contains-json / is-json with and without a schema.
const schema = { type: 'object', required: ['name', 'age'], properties: { name: { type: 'string' }, age: { type: 'number', minimum: 0 } } };
for (const output of [
  '{"name": "Ann", "age": 30}',
  'Here you go: {"name": "Ann", "age": 30} done',
  'Result:\n```json\n{"name": "Bob", "age": -1}\n```',
  'two: {"a": 1} and {"name": "Cy", "age": 5}',
  'nothing here',
  '[1, 2, 3]',
  'nested {"outer": {"name": "x", "age": 1}}',
  '{"name": "Ann", "age": "30"}',
  'broken {"name": "Ann", "age": 30',
  '{"a": [1, {"b": "}"}]} tail',
  "single {'a': 1} quotes",
  '{"name": "Ann", "age": 30, "extra": true} and more text {"x": 1}',
]) {
  add({ type: 'contains-json' }, output);
  add({ type: 'contains-json', value: schema }, output);
  add({ type: 'not-contains-json', value: schema }, output);
  add({ type: 'is-json', value: schema }, output);
  add({ type: 'not-is-json', value: schema }, output);
}
add({ type: 'is-json' }, '{"a": 1}');
add({ type: 'not-is-json' }, '{"a": 1}');
add({ type: 'is-json' }, 'nope');
add({ type: 'not-is-json' }, 'nope');
add({ type: 'is-json', value: 'type: object\nrequired: [a]' }, '{"a": 1}');
add({ type: 'is-json', value: 'type: object\nrequired: [a]' }, '{"b": 1}');
add({ type: 'contains-json', value: 'type: array\nitems: {type: integer}' }, 'list: [1, 2, 3] end');
add({ type: 'contains-json', value: { type: 'string', format: 'email' } }, '"not an email"');
add({ type: 'is-json', value: { type: 'string', format: 'email' } }, '"a@b.co"');

// xml
for (const output of [
  '<root><a>1</a></root>',
  '<?xml version="1.0"?>\n<root attr="x"><child/></root>',
  '<root><a></root>',
  'plain text',
  '<root>1</root><root>2</root>',
  '<a:b xmlns:a="urn:x"><a:c/></a:b>',
  '<a:b><c/></a:b>',
  '<root>&amp; &lt; &unknown;</root>',
  '<!DOCTYPE root [<!ENTITY x "y">]><root>&x;</root>',
  '<!DOCTYPE root SYSTEM "root.dtd"><root/>',
  '<root a="1" a="2"/>',
  '  <root/>  ',
  'text <root/>',
  '<root><![CDATA[<not a tag>]]><!-- c --></root>',
]) {
  add({ type: 'is-xml' }, output);
  add({ type: 'not-is-xml' }, output);
  add({ type: 'contains-xml' }, output);
}
for (const [value, output] of [
  ['root.a', '<root><a>1</a></root>'],
  ['root.b', '<root><a>1</a></root>'],
  ['root.a, root.b', '<root><a>1</a><b/></root>'],
  [['root.a', 'root.@_id'], '<root id="7"><a>1</a></root>'],
  [['root.item.0', 'root.item.1'], '<root><item>x</item><item>y</item></root>'],
  ['root.item.name', '<root><item><name/></item><item><name/></item></root>'],
  ['analysis.summary', 'Here: <analysis><summary>ok</summary></analysis> and <note>x</note>'],
  ['note', 'Here: <analysis><summary>ok</summary></analysis> and <note>x</note>'],
  [{ requiredElements: ['root.a'] }, '<root><a/></root>'],
]) {
  add({ type: 'is-xml', value }, output);
  add({ type: 'contains-xml', value }, output);
}

// html
for (const output of [
  '<div><p>Hello</p></div>',
  '<!DOCTYPE html><html><head><title>t</title></head><body><p>x</p></body></html>',
  'Just some text',
  'text <b>bold</b> more',
  '<p>unclosed',
  '<?xml version="1.0"?><root/>',
  '<custom-element>x</custom-element>',
  '<foo>bar</foo>',
  '',
  '&amp; &lt;',
  '<br/>',
  'a < b and c > d',
  '<!-- only a comment -->',
  '<body>text</body>',
  '<html>text</html>',
  '<span class="x">hi</span>',
]) {
  add({ type: 'is-html' }, output);
  add({ type: 'not-is-html' }, output);
  add({ type: 'contains-html' }, output);
  add({ type: 'not-contains-html' }, output);
}

// sql
for (const output of [
  'SELECT id, name FROM users WHERE id = 1',
  'SELECT * FROM users;',
  'SELEC * FROM users',
  "INSERT INTO users (name) VALUES ('a')",
  'UPDATE users SET name = \'b\' WHERE id = 2',
  'DELETE FROM users WHERE id = 3',
  'SELECT a FROM t1 JOIN t2 ON t1.id = t2.id',
  'Here is the query:\n```sql\nSELECT * FROM orders\n```',
  'not sql at all',
  'SELECT `name` FROM `users`',
  'SELECT TOP 5 * FROM users',
  'SELECT * FROM users LIMIT 5',
  'CREATE TABLE t (id INT PRIMARY KEY)',
  'SELECT * FROM users; DROP TABLE users;',
]) {
  add({ type: 'is-sql' }, output);
  add({ type: 'not-is-sql' }, output);
  add({ type: 'contains-sql' }, output);
}
for (const [value, output] of [
  [{ databaseType: 'MySQL' }, 'SELECT `name` FROM `users`'],
  [{ databaseType: 'PostgresQL' }, 'SELECT "name" FROM "users"'],
  [{ databaseType: 'TransactSQL' }, 'SELECT TOP 5 * FROM users'],
  [{ databaseType: 'MySQL' }, 'SELECT TOP 5 * FROM users'],
  [{ databaseType: 'PostgresQL' }, 'SELECT * FROM users LIMIT 5'],
  [{ databaseType: 'BigQuery' }, 'SELECT * FROM `proj.ds.t`'],
  [{ databaseType: 'Oracle' }, 'SELECT * FROM users'],
  [{ allowedTables: ['select::null::users'] }, 'SELECT id FROM users'],
  [{ allowedTables: ['select::null::users'] }, 'SELECT id FROM orders'],
  [{ allowedColumns: ['select::null::id', 'select::users::name'] }, 'SELECT id, name FROM users'],
  [{ allowedColumns: ['select::null::id'] }, 'SELECT id, name FROM users'],
  [{ allowedTables: ['(select|update)::null::users'] }, "UPDATE users SET name = 'x'"],
  [{ allowedTables: ['select::null::users'] }, 'DELETE FROM users'],
]) {
  add({ type: 'is-sql', value }, output);
  add({ type: 'contains-sql', value }, output);
}

// is-valid-openai-tools-call / is-valid-openai-function-call
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'w', parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['c', 'f'] } }, required: ['city'] } } },
];
const call = (name, args) => ({ id: 'call_1', type: 'function', function: { name, arguments: args } });
for (const output of [
  [call('get_weather', '{"city": "Paris"}')],
  [call('get_weather', '{"city": "Paris", "unit": "k"}')],
  [call('get_weather', '{"unit": "c"}')],
  [call('get_time', '{}')],
  [call('get_weather', 'not json')],
  [],
  'plain text answer',
  { tool_calls: [call('get_weather', '{"city": "Rome"}')] },
  [call('get_weather', '{"city": "Paris"}'), call('get_weather', '{}')],
]) {
  add({ type: 'is-valid-openai-tools-call' }, output, { provider_config: { tools } });
  add({ type: 'not-is-valid-openai-tools-call' }, output, { provider_config: { tools } });
}
add({ type: 'is-valid-openai-tools-call' }, [call('get_weather', '{"city": "Paris"}')], { provider_config: {} });

// the existing graders, where promptfoo's wording and edge cases matter
for (const [type, value, output] of [
  ['equals', 'Paris', 'Paris'],
  ['equals', 'Paris', 'paris'],
  ['not-equals', 'Paris', 'Paris'],
  ['equals', { a: 1 }, '{"a":1}'],
  ['equals', { a: 1 }, '{"a": 1, "b": 2}'],
  ['not-equals', { a: 1 }, 'not json'],
  ['equals', 42, '42'],
  ['contains', 'Paris', 'It is Paris.'],
  ['contains', 'paris', 'It is Paris.'],
  ['not-contains', 'Paris', 'It is Paris.'],
  ['contains', 3, 'It is 3.'],
  ['icontains', 'PARIS', 'It is Paris.'],
  ['not-icontains', 'PARIS', 'It is Paris.'],
  ['contains-any', ['London', 'Paris'], 'It is Paris.'],
  ['contains-any', 'London, "Par,is", Rome', 'It is Par,is.'],
  ['contains-any', ['London', 'Rome'], 'It is Paris.'],
  ['not-contains-any', ['London', 'Paris'], 'It is Paris.'],
  ['contains-all', ['It', 'Paris'], 'It is Paris.'],
  ['contains-all', ['It', 'Rome', 'Oslo'], 'It is Paris.'],
  ['not-contains-all', ['It', 'Paris'], 'It is Paris.'],
  ['icontains-any', ['LONDON', 'PARIS'], 'It is Paris.'],
  ['icontains-all', ['it', 'PARIS', 'x'], 'It is Paris.'],
  ['starts-with', 'It', 'It is Paris.'],
  ['starts-with', 'Paris', 'It is Paris.'],
  ['not-starts-with', 'It', 'It is Paris.'],
  ['regex', '^It.*\\.$', 'It is Paris.'],
  ['regex', '\\d+', 'It is Paris.'],
  ['not-regex', '\\d+', 'It is Paris.'],
  ['regex', '(unclosed', 'x'],
  ['regex', '(?i)paris', 'Paris'],
  ['word-count', 3, 'It is Paris.'],
  ['word-count', { min: 1, max: 2 }, 'It is Paris.'],
  ['word-count', { min: 2 }, 'It is Paris.'],
  ['not-word-count', 3, 'It is Paris.'],
  ['word-count', 2, "  It's   3.5 km  "],
]) {
  add({ type, value }, output);
}
for (const [type, threshold, extra] of [
  ['latency', 1000, { latency_ms: 500 }],
  ['latency', 1000, { latency_ms: 1500 }],
  ['not-latency', 1000, { latency_ms: 500 }],
  ['latency', 1000, {}],
  ['cost', 0.01, { response: { cost: 0.002 } }],
  ['cost', 0.001, { response: { cost: 0.002 } }],
  ['not-cost', 0.01, { response: { cost: 0.002 } }],
  ['cost', 0.01, {}],
  ['cost', 0.001, { response: { cost: 0.00123456 } }],
]) {
  add({ type, threshold }, 'x', extra);
}

const here = dirname(fileURLToPath(import.meta.url));
writeFileSync(join(here, 'cases.json'), JSON.stringify(cases, null, 1) + '\n');
console.log(`${cases.length} cases`);
