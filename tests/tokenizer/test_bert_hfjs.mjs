// Runs Hugging Face's pure-JS tokenizers (@huggingface/tokenizers, BertNormalizer + BertPreTokenizer +
// WordPiece) for test_bert_oracle.py's "hfjs" mode: reads {"module": path to tokenizers.mjs,
// "tokenizer": tokenizer.json object, "texts": [...]} as JSON on stdin, prints the token lists as JSON.
import { pathToFileURL } from "node:url";

let input = "";
process.stdin.setEncoding("utf8");
for await (const chunk of process.stdin) input += chunk;
const req = JSON.parse(input);
const { Tokenizer } = await import(pathToFileURL(req.module).href);
const tok = new Tokenizer(req.tokenizer, {});
const out = req.texts.map((t) => tok.tokenize(t));
process.stdout.write(JSON.stringify(out));
