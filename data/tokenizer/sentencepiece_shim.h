/* A thin C interface over libsentencepiece's C++ SentencePieceProcessor (the library is C++):
 * loading a .model file, the piece table, the special ids, and encode/decode to ids. Errors (a
 * missing or corrupt model file) die naming the file. Megatron's wrappers on top are in tokenizer.c.
 *
 * Threading: a loaded processor is immutable; encode/decode may run from several threads. */
#ifndef ZT_SENTENCEPIECE_SHIM_H
#define ZT_SENTENCEPIECE_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "data/tokenizer/tokenizer.h"

typedef struct zt_spm zt_spm;

/* Loads a SentencePiece model; dies naming `path` when it is missing or not a valid model. */
zt_spm *zt_spm_load(const char *path);
/* The same model with its normalizer's add_dummy_prefix turned off (what transformers' LlamaTokenizer does to the
 * model proto with legacy=False): no "▁" is put before the text. */
zt_spm *zt_spm_load_no_dummy_prefix(const char *path);
void zt_spm_free(zt_spm *p);
const char *zt_spm_path(const zt_spm *p);

int zt_spm_piece_size(const zt_spm *p);
/* The piece of id (0 <= id < piece_size; dies otherwise); the string lives as long as p. */
const char *zt_spm_id_to_piece(const zt_spm *p, int id);
/* The id of a piece that is in the model's piece table, or -1 (unlike PieceToId, never unk). */
int32_t zt_spm_piece_to_id_exact(const zt_spm *p, const char *piece);
int zt_spm_unk_id(const zt_spm *p);
int zt_spm_bos_id(const zt_spm *p); /* -1 when the model has none */
int zt_spm_eos_id(const zt_spm *p);
int zt_spm_pad_id(const zt_spm *p);

/* Appends EncodeAsIds(text[0..len)) to out (text must be valid UTF-8). */
void zt_spm_encode(const zt_spm *p, const char *text, size_t len, zt_ids *out);
/* DecodeIds(ids[0..n)) as a malloc'd NUL-terminated string; ids must be in [0, piece_size). */
char *zt_spm_decode(const zt_spm *p, const int32_t *ids, size_t n, size_t *len_out);
/* DecodePieces(pieces[0..n)): the same for piece strings (a string that is no piece is written as it is). */
char *zt_spm_decode_pieces(const zt_spm *p, const char *const *pieces, size_t n, size_t *len_out);

#ifdef __cplusplus
}
#endif

#endif
