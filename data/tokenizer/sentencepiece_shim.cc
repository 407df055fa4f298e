// C wrapper (extern "C") over sentencepiece::SentencePieceProcessor for tokenizer.c and hf_tokenizer.c: load
// (optionally without the dummy prefix), piece table, special ids, EncodeAsIds / DecodeIds / DecodePieces. Every
// failure dies through zt_fatal naming the file.
#include "data/tokenizer/sentencepiece_shim.h"

#include <sentencepiece_processor.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

extern "C" {
#include "runtime/base/error.h"
}

struct zt_spm {
  sentencepiece::SentencePieceProcessor proc;
  std::string path;
};

static zt_spm *spm_load(const char *path, bool no_dummy_prefix) {
  zt_spm *p = new (std::nothrow) zt_spm;
  if (!p) zt_fatal("--tokenizer-model", "out of memory loading %s", path);
  p->path = path;
  FILE *f = std::fopen(path, "rb");
  if (!f) zt_fatal("--tokenizer-model", "cannot open SentencePiece model %s", path);
  std::string proto;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) proto.append(buf, got);
  std::fclose(f);
  if (no_dummy_prefix) {
    /* Protocol buffers merge repeated occurrences of an embedded message and keep the last value of a scalar: a
     * second normalizer_spec (ModelProto field 3) holding only add_dummy_prefix (NormalizerSpec field 3) = false,
     * appended to the serialized model, is the proto's MergeFrom of that one field. */
    static const char merge[] = {0x1A, 0x02, 0x18, 0x00};
    proto.append(merge, sizeof merge);
  }
  sentencepiece::util::Status st = p->proc.LoadFromSerializedProto(proto);
  if (!st.ok())
    zt_fatal("--tokenizer-model", "%s is not a valid SentencePiece model: %s", path, st.ToString().c_str());
  if (p->proc.GetPieceSize() <= 0) zt_fatal("--tokenizer-model", "%s: the model has no pieces", path);
  return p;
}

extern "C" zt_spm *zt_spm_load(const char *path) { return spm_load(path, false); }
extern "C" zt_spm *zt_spm_load_no_dummy_prefix(const char *path) { return spm_load(path, true); }

extern "C" void zt_spm_free(zt_spm *p) { delete p; }
extern "C" const char *zt_spm_path(const zt_spm *p) { return p->path.c_str(); }
extern "C" int zt_spm_piece_size(const zt_spm *p) { return p->proc.GetPieceSize(); }

extern "C" const char *zt_spm_id_to_piece(const zt_spm *p, int id) {
  if (id < 0 || id >= p->proc.GetPieceSize())
    zt_fatal("SentencePiece", "%s: piece id %d is outside [0, %d)", p->path.c_str(), id, p->proc.GetPieceSize());
  return p->proc.IdToPiece(id).c_str();
}

extern "C" int32_t zt_spm_piece_to_id_exact(const zt_spm *p, const char *piece) {
  int id = p->proc.PieceToId(piece);
  if (id < 0 || id >= p->proc.GetPieceSize() || p->proc.IdToPiece(id) != piece) return -1;
  return id;
}

extern "C" int zt_spm_unk_id(const zt_spm *p) { return p->proc.unk_id(); }
extern "C" int zt_spm_bos_id(const zt_spm *p) { return p->proc.bos_id(); }
extern "C" int zt_spm_eos_id(const zt_spm *p) { return p->proc.eos_id(); }
extern "C" int zt_spm_pad_id(const zt_spm *p) { return p->proc.pad_id(); }

extern "C" void zt_spm_encode(const zt_spm *p, const char *text, size_t len, zt_ids *out) {
  if (len == 0) return;
  std::vector<int> ids;
  sentencepiece::util::Status st = p->proc.Encode(absl::string_view(text, len), &ids);
  if (!st.ok())
    zt_fatal("SentencePiece", "%s: encoding %zu bytes failed: %s", p->path.c_str(), len, st.ToString().c_str());
  for (int id : ids) zt_ids_push(out, id);
}

static char *c_string(const std::string &text, size_t *len_out) {
  char *s = static_cast<char *>(zt_malloc(text.size() + 1, "SentencePiece decode"));
  std::memcpy(s, text.data(), text.size());
  s[text.size()] = 0;
  if (len_out) *len_out = text.size();
  return s;
}

extern "C" char *zt_spm_decode_pieces(const zt_spm *p, const char *const *pieces, size_t n, size_t *len_out) {
  std::vector<std::string> v(pieces, pieces + n);
  std::string text;
  sentencepiece::util::Status st = p->proc.Decode(v, &text);
  if (!st.ok())
    zt_fatal("SentencePiece", "%s: decoding %zu pieces failed: %s", p->path.c_str(), n, st.ToString().c_str());
  return c_string(text, len_out);
}

extern "C" char *zt_spm_decode(const zt_spm *p, const int32_t *ids, size_t n, size_t *len_out) {
  std::vector<int> v(ids, ids + n);
  int size = p->proc.GetPieceSize();
  for (size_t i = 0; i < n; i++)
    if (v[i] < 0 || v[i] >= size)
      zt_fatal("SentencePiece", "%s: id %d (position %zu) is outside the model's pieces [0, %d)", p->path.c_str(), v[i],
               i, size);
  std::string text;
  sentencepiece::util::Status st = p->proc.Decode(v, &text);
  if (!st.ok()) zt_fatal("SentencePiece", "%s: decoding %zu ids failed: %s", p->path.c_str(), n, st.ToString().c_str());
  return c_string(text, len_out);
}
