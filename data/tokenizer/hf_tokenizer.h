/* Megatron-DeepSpeed's HFTokenizer (_HFTokenizer: AutoTokenizer.from_pretrained(DIR, use_fast=False) plus a
 * "[PAD]" pad token when the directory defines none) for the slow Hugging Face tokenizer classes a Llama-2, GPT-2 or
 * Qwen2 directory loads: LlamaTokenizer (tokenizer.model through libsentencepiece, legacy and non-legacy handling of
 * the text after special tokens), GPT2Tokenizer and Qwen2Tokenizer (vocab.json + merges.txt through gpt2_bpe.c;
 * Qwen2's NFC, regex and added tokens); and the fast PreTrainedTokenizerFast that a Llama-3 directory loads whatever
 * use_fast says (a byte-level BPE tokenizer.json: its added tokens, GPT-2's or Llama-3's pre-tokenizer, NFC,
 * ignore_merges, the template's special tokens, through gpt2_bpe.c). The directory's tokenizer_config.json,
 * special_tokens_map.json and config.json choose the class and its settings (add_bos_token, add_eos_token, legacy,
 * add_prefix_space, the special tokens). The text is split on the special (added) tokens as transformers' slow
 * tokenizers, or the tokenizers library, split it (leftmost, longest match; lstrip/rstrip for the Llama and GPT-2
 * classes). Anything else a directory asks for (another class, tokens beyond bos/eos/unk/pad in a Llama or GPT-2
 * class, single_word tokens, a normalizer other than NFC) is refused naming the file and the key.
 *
 * Threading: a loaded tokenizer is immutable; encode with one zt_hf_state per thread. */
#ifndef ZT_HF_TOKENIZER_H
#define ZT_HF_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer/tokenizer.h"

typedef struct zt_hf_tok zt_hf_tok;
typedef struct zt_hf_state zt_hf_state;

/* Loads DIR (--tokenizer-model); dies naming the directory, the file and the key on anything it cannot honour. */
zt_hf_tok *zt_hf_tok_load(const char *dir);
void zt_hf_tok_free(zt_hf_tok *h);

/* tokenizer.vocab_size: the base vocabulary (pieces or vocab.json entries), without the added [PAD]. */
int zt_hf_vocab_size(const zt_hf_tok *h);
int32_t zt_hf_eos(const zt_hf_tok *h);
int32_t zt_hf_bos(const zt_hf_tok *h);
int32_t zt_hf_pad(const zt_hf_tok *h);
/* tokenizer.eos_token (the string the Alpaca targets end with). */
const char *zt_hf_eos_token(const zt_hf_tok *h);

zt_hf_state *zt_hf_state_new(const zt_hf_tok *h);
void zt_hf_state_free(zt_hf_state *s);

/* tokenizer.encode(text): the ids with the class's special tokens (bos and/or eos) around them. */
void zt_hf_encode(const zt_hf_tok *h, zt_hf_state *s, const char *text, size_t len, zt_ids *out);
/* tokenizer(text, padding="max_length", max_length=L, truncation=True).input_ids: the text's ids cut to leave room
 * for the special tokens, the special tokens added, then [PAD] ids to L. Writes L ids to out and returns how many
 * of them are not the pad id (input_ids.ne(pad_token_id).sum()). */
int zt_hf_encode_padded(const zt_hf_tok *h, zt_hf_state *s, const char *text, size_t len, int L, int32_t *out);
/* tokenizer.decode(ids) as a malloc'd NUL-terminated string; an id outside [0, vocab + added) dies naming it. */
char *zt_hf_decode(const zt_hf_tok *h, const int32_t *ids, size_t n, size_t *len_out);

#endif
