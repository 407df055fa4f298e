/* ds_config.json loading and strict validation (see train/ds_config.h and docs/ds_config.md):
 * hjson-style comments and trailing commas are blanked out before cJSON parses the text (so line and
 * column stay right), duplicate keys are refused at every level, every member is checked against the
 * key table of train/ds_config_schema.c (unknown keys with a suggestion, types, ranges, "lands with"
 * refusals of unimplemented features), then the typed fields are filled. */
#define _POSIX_C_SOURCE 200809L /* strtok_r */
#include "train/ds_config.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/edit_distance.h"
#include "runtime/base/error.h"
#include "runtime/base/file.h"

#define WHAT "ds_config"

static void ds_fail(const zt_ds_config *c, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void ds_fail(const zt_ds_config *c, const char *fmt, ...) {
  char msg[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  zt_fatal(WHAT, "%s: %s", c->path, msg);
}

/* Shortest decimal that reads back as v; integral values without exponent. */
static const char *fmt_num(double v, char *buf, size_t n) {
  if (isnan(v)) {
    snprintf(buf, n, "None");
  } else if (v == floor(v) && fabs(v) < 1e16) {
    snprintf(buf, n, "%.0f", v);
  } else {
    for (int p = 1; p <= 17; p++) {
      snprintf(buf, n, "%.*g", p, v);
      if (strtod(buf, NULL) == v) break;
    }
  }
  return buf;
}

/* JSON text of an item for messages (numbers via fmt_num). */
static void fmt_item(const cJSON *it, char *buf, size_t n) {
  if (cJSON_IsNumber(it)) {
    fmt_num(it->valuedouble, buf, n);
    return;
  }
  char *s = cJSON_PrintUnformatted(it);
  snprintf(buf, n, "%s", s ? s : "?");
  if (strlen(buf) == n - 1 && n > 4) strcpy(buf + n - 4, "...");
  free(s);
}

/* ---------------------------------------------------------------------------------------------- */
/* Pre-parse: hjson comments (// # and block) and trailing commas become spaces, outside strings. */

static void strip_hjson(char *t) {
  size_t n = strlen(t);
  bool in_str = false;
  for (size_t i = 0; i < n; i++) {
    char ch = t[i];
    if (in_str) {
      if (ch == '\\' && i + 1 < n) i++;
      else if (ch == '"') in_str = false;
      continue;
    }
    if (ch == '"') {
      in_str = true;
    } else if (ch == '#' || (ch == '/' && t[i + 1] == '/')) {
      while (i < n && t[i] != '\n') t[i++] = ' ';
    } else if (ch == '/' && t[i + 1] == '*') {
      size_t j = i;
      while (j < n && !(t[j] == '*' && j + 1 < n && t[j + 1] == '/' && j >= i + 2)) j++;
      size_t end = j < n ? j + 2 : n;
      for (size_t k = i; k < end; k++)
        if (t[k] != '\n') t[k] = ' ';
      i = end - 1;
    } else if (ch == ',') {
      size_t j = i + 1;
      /* look past blanks and comments for the closing bracket */
      for (;;) {
        while (j < n && isspace((unsigned char)t[j])) j++;
        if (j < n && (t[j] == '#' || (t[j] == '/' && t[j + 1] == '/'))) {
          while (j < n && t[j] != '\n') j++;
        } else if (j + 1 < n && t[j] == '/' && t[j + 1] == '*') {
          j += 2;
          while (j + 1 < n && !(t[j] == '*' && t[j + 1] == '/')) j++;
          j += 2;
        } else {
          break;
        }
      }
      if (j < n && (t[j] == '}' || t[j] == ']')) t[i] = ' ';
    }
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* Duplicate keys (DeepSpeed's dict_raise_error_on_duplicate_keys), at every level, in time linear in the
 * number of members: each object's keys go into an open-addressing hash table (a 100k-key object took 32 s
 * with the pairwise comparison). Duplicated keys are listed once each, in the order of first appearance. */

typedef struct {
  const cJSON *first; /* the member that first used this key; NULL: empty slot */
  bool dup;
} dup_slot;

static uint64_t key_hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The slot of key s in a table of mask + 1 (a power of two) slots: its entry, or the empty slot to use. */
static dup_slot *dup_find(dup_slot *t, size_t mask, const char *s) {
  for (size_t i = (size_t)key_hash(s) & mask;; i = (i + 1) & mask)
    if (!t[i].first || strcmp(t[i].first->string, s) == 0) return &t[i];
}

static void check_duplicates(const zt_ds_config *c, const cJSON *obj, const char *path) {
  if (cJSON_IsObject(obj) && obj->child) {
    size_t n = 0;
    for (const cJSON *a = obj->child; a; a = a->next) n++;
    size_t cap = 4;
    while (cap < 2 * n) cap *= 2; /* load factor <= 1/2 */
    dup_slot *t = zt_calloc(cap, sizeof *t, "ds_config duplicate-key table");
    for (const cJSON *a = obj->child; a; a = a->next) {
      dup_slot *sl = dup_find(t, cap - 1, a->string);
      if (sl->first) sl->dup = true;
      else sl->first = a;
    }
    char dups[2048] = "";
    for (const cJSON *a = obj->child; a; a = a->next) {
      const dup_slot *sl = dup_find(t, cap - 1, a->string);
      if (sl->first == a && sl->dup) {
        size_t l = strlen(dups);
        snprintf(dups + l, sizeof dups - l, "%s'%s'", l ? ", " : "", a->string);
      }
    }
    free(t);
    if (dups[0]) {
      if (path[0]) ds_fail(c, "Duplicate keys in DeepSpeed config: [%s] (in \"%s\")", dups, path);
      ds_fail(c, "Duplicate keys in DeepSpeed config: [%s]", dups);
    }
  }
  if (cJSON_IsObject(obj) || cJSON_IsArray(obj)) {
    int idx = 0;
    for (const cJSON *a = obj->child; a; a = a->next, idx++) {
      char sub[1024];
      if (cJSON_IsObject(obj)) snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", a->string);
      else snprintf(sub, sizeof sub, "%s[%d]", path, idx);
      check_duplicates(c, a, sub);
    }
  }
}

/* A JSON string may spell a NUL character as \u0000; cJSON's strings end at it ("Adam\u0000W" would read as
 * "Adam"), so such a string or key is refused here, on the text, with its line and column. */
static void check_nul_escapes(const zt_ds_config *c, const char *t) {
  bool in_str = false;
  int line = 1, col = 1;
  for (size_t i = 0; t[i]; i++, col++) {
    const char ch = t[i];
    if (ch == '\n') {
      line++;
      col = 0;
      continue;
    }
    if (!in_str) {
      if (ch == '"') in_str = true;
      continue;
    }
    if (ch == '"') {
      in_str = false;
    } else if (ch == '\\' && t[i + 1]) {
      if (t[i + 1] == 'u' && strncmp(t + i + 2, "0000", 4) == 0)
        ds_fail(c, "line %d column %d: a string contains the escape \\u0000 (a NUL character); no DeepSpeed key or "
                   "value can hold one (it would cut the string short)", line, col);
      i++;
      col++;
    }
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* Schema lookup: dotted paths, "*" matches one member name. */

static bool path_match(const char *pat, const char *path) {
  while (*pat && *path) {
    if (pat[0] == '*' && (pat[1] == '.' || pat[1] == 0)) {
      while (*path && *path != '.') path++;
      pat++;
    } else {
      if (*pat != *path) return false;
      pat++;
      path++;
    }
  }
  return *pat == 0 && *path == 0;
}

static const zt_ds_key *schema_find(const char *path) {
  for (int i = 0; i < zt_ds_schema_count; i++)
    if (path_match(zt_ds_schema[i].path, path)) return &zt_ds_schema[i];
  return NULL;
}

/* parent pattern of a schema path: everything before the last '.' */
static bool schema_is_child_of(const zt_ds_key *k, const char *parent, const char **last) {
  const char *dot = strrchr(k->path, '.');
  char pp[1024];
  if (!dot) {
    *last = k->path;
    return parent[0] == 0;
  }
  size_t l = (size_t)(dot - k->path);
  if (l >= sizeof pp) return false;
  memcpy(pp, k->path, l);
  pp[l] = 0;
  *last = dot + 1;
  return parent[0] && path_match(pp, parent);
}

static bool is_auto(const cJSON *it) { return cJSON_IsString(it) && strcmp(it->valuestring, "auto") == 0; }

static cJSON *parse_default(const zt_ds_key *k) { return k->def ? cJSON_Parse(k->def) : NULL; }

/* Whether a value counts as the default for the "lands with" rule: null and "auto" always do. */
static bool is_default_value(const zt_ds_key *k, const cJSON *v) {
  if (cJSON_IsNull(v) || is_auto(v)) return true;
  cJSON *d = parse_default(k);
  bool eq = d && cJSON_Compare(v, d, true);
  if (d && !eq && cJSON_IsNumber(v) && cJSON_IsNumber(d)) eq = v->valuedouble == d->valuedouble;
  cJSON_Delete(d);
  return eq;
}

static const char *type_name(const zt_ds_key *k) {
  switch (k->type) {
    case ZT_DS_BOOL: return "a boolean (true or false)";
    case ZT_DS_INT: return "an integer";
    case ZT_DS_FLOAT: return "a number";
    case ZT_DS_STRING: return "a string";
    case ZT_DS_ENUM: return "one of the strings";
    case ZT_DS_OBJECT: return (k->flags & ZT_DS_BOOLOBJ) ? "an object (or a boolean)" : "an object";
    case ZT_DS_LIST: return "a list";
    default: return "a value";
  }
}

static bool enum_has(const char *choices, const char *s) {
  size_t l = strlen(s);
  for (const char *p = choices; *p;) {
    const char *e = strchr(p, '|');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == l && strncmp(p, s, n) == 0) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

static void check_value(const zt_ds_config *c, const zt_ds_key *k, const cJSON *v, const char *path) {
  char val[256];
  fmt_item(v, val, sizeof val);
  if (is_auto(v)) {
    if (k->flags & ZT_DS_AUTO) return;
    if (k->type != ZT_DS_STRING && k->type != ZT_DS_ANY)
      ds_fail(c, "%s does not accept \"auto\" (it has no matching Megatron flag); give %s", path, type_name(k));
  }
  if (cJSON_IsNull(v)) {
    if (k->flags & ZT_DS_NULL) return;
    ds_fail(c, "%s must be %s%s%s, got null", path, type_name(k), k->choices ? " " : "", k->choices ? k->choices : "");
  }
  bool ok = true;
  switch (k->type) {
    case ZT_DS_BOOL: ok = cJSON_IsBool(v); break;
    case ZT_DS_INT:
    case ZT_DS_FLOAT: ok = cJSON_IsNumber(v); break;
    case ZT_DS_STRING: ok = cJSON_IsString(v); break;
    case ZT_DS_ENUM: ok = cJSON_IsString(v); break;
    case ZT_DS_OBJECT: ok = cJSON_IsObject(v) || ((k->flags & ZT_DS_BOOLOBJ) && cJSON_IsBool(v)); break;
    case ZT_DS_LIST: ok = cJSON_IsArray(v); break;
    default: break;
  }
  if (!ok) {
    if (k->type == ZT_DS_ENUM)
      ds_fail(c, "%s must be one of the strings %s, got %s", path, k->choices, val);
    ds_fail(c, "%s must be %s, got %s", path, type_name(k), val);
  }
  if (k->type == ZT_DS_ENUM && !enum_has(k->choices, v->valuestring))
    ds_fail(c, "%s must be one of %s, got %s", path, k->choices, val);
  if (k->type == ZT_DS_INT) {
    const double d = v->valuedouble;
    if (d != floor(d) || fabs(d) > 9.3e18) ds_fail(c, "%s must be an integer, got %s", path, val);
  }
  if ((k->type == ZT_DS_INT || k->type == ZT_DS_FLOAT) && k->min <= k->max) {
    double d = v->valuedouble;
    if (d < k->min || d > k->max) {
      char lo[64], hi[64];
      if (k->max >= 9e18) ds_fail(c, "%s must be >= %s, got %s", path, fmt_num(k->min, lo, sizeof lo), val);
      ds_fail(c, "%s must be in [%s, %s], got %s", path, fmt_num(k->min, lo, sizeof lo),
              fmt_num(k->max, hi, sizeof hi), val);
    }
  }
  if (k->type == ZT_DS_INT) {
    double lo, hi;
    zt_ds_key_int_range(k, &lo, &hi);
    if (v->valuedouble < lo || v->valuedouble > hi) {
      char l[64], h[64];
      ds_fail(c, "%s %s is out of range: it must be an integer in [%s, %s] (%s)", path, val, fmt_num(lo, l, sizeof l),
              fmt_num(hi, h, sizeof h), (k->flags & ZT_DS_I64) ? "a 64-bit count" : "zerotron holds it in a 32-bit int");
    }
  }
}

void zt_ds_key_int_range(const zt_ds_key *k, double *lo, double *hi) {
  /* 64-bit counts (element counts, step numbers held in doubles or int64) keep the table's range, at most
   * +-9.2e18; every other integer lands in a C int, so it must fit in 32 bits instead of wrapping */
  const bool wide = (k->flags & ZT_DS_I64) != 0;
  const double lo_lim = wide ? -9.2e18 : -2147483648.0, hi_lim = wide ? 9.2e18 : 2147483647.0;
  *lo = k->min <= k->max ? fmax(k->min, lo_lim) : lo_lim;
  *hi = k->min <= k->max ? fmin(k->max, hi_lim) : hi_lim;
}

static void unknown_key(const zt_ds_config *c, const char *parent, const char *key) {
  const char *best = NULL;
  int bestd = 1 << 30;
  for (int i = 0; i < zt_ds_schema_count; i++) {
    const char *last;
    if (!schema_is_child_of(&zt_ds_schema[i], parent, &last) || strcmp(last, "*") == 0) continue;
    int d = zt_edit_distance(key, last);
    if (d < bestd) {
      bestd = d;
      best = last;
    }
  }
  int len = (int)strlen(key);
  if (!strcmp(parent, "aio") && !strcmp(key, "thread_count"))
    ds_fail(c, "unknown key \"aio.thread_count\" (did you mean \"aio.intra_op_parallelism\"? DeepSpeed's docs still "
               "show the old name, its parser reads only intra_op_parallelism)");
  const char *sep = parent[0] ? "." : "";
  if (best && (bestd <= 2 || bestd * 3 <= len))
    ds_fail(c, "unknown key \"%s%s%s\" (did you mean \"%s%s%s\"?)", parent, sep, key, parent, sep, best);
  ds_fail(c, "unknown key \"%s%s%s\"", parent, sep, key);
}

static void refuse_lands(const zt_ds_config *c, const char *path, const cJSON *v, const char *lands) {
  char val[256];
  if (cJSON_IsObject(v) || !v) ds_fail(c, "%s is not supported yet: lands with %s", path, lands);
  fmt_item(v, val, sizeof val);
  ds_fail(c, "%s %s is not supported yet: lands with %s", path, val, lands);
}

/* Whether the block at path is enabled ("enabled" given, else its default); "auto" counts as false. */
static bool block_enabled(const cJSON *obj, const char *path) {
  char ep[1100];
  snprintf(ep, sizeof ep, "%s.enabled", path);
  const zt_ds_key *k = schema_find(ep);
  if (!k) return true;
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(obj, "enabled");
  if (e) return cJSON_IsTrue(e);
  return k->def && strcmp(k->def, "true") == 0;
}

static void walk(const zt_ds_config *c, const cJSON *obj, const char *path, bool active, bool opaque) {
  for (const cJSON *it = obj->child; it; it = it->next) {
    char sub[1024];
    snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", it->string);
    const zt_ds_key *k = schema_find(sub);
    if (!k) {
      if (opaque) continue;
      unknown_key(c, path, it->string);
    }
    check_value(c, k, it, sub);
    if (k->alias_of) {
      const char *target = k->alias_of;
      if (cJSON_GetObjectItemCaseSensitive(obj, target))
        ds_fail(c, "Cannot provide deprecated parameter '%s' and replacing parameter '%s' together", it->string,
                target);
    }
    bool is_obj = cJSON_IsObject(it);
    if (active && k->lands && !(k->flags & ZT_DS_INERT)) {
      if (is_obj ? (k->flags & ZT_DS_PRESENT) != 0 : !is_default_value(k, it)) refuse_lands(c, sub, it, k->lands);
    }
    if (is_obj && k->type == ZT_DS_OBJECT)
      walk(c, it, sub, active && block_enabled(it, sub), (k->flags & ZT_DS_OPAQUE) != 0);
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* Typed access. */

static cJSON *get_path(const zt_ds_config *c, const char *path) {
  cJSON *cur = (cJSON *)c->json;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", path);
  char *save = NULL;
  for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save)) {
    if (!cJSON_IsObject(cur)) return NULL;
    cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
  }
  return cur;
}

/* The item of a key or of its deprecated alias. */
static cJSON *get_key(const zt_ds_config *c, const char *path) {
  cJSON *it = get_path(c, path);
  if (it) return it;
  const char *dot = strrchr(path, '.');
  const char *last = dot ? dot + 1 : path;
  size_t plen = dot ? (size_t)(dot - path) : 0;
  for (int i = 0; i < zt_ds_schema_count; i++) {
    const zt_ds_key *k = &zt_ds_schema[i];
    if (!k->alias_of || strcmp(k->alias_of, last) != 0) continue;
    const char *kd = strrchr(k->path, '.');
    size_t klen = kd ? (size_t)(kd - k->path) : 0;
    if (klen == plen && strncmp(k->path, path, plen) == 0) {
      it = get_path(c, k->path);
      if (it) return it;
    }
  }
  return NULL;
}

static double default_num(const char *path) {
  const zt_ds_key *k = schema_find(path);
  if (!k || !k->def) return NAN;
  cJSON *d = cJSON_Parse(k->def);
  double v = cJSON_IsNumber(d) ? d->valuedouble : NAN;
  cJSON_Delete(d);
  return v;
}

static zt_ds_num get_num(const zt_ds_config *c, const char *path) {
  zt_ds_num n = {false, false, default_num(path)};
  const cJSON *it = get_key(c, path);
  if (is_auto(it)) n.is_auto = true;
  else if (cJSON_IsNumber(it)) {
    n.given = true;
    n.value = it->valuedouble;
  }
  return n;
}

static bool get_bool(const zt_ds_config *c, const char *path) {
  const cJSON *it = get_key(c, path);
  if (cJSON_IsBool(it)) return cJSON_IsTrue(it);
  const zt_ds_key *k = schema_find(path);
  return k && k->def && strcmp(k->def, "true") == 0;
}

static void get_str(const zt_ds_config *c, const char *path, char *dst, size_t n) {
  const cJSON *it = get_key(c, path);
  if (cJSON_IsString(it)) {
    snprintf(dst, n, "%s", it->valuestring);
    return;
  }
  const zt_ds_key *k = schema_find(path);
  cJSON *d = k && k->def ? cJSON_Parse(k->def) : NULL;
  snprintf(dst, n, "%s", cJSON_IsString(d) ? d->valuestring : "");
  cJSON_Delete(d);
}

/* Writes a resolved number into the tree, creating the parents (for the print). */
static void set_num(zt_ds_config *c, const char *path, double v) {
  cJSON *cur = (cJSON *)c->json;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", path);
  char *save = NULL;
  char *tok = strtok_r(buf, ".", &save);
  while (tok) {
    char *next = strtok_r(NULL, ".", &save);
    if (!next) {
      cJSON *it = cJSON_GetObjectItemCaseSensitive(cur, tok);
      if (it) cJSON_ReplaceItemInObjectCaseSensitive(cur, tok, cJSON_CreateNumber(v));
      else cJSON_AddNumberToObject(cur, tok, v);
      return;
    }
    cJSON *o = cJSON_GetObjectItemCaseSensitive(cur, tok);
    if (!cJSON_IsObject(o)) {
      if (o) cJSON_DeleteItemFromObjectCaseSensitive(cur, tok);
      o = cJSON_AddObjectToObject(cur, tok);
    }
    cur = o;
    tok = next;
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* Optimizer and scheduler blocks: type names and per-type params. */

static const char *const kDsOptimizers[] = {"adagrad", "adam", "adamw", "lamb", "onebitadam", "onebitlamb",
                                            "zerooneadam", "muadam", "muadamw", "musgd", "lion"};

static void check_optimizer(zt_ds_config *c) {
  cJSON *opt = get_path(c, "optimizer");
  if (!opt) return;
  if (!cJSON_IsObject(opt)) return; /* the walk reports the type */
  cJSON *params = cJSON_GetObjectItemCaseSensitive(opt, "params");
  if (cJSON_IsObject(params) && cJSON_GetObjectItemCaseSensitive(params, "max_grad_norm"))
    ds_fail(c, "'max_grad_norm' is not supported as an optimizer parameter, please switch to using the deepspeed "
               "parameter 'gradient_clipping' see: https://www.deepspeed.ai/docs/config-json/#gradient-clipping for "
               "more details");
  cJSON *type = cJSON_GetObjectItemCaseSensitive(opt, "type");
  if (!type) ds_fail(c, "optimizer.type is required in an \"optimizer\" block (adam, adamw or lamb)");
  if (!cJSON_IsString(type)) {
    char v[128];
    fmt_item(type, v, sizeof v);
    ds_fail(c, "optimizer.type must be a string, got %s", v);
  }
  char low[64];
  snprintf(low, sizeof low, "%s", type->valuestring);
  for (char *p = low; *p; p++) *p = (char)tolower((unsigned char)*p);
  bool ds_name = false;
  for (size_t i = 0; i < sizeof kDsOptimizers / sizeof kDsOptimizers[0]; i++)
    if (strcmp(low, kDsOptimizers[i]) == 0) ds_name = true;
  if (!ds_name)
    ds_fail(c, "optimizer.type \"%s\" is not a DeepSpeed optimizer (DeepSpeed would look it up in torch.optim): "
               "zerotron implements adam, adamw and lamb", type->valuestring);
  if (!strcmp(low, "onebitadam") || !strcmp(low, "onebitlamb") || !strcmp(low, "zerooneadam"))
    ds_fail(c, "optimizer.type \"%s\" is not supported yet: lands with the 1-bit optimizer work", type->valuestring);
  if (strcmp(low, "adam") && strcmp(low, "adamw") && strcmp(low, "lamb"))
    ds_fail(c, "optimizer.type \"%s\" is not supported yet: lands with the optimizer work (zerotron implements "
               "adam, adamw and lamb)", type->valuestring);
  memcpy(c->optimizer_type, low, strlen(low) + 1); /* one of adam, adamw, lamb */
  if (cJSON_IsObject(params)) {
    bool lamb = strcmp(low, "lamb") == 0;
    for (cJSON *p = params->child; p; p = p->next) {
      const char *n = p->string;
      bool adam_only = !strcmp(n, "adam_w_mode") || !strcmp(n, "torch_adam") || !strcmp(n, "amsgrad");
      bool lamb_only = !strcmp(n, "max_coeff") || !strcmp(n, "min_coeff") || !strcmp(n, "eps_inside_sqrt");
      if ((lamb && adam_only) || (!lamb && lamb_only))
        ds_fail(c, "optimizer.params.%s is not a parameter of optimizer \"%s\" (%s only)", n, type->valuestring,
                lamb ? "adam/adamw" : "lamb");
    }
    cJSON *betas = cJSON_GetObjectItemCaseSensitive(params, "betas");
    if (betas && !is_auto(betas)) {
      char v[256];
      fmt_item(betas, v, sizeof v);
      bool ok = cJSON_GetArraySize(betas) == 2;
      for (cJSON *b = betas->child; b && ok; b = b->next)
        ok = cJSON_IsNumber(b) && b->valuedouble >= 0 && b->valuedouble < 1;
      if (!ok) ds_fail(c, "optimizer.params.betas must be a list of two numbers in [0, 1), got %s", v);
    }
  }
}

typedef struct {
  const char *type;
  const char *params; /* space-separated, with spaces around */
  const char *required;
} sched_spec;

static const sched_spec kSchedulers[] = {
  {"LRRangeTest", " lr_range_test_min_lr lr_range_test_step_size lr_range_test_step_rate lr_range_test_staircase "
                  "last_batch_iteration ", ""},
  {"OneCycle", " cycle_min_lr cycle_max_lr decay_lr_rate cycle_first_step_size cycle_second_step_size "
               "cycle_first_stair_count cycle_second_stair_count decay_step_size cycle_momentum cycle_min_mom "
               "cycle_max_mom decay_mom_rate last_batch_iteration ", "cycle_min_lr cycle_max_lr"},
  {"WarmupLR", " warmup_min_lr warmup_max_lr warmup_num_steps warmup_type last_batch_iteration ", ""},
  {"WarmupDecayLR", " warmup_min_lr warmup_max_lr warmup_num_steps warmup_type total_num_steps "
                    "last_batch_iteration ", "total_num_steps"},
  {"WarmupCosineLR", " total_num_steps warmup_min_ratio warmup_num_steps cos_min_ratio warmup_type "
                     "last_batch_iteration ", "total_num_steps"},
};

static void check_scheduler(zt_ds_config *c) {
  cJSON *s = get_path(c, "scheduler");
  if (!cJSON_IsObject(s)) return;
  cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
  if (!type) ds_fail(c, "scheduler.type is required in a \"scheduler\" block");
  if (!cJSON_IsString(type)) {
    char v[128];
    fmt_item(type, v, sizeof v);
    ds_fail(c, "scheduler.type must be a string, got %s", v);
  }
  const sched_spec *spec = NULL;
  for (size_t i = 0; i < sizeof kSchedulers / sizeof kSchedulers[0]; i++)
    if (strcmp(type->valuestring, kSchedulers[i].type) == 0) spec = &kSchedulers[i];
  if (!spec)
    ds_fail(c, "scheduler.type \"%s\" is not supported yet: lands with the scheduler work (zerotron implements "
               "LRRangeTest, OneCycle, WarmupLR, WarmupDecayLR, WarmupCosineLR; torch.optim.lr_scheduler names are "
               "not)", type->valuestring);
  snprintf(c->scheduler_type, sizeof c->scheduler_type, "%s", spec->type);
  cJSON *params = cJSON_GetObjectItemCaseSensitive(s, "params");
  if (cJSON_IsObject(params))
    for (cJSON *p = params->child; p; p = p->next) {
      char key[256], pad[256];
      snprintf(key, sizeof key, "scheduler.params.%s", p->string);
      snprintf(pad, sizeof pad, " %s ", p->string);
      if (schema_find(key) && !strstr(spec->params, pad))
        ds_fail(c, "scheduler.params.%s is not a parameter of scheduler \"%s\" (its parameters:%s)", p->string,
                spec->type, spec->params);
    }
  char req[256];
  snprintf(req, sizeof req, "%s", spec->required);
  char *save = NULL;
  for (char *tok = strtok_r(req, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
    if (!cJSON_IsObject(params) || !cJSON_GetObjectItemCaseSensitive(params, tok))
      ds_fail(c, "scheduler.params.%s is required by scheduler \"%s\"", tok, spec->type);
  }
}

/* ---------------------------------------------------------------------------------------------- */

/* A sparse_attention list of block indices into dst (at most ZT_SPARSE_MAX_LIST integers); null: n = -1. */
static void read_int_list(const zt_ds_config *c, const char *key, int *dst, int *n) {
  char path[96];
  snprintf(path, sizeof path, "sparse_attention.%s", key);
  const cJSON *l = get_key(c, path);
  if (!l || cJSON_IsNull(l)) {
    *n = -1;
    return;
  }
  if (!cJSON_IsArray(l)) ds_fail(c, "%s must be a list of block indices", path);
  const int len = cJSON_GetArraySize(l);
  if (len > ZT_SPARSE_MAX_LIST) ds_fail(c, "%s has %d entries, at most %d are supported", path, len, ZT_SPARSE_MAX_LIST);
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, l) {
    char v[64];
    fmt_item(it, v, sizeof v);
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || fabs(it->valuedouble) > 2147483647.0)
      ds_fail(c, "%s[%d] must be an integer, got %s", path, i, v);
    dst[i++] = (int)it->valuedouble;
  }
  *n = len;
}

/* DeepSpeed's get_sparse_attention: the mode's own keys over its defaults; a key the mode does not read is
 * ignored, as DeepSpeed does, with a warning. */
static void read_sparse_attention(zt_ds_config *c) {
  c->sparse_attention = get_path(c, "sparse_attention") != NULL;
  if (!c->sparse_attention) return;
  char mode[16];
  get_str(c, "sparse_attention.mode", mode, sizeof mode);
  static const char *const modes[] = {"dense", "fixed", "variable", "bigbird", "bslongformer"};
  /* the keys each mode reads, besides mode and block */
  static const char *const reads[5] = {
      "", "different_layout_per_head num_local_blocks num_global_blocks attention horizontal_global_attention "
          "num_different_global_patterns",
      "different_layout_per_head num_random_blocks local_window_blocks global_block_indices "
          "global_block_end_indices attention horizontal_global_attention",
      "different_layout_per_head num_random_blocks num_sliding_window_blocks num_global_blocks",
      "different_layout_per_head num_sliding_window_blocks global_block_indices global_block_end_indices"};
  int m = 0;
  while (m < 5 && strcmp(mode, modes[m]) != 0) m++; /* the schema's enum check has refused anything else */
  zt_sparsity_config *s = &c->sparse;
  zt_sparsity_config_defaults(s, (zt_sparse_mode)m);
  const cJSON *blk = get_path(c, "sparse_attention"), *it;
  cJSON_ArrayForEach(it, blk) {
    const char *k = it->string;
    if (!strcmp(k, "mode") || !strcmp(k, "block")) continue;
    const char *hit = strstr(reads[m], k);
    const size_t kl = strlen(k);
    if (!(hit && (hit == reads[m] || hit[-1] == ' ') && (hit[kl] == ' ' || hit[kl] == '\0'))) {
      zt_warn("ds_config: %s: sparse_attention.%s is not read in mode \"%s\" (DeepSpeed ignores it too)\n", c->path,
              k, mode);
      continue;
    }
    char path[96];
    snprintf(path, sizeof path, "sparse_attention.%s", k);
    if (!strcmp(k, "different_layout_per_head")) s->different_layout_per_head = get_bool(c, path);
    else if (!strcmp(k, "horizontal_global_attention")) s->horizontal_global_attention = get_bool(c, path);
    else if (!strcmp(k, "attention")) {
      char att[24];
      get_str(c, path, att, sizeof att);
      s->unidirectional = strcmp(att, "unidirectional") == 0;
    } else if (!strcmp(k, "local_window_blocks")) read_int_list(c, k, s->local_window_blocks, &s->n_local_window_blocks);
    else if (!strcmp(k, "global_block_indices")) read_int_list(c, k, s->global_block_indices, &s->n_global_block_indices);
    else if (!strcmp(k, "global_block_end_indices"))
      read_int_list(c, k, s->global_block_end_indices, &s->n_global_block_end_indices);
    else {
      const double v = get_num(c, path).value; /* the schema checked an integer in range */
      if (v > 2147483647.0) ds_fail(c, "%s must be at most 2147483647, got %.0f", path, v);
      int *dst = !strcmp(k, "num_local_blocks")                ? &s->num_local_blocks
                 : !strcmp(k, "num_global_blocks")             ? &s->num_global_blocks
                 : !strcmp(k, "num_different_global_patterns") ? &s->num_different_global_patterns
                 : !strcmp(k, "num_random_blocks")             ? &s->num_random_blocks
                                                               : &s->num_sliding_window_blocks;
      *dst = (int)v;
    }
  }
  const double b = get_num(c, "sparse_attention.block").value;
  if (b > 2147483647.0) ds_fail(c, "sparse_attention.block must be at most 2147483647, got %.0f", b);
  s->block = (int)b;
}

/* ---------------------------------------------------------------------------------------------- */

/* An integer of a curriculum block (base: "curriculum_learning", or a data-sampling metric's path) that DeepSpeed's
 * CurriculumScheduler requires (its assertion's text when missing; null is refused too: DeepSpeed would fail on it in
 * arithmetic). */
static int64_t curriculum_int(const zt_ds_config *c, const char *base, const char *key, const char *assertion) {
  char path[512];
  snprintf(path, sizeof path, "%s.%s", base, key);
  const cJSON *it = get_path(c, path);
  if (!it) ds_fail(c, "%s is missing: %s", path, assertion);
  if (!cJSON_IsNumber(it)) ds_fail(c, "%s must be an integer, got null", path); /* the schema checked the rest */
  return (int64_t)it->valuedouble;
}

/* A fixed_discrete list (difficulty or max_step) of integers. */
static int curriculum_list(const zt_ds_config *c, const char *base, const char *key, int64_t *dst, int cap) {
  char path[512], assertion[160];
  snprintf(path, sizeof path, "%s.schedule_config.%s", base, key);
  snprintf(assertion, sizeof assertion, "Curriculum learning with fixed_discrete schedule requires the schedule_config "
           "'%s'", key);
  const cJSON *l = get_path(c, path);
  if (!l) ds_fail(c, "%s is missing: %s", path, assertion);
  if (!cJSON_IsArray(l)) ds_fail(c, "%s must be a list of integers, got null", path);
  const int n = cJSON_GetArraySize(l);
  if (n == 0) ds_fail(c, "%s is empty: it needs at least one entry (DeepSpeed asserts len(%s) > 0)", path, key);
  if (n > cap) ds_fail(c, "%s has %d entries, at most %d are supported", path, n, cap);
  int i = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, l) {
    char v[64];
    fmt_item(it, v, sizeof v);
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || fabs(it->valuedouble) > 9.0e15)
      ds_fail(c, "%s[%d] must be an integer, got %s", path, i, v);
    dst[i++] = (int64_t)it->valuedouble;
  }
  return n;
}

/* The legacy curriculum_learning block as DeepSpeed's CurriculumScheduler reads it (its asserts, in its order);
 * curriculum_type seqlen only (the schema's enum), the custom schedule refused (a Python callback). */
static void read_curriculum_schedule(zt_ds_config *c, const char *base, zt_curriculum_config *cl);
static void read_curriculum(zt_ds_config *c) {
  zt_curriculum_config *cl = &c->curriculum;
  memset(cl, 0, sizeof *cl);
  const cJSON *blk = get_path(c, "curriculum_learning");
  cl->enabled = blk && get_bool(c, "curriculum_learning.enabled");
  if (!cl->enabled) return;
  read_curriculum_schedule(c, "curriculum_learning", cl);
  const cJSON *ct = get_path(c, "curriculum_learning.curriculum_type");
  if (!cJSON_IsString(ct))
    ds_fail(c, "curriculum_learning.curriculum_type is %s: give \"seqlen\" (DeepSpeed's engine reads it at the first "
               "forward and fails with a KeyError)", ct ? "null" : "missing");
}

/* A CurriculumScheduler's configuration under base: min/max_difficulty, schedule_type and its schedule_config. */
static void read_curriculum_schedule(zt_ds_config *c, const char *base, zt_curriculum_config *cl) {
  cl->min_difficulty = curriculum_int(c, base, "min_difficulty", "Curriculum learning requires the config "
                                      "'min_difficulty'");
  cl->max_difficulty = curriculum_int(c, base, "max_difficulty", "Curriculum learning requires the config "
                                      "'max_difficulty'");
  char path[512];
  snprintf(path, sizeof path, "%s.schedule_type", base);
  const cJSON *st = get_path(c, path);
  if (!st) ds_fail(c, "%s is missing: Curriculum learning requires the config 'schedule_type'", path);
  if (!cJSON_IsString(st)) ds_fail(c, "%s must be one of the strings fixed_linear|fixed_root|fixed_discrete, got null",
                                   path);
  const char *type = st->valuestring;
  if (!strcmp(type, "custom"))
    ds_fail(c, "%s \"custom\" is not supported: DeepSpeed takes its schedule from a Python function "
               "(engine.set_custom_curriculum_learning_schedule); use fixed_linear, fixed_root or fixed_discrete",
            path);
  if (!strcmp(type, "fixed_discrete")) {
    cl->type = ZT_CURRICULUM_FIXED_DISCRETE;
    cl->n_difficulty = curriculum_list(c, base, "difficulty", cl->difficulty, ZT_CURRICULUM_MAX_LIST);
    const int nm = curriculum_list(c, base, "max_step", cl->max_step, ZT_CURRICULUM_MAX_LIST - 1);
    if (cl->n_difficulty != nm + 1)
      ds_fail(c, "%s.schedule_config.difficulty has %d entries and max_step %d: difficulty needs one more (the last "
                 "difficulty holds after the last max_step; DeepSpeed asserts len(difficulty) == len(max_step) + 1)",
              base, cl->n_difficulty, nm);
    return;
  }
  cl->type = !strcmp(type, "fixed_root") ? ZT_CURRICULUM_FIXED_ROOT : ZT_CURRICULUM_FIXED_LINEAR;
  char req[160];
  snprintf(req, sizeof req, "Curriculum learning with %s schedule requires the schedule_config 'total_curriculum_step'",
           type);
  cl->total_curriculum_step = curriculum_int(c, base, "schedule_config.total_curriculum_step", req);
  snprintf(req, sizeof req, "Curriculum learning with %s schedule requires the schedule_config 'difficulty_step'", type);
  cl->difficulty_step = curriculum_int(c, base, "schedule_config.difficulty_step", req);
  cl->root_degree = 1;
  if (cl->type == ZT_CURRICULUM_FIXED_ROOT) {
    snprintf(req, sizeof req, "Curriculum learning with fixed_root schedule requires the schedule_config 'root_degree'");
    cl->root_degree = curriculum_int(c, base, "schedule_config.root_degree", req);
  }
  if (cl->difficulty_step % 8 != 0)
    zt_warn("ds_config: %s: %s.schedule_config.difficulty_step %lld: When using seqlen metric, the "
            "difficulty_step for curriculum learning has to be multiple of 8 (for FP16 data) or 16 (for INT8 data) to "
            "enable NVIDIA Tensor Core acceleration. Disregard this warning if this is unrelated to your "
            "metric/hardware.\n", c->path, base, (long long)cl->difficulty_step);
}

/* data_efficiency.data_sampling as DeepSpeed's config.py and DeepSpeedDataSampler read it: curriculum_learning.enabled
 * alone turns it on (the engine reads only it); each metric's keys are read by key (a KeyError there: refused naming
 * the key). */
static void read_data_sampling(zt_ds_config *c) {
  zt_data_sampling_config *d = &c->data_sampling;
  memset(d, 0, sizeof *d);
  const char *cl = "data_efficiency.data_sampling.curriculum_learning";
  d->enabled = get_path(c, cl) && get_bool(c, "data_efficiency.data_sampling.curriculum_learning.enabled");
  d->seed = 1234;
  const cJSON *seed = get_path(c, "data_efficiency.seed"); /* the schema: an integer in [0, 9e15] (NumPy's
                                                              default_rng takes non-negative seeds) */
  if (seed && cJSON_IsNumber(seed)) d->seed = (uint64_t)seed->valuedouble;
  if (!d->enabled) return;
  d->num_epochs = get_path(c, "data_efficiency.data_sampling.num_epochs")
                      ? (int64_t)get_num(c, "data_efficiency.data_sampling.num_epochs").value : 1000;
  d->num_workers = get_path(c, "data_efficiency.data_sampling.num_workers")
                       ? (int64_t)get_num(c, "data_efficiency.data_sampling.num_workers").value : 0;
  if (!get_bool(c, "data_efficiency.enabled") || !get_bool(c, "data_efficiency.data_sampling.enabled"))
    zt_warn("ds_config: %s: %s.enabled is true while %s is false: DeepSpeed's engine samples the data by the "
            "curriculum all the same, and so does zerotron\n", c->path, cl,
            !get_bool(c, "data_efficiency.enabled") ? "data_efficiency.enabled" : "data_efficiency.data_sampling.enabled");
  const cJSON *cp = get_path(c, "data_efficiency.data_sampling.curriculum_learning.data_cluster_path");
  if (cp && cJSON_IsString(cp)) snprintf(d->cluster_path, sizeof d->cluster_path, "%s", cp->valuestring);
  const cJSON *ms = get_path(c, "data_efficiency.data_sampling.curriculum_learning.curriculum_metrics");
  if (!ms) ds_fail(c, "%s.curriculum_metrics is missing: Curriculum learning is enabled, curriculum_metrics must be "
                      "specified", cl);
  const cJSON *m;
  cJSON_ArrayForEach(m, ms) {
    if (d->n_metrics == ZT_DATA_SAMPLER_MAX_METRICS)
      ds_fail(c, "%s.curriculum_metrics has more than %d metrics", cl, ZT_DATA_SAMPLER_MAX_METRICS);
    zt_data_metric_config *mt = &d->metric[d->n_metrics++];
    char base[512], path[640];
    if (strlen(m->string) >= sizeof mt->name) /* (a name with a '.' is an unknown key path for the schema) */
      ds_fail(c, "%s.curriculum_metrics: the metric name \"%s\" must be shorter than %zu bytes", cl, m->string,
              sizeof mt->name);
    snprintf(mt->name, sizeof mt->name, "%s", m->string);
    snprintf(base, sizeof base, "%s.curriculum_metrics.%s", cl, m->string);
    const char *kt[2] = {"difficulty_type", "clustering_type"};
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s.%s", base, kt[k]);
      const cJSON *v = get_path(c, path);
      if (!v || !cJSON_IsString(v))
        ds_fail(c, "%s is %s: give %s (DeepSpeedDataSampler reads it by key)", path, v ? "null" : "missing",
                k ? "\"schedule_based\" or \"single_cluster\"" : "\"value\" or \"percentile\"");
      if (k == 0) mt->difficulty_type = !strcmp(v->valuestring, "value") ? ZT_DIFFICULTY_VALUE : ZT_DIFFICULTY_PERCENTILE;
      else mt->clustering_type = !strcmp(v->valuestring, "single_cluster") ? ZT_CLUSTERING_SINGLE_CLUSTER
                                                                           : ZT_CLUSTERING_SCHEDULE_BASED;
    }
    const char *kp[2] = {"index_to_sample_path", "index_to_metric_path"};
    for (int k = 0; k < 2; k++) {
      snprintf(path, sizeof path, "%s.%s", base, kp[k]);
      const cJSON *v = get_path(c, path);
      char *dst = k ? mt->index_to_metric_path : mt->index_to_sample_path;
      if (v && cJSON_IsString(v)) {
        if (strlen(v->valuestring) >= ZT_DATA_SAMPLER_PATH) ds_fail(c, "%s is longer than %d bytes", path,
                                                                      ZT_DATA_SAMPLER_PATH - 1);
        snprintf(dst, ZT_DATA_SAMPLER_PATH, "%s", v->valuestring);
      }
    }
    zt_curriculum_config *sc = &mt->schedule;
    sc->enabled = true;
    read_curriculum_schedule(c, base, sc);
    if (mt->difficulty_type == ZT_DIFFICULTY_PERCENTILE) {
      int ok = sc->min_difficulty >= 0 && sc->max_difficulty >= 1;
      for (int i = 0; ok && sc->type == ZT_CURRICULUM_FIXED_DISCRETE && i < sc->n_difficulty; i++)
        ok = sc->difficulty[i] >= 0 && sc->difficulty[i] <= sc->max_difficulty;
      if (!ok)
        ds_fail(c, "%s: difficulty_type percentile needs percentiles between 0 and max_difficulty, and max_difficulty "
                   "at least 1 (the samples per percentile are the data's size // max_difficulty); got min_difficulty "
                   "%lld, max_difficulty %lld", base, (long long)sc->min_difficulty, (long long)sc->max_difficulty);
    }
  }
  if (d->n_metrics == 0)
    ds_fail(c, "%s.curriculum_metrics is empty: DeepSpeed's sampler would build no data cluster and fail at the first "
               "batch; name at least one metric", cl);
}

/* An integer of the random_ltd block that DeepSpeed reads by key (a KeyError or TypeError there when missing or
 * null): refused naming the key. */
static int64_t ltd_int(const zt_ds_config *c, const char *key) {
  char path[160];
  snprintf(path, sizeof path, "data_efficiency.data_routing.random_ltd.%s", key);
  const cJSON *it = get_path(c, path);
  if (!it) ds_fail(c, "%s is missing: random-LTD requires it (DeepSpeed reads it by key)", path);
  if (!cJSON_IsNumber(it)) ds_fail(c, "%s must be an integer, got null", path); /* the schema checked the rest */
  return (int64_t)it->valuedouble;
}

static void ltd_str(const zt_ds_config *c, const char *key, char *dst, size_t n, int required) {
  char path[160];
  snprintf(path, sizeof path, "data_efficiency.data_routing.random_ltd.%s", key);
  const cJSON *it = get_path(c, path);
  if (required && !cJSON_IsString(it))
    ds_fail(c, "%s is %s: random-LTD requires it (DeepSpeed reads it by key)", path, it ? "null" : "missing");
  snprintf(dst, n, "%s", cJSON_IsString(it) ? it->valuestring : "");
}

/* data_efficiency.data_routing.random_ltd as DeepSpeed's get_random_ltd and RandomLTDScheduler read it: enabled by
 * random_ltd.enabled alone; its keys required when enabled; layer_token_lr_schedule.enabled refused as DeepSpeed
 * raises NotImplementedError on it. */
static void read_random_ltd(zt_ds_config *c) {
  zt_random_ltd_config *r = &c->random_ltd;
  memset(r, 0, sizeof *r);
  r->enabled = get_path(c, "data_efficiency.data_routing.random_ltd") &&
               get_bool(c, "data_efficiency.data_routing.random_ltd.enabled");
  if (!r->enabled) return;
  if (get_bool(c, "data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.enabled"))
    ds_fail(c, "data_efficiency.data_routing.random_ltd.layer_token_lr_schedule.enabled true is not supported: "
               "DeepSpeed's RandomLTDScheduler raises NotImplementedError on it (work in progress there)");
  if (!get_bool(c, "data_efficiency.enabled") || !get_bool(c, "data_efficiency.data_routing.enabled"))
    zt_warn("ds_config: %s: data_efficiency.data_routing.random_ltd.enabled is true while %s is false: random-LTD "
            "runs (DeepSpeed's engine enables it by random_ltd.enabled alone)\n", c->path,
            !get_bool(c, "data_efficiency.enabled") ? "data_efficiency.enabled" : "data_efficiency.data_routing.enabled");
  r->total_layer_num = ltd_int(c, "total_layer_num");
  r->random_ltd_layer_num = ltd_int(c, "random_ltd_layer_num");
  const char *ids = "data_efficiency.data_routing.random_ltd.random_ltd_layer_id";
  const cJSON *l = get_path(c, ids);
  if (!l) ds_fail(c, "%s is missing: random-LTD requires the list of layers it applies to", ids);
  if (!cJSON_IsArray(l)) ds_fail(c, "%s must be a list of layer numbers, got null", ids);
  if (cJSON_GetArraySize(l) > ZT_RANDOM_LTD_MAX_LAYERS)
    ds_fail(c, "%s has %d entries, at most %d are supported", ids, cJSON_GetArraySize(l), ZT_RANDOM_LTD_MAX_LAYERS);
  const cJSON *it;
  cJSON_ArrayForEach(it, l) {
    char v[64];
    fmt_item(it, v, sizeof v);
    if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) || fabs(it->valuedouble) > 9.0e15)
      ds_fail(c, "%s[%d] must be an integer, got %s", ids, r->n_layer_id, v);
    r->layer_id[r->n_layer_id++] = (int64_t)it->valuedouble;
  }
  ltd_str(c, "model_type", r->model_type, sizeof r->model_type, 1);
  ltd_str(c, "hidden_state_order", r->hidden_state_order, sizeof r->hidden_state_order, 1);
  ltd_str(c, "model_mask_name", r->model_mask_name, sizeof r->model_mask_name, 0);
  r->min_value = ltd_int(c, "random_ltd_schedule.min_value");
  r->max_value = ltd_int(c, "random_ltd_schedule.max_value");
  char type[32];
  ltd_str(c, "random_ltd_schedule.schedule_type", type, sizeof type, 1); /* the schema's enum: fixed_linear */
  r->require_steps = ltd_int(c, "random_ltd_schedule.schedule_config.require_steps");
  r->seq_per_step = ltd_int(c, "random_ltd_schedule.schedule_config.seq_per_step");
}

static void fill_fields(zt_ds_config *c) {
  c->train_batch_size = get_num(c, "train_batch_size");
  c->train_micro_batch_size_per_gpu = get_num(c, "train_micro_batch_size_per_gpu");
  c->gradient_accumulation_steps = get_num(c, "gradient_accumulation_steps");
  c->steps_per_print = get_num(c, "steps_per_print");
  c->wall_clock_breakdown = get_bool(c, "wall_clock_breakdown");
  c->memory_breakdown = get_bool(c, "memory_breakdown");
  c->dump_state = get_bool(c, "dump_state");
  c->gradient_clipping = get_num(c, "gradient_clipping");
  c->prescale_gradients = get_bool(c, "prescale_gradients");
  c->use_data_before_expert_parallelism = get_bool(c, "use_data_before_expert_parallelism");
  c->gradient_predivide_factor = get_num(c, "gradient_predivide_factor");
  get_str(c, "communication_data_type", c->communication_data_type, sizeof c->communication_data_type);
  get_str(c, "seq_parallel_comm_data_type", c->seq_parallel_comm_data_type, sizeof c->seq_parallel_comm_data_type);

  c->fp16_auto = is_auto(get_key(c, "fp16.enabled"));
  c->fp16_enabled = get_bool(c, "fp16.enabled");
  const char *bf16_key = get_path(c, "bf16") || !get_path(c, "bfloat16") ? "bf16.enabled" : "bfloat16.enabled";
  c->bf16_auto = is_auto(get_key(c, bf16_key));
  c->bf16_enabled = get_bool(c, bf16_key);
  c->loss_scale = get_num(c, "fp16.loss_scale");
  c->initial_scale_power = get_num(c, "fp16.initial_scale_power");
  c->loss_scale_window = get_num(c, "fp16.loss_scale_window");
  c->hysteresis = get_num(c, "fp16.hysteresis");
  c->min_loss_scale = get_num(c, "fp16.min_loss_scale");
  c->consecutive_hysteresis = get_bool(c, "fp16.consecutive_hysteresis");
  c->dynamic_loss_args = c->initial_scale_power.given || c->loss_scale_window.given || c->hysteresis.given ||
                         c->min_loss_scale.given || get_key(c, "fp16.consecutive_hysteresis") != NULL;
  get_str(c, "data_types.grad_accum_dtype", c->grad_accum_dtype, sizeof c->grad_accum_dtype);

  c->has_optimizer = cJSON_IsObject(get_path(c, "optimizer"));
  c->lr = get_num(c, "optimizer.params.lr");
  c->eps = get_num(c, "optimizer.params.eps");
  c->weight_decay = get_num(c, "optimizer.params.weight_decay");
  c->beta1 = (zt_ds_num){false, false, 0.9};
  c->beta2 = (zt_ds_num){false, false, 0.999};
  const cJSON *betas = get_path(c, "optimizer.params.betas");
  if (is_auto(betas)) {
    c->beta1.is_auto = c->beta2.is_auto = true;
  } else if (cJSON_IsArray(betas)) {
    c->beta1 = (zt_ds_num){true, false, cJSON_GetArrayItem(betas, 0)->valuedouble};
    c->beta2 = (zt_ds_num){true, false, cJSON_GetArrayItem(betas, 1)->valuedouble};
  }
  c->adam_w_mode = get_bool(c, "optimizer.params.adam_w_mode");
  if (!strcmp(c->optimizer_type, "adamw")) c->adam_w_mode = true; /* DeepSpeed: adamw forces it */
  c->torch_adam = get_bool(c, "optimizer.params.torch_adam");
  c->bias_correction = get_bool(c, "optimizer.params.bias_correction");
  c->max_coeff = get_num(c, "optimizer.params.max_coeff");
  c->min_coeff = get_num(c, "optimizer.params.min_coeff");
  c->eps_inside_sqrt = get_bool(c, "optimizer.params.eps_inside_sqrt");

  c->has_scheduler = cJSON_IsObject(get_path(c, "scheduler"));
#define SN(f) c->sched.f = get_num(c, "scheduler.params." #f)
  SN(lr_range_test_min_lr); SN(lr_range_test_step_size); SN(lr_range_test_step_rate);
  c->sched.lr_range_test_staircase = get_bool(c, "scheduler.params.lr_range_test_staircase");
  SN(cycle_min_lr); SN(cycle_max_lr); SN(decay_lr_rate); SN(cycle_first_step_size); SN(cycle_second_step_size);
  SN(cycle_first_stair_count); SN(cycle_second_stair_count); SN(decay_step_size);
  c->sched.cycle_momentum = get_bool(c, "scheduler.params.cycle_momentum");
  SN(cycle_min_mom); SN(cycle_max_mom); SN(decay_mom_rate);
  SN(warmup_min_lr); SN(warmup_max_lr); SN(warmup_num_steps); SN(total_num_steps);
  SN(warmup_min_ratio); SN(cos_min_ratio); SN(last_batch_iteration);
#undef SN
  get_str(c, "scheduler.params.warmup_type", c->sched.warmup_type, sizeof c->sched.warmup_type);

  c->zero_stage = (int)get_num(c, "zero_optimization.stage").value; /* a legacy boolean is an object by now */
  /* stage 3 (runtime/zero/zero3.h): the "auto" values take DeepSpeed's defaults (the HF integration derives
   * them from the hidden size, which a Megatron command line states outright) */
  const zt_ds_num pf = get_num(c, "zero_optimization.prefetch_bucket_size"),
                  pt = get_num(c, "zero_optimization.param_persistence_threshold"),
                  rb = get_num(c, "zero_optimization.reduce_bucket_size");
  c->zero_prefetch_bucket_size = pf.value;
  c->zero_param_persistence_threshold = pt.value;
  c->zero_auto_prefetch = pf.is_auto;
  c->zero_auto_persistence = pt.is_auto;
  c->zero_auto_reduce_bucket = rb.is_auto;
  c->zero_model_persistence_threshold = get_num(c, "zero_optimization.model_persistence_threshold").value;
  c->zero_max_live_parameters = get_num(c, "zero_optimization.max_live_parameters").value;
  c->zero_max_reuse_distance = get_num(c, "zero_optimization.max_reuse_distance").value;
  snprintf(c->offload_param_device, sizeof c->offload_param_device, "none");
  get_str(c, "zero_optimization.offload_param.device", c->offload_param_device, sizeof c->offload_param_device);
  c->offload_param_block = get_path(c, "zero_optimization.offload_param") != NULL;
  if (cJSON_IsTrue(get_path(c, "zero_optimization.cpu_offload_param"))) {
    snprintf(c->offload_param_device, sizeof c->offload_param_device, "cpu");
    c->offload_param_block = 1;
  }
  if (strcmp(c->offload_param_device, "none") && c->zero_stage != 3)
    ds_fail(c, "zero_optimization.offload_param.device \"%s\" needs zero_optimization.stage 3 (DeepSpeed offloads "
            "parameters only in stage 3), got stage %d", c->offload_param_device, c->zero_stage);
  get_str(c, "zero_optimization.offload_param.nvme_path", c->offload_param_nvme_path,
          sizeof c->offload_param_nvme_path);
  c->offload_param_buffer_count = (int)get_num(c, "zero_optimization.offload_param.buffer_count").value;
  c->offload_param_buffer_size = get_num(c, "zero_optimization.offload_param.buffer_size").value;
  c->offload_param_max_in_cpu = get_num(c, "zero_optimization.offload_param.max_in_cpu").value;
  c->offload_param_pin_memory = get_bool(c, "zero_optimization.offload_param.pin_memory");
  if (!strcmp(c->offload_param_device, "nvme") && !c->offload_param_nvme_path[0])
    ds_fail(c, "zero_optimization.offload_param.device \"nvme\" needs zero_optimization.offload_param.nvme_path");
  c->zero_reduce_bucket_size = get_num(c, "zero_optimization.reduce_bucket_size").value;
  c->zero_allgather_bucket_size = get_num(c, "zero_optimization.allgather_bucket_size").value;
  c->zero_reduce_scatter = get_bool(c, "zero_optimization.reduce_scatter");
  snprintf(c->offload_optimizer_device, sizeof c->offload_optimizer_device, "none");
  get_str(c, "zero_optimization.offload_optimizer.device", c->offload_optimizer_device,
          sizeof c->offload_optimizer_device);
  if (cJSON_IsTrue(get_path(c, "zero_optimization.cpu_offload")))
    snprintf(c->offload_optimizer_device, sizeof c->offload_optimizer_device, "cpu");
  get_str(c, "zero_optimization.offload_optimizer.nvme_path", c->offload_optimizer_nvme_path,
          sizeof c->offload_optimizer_nvme_path);
  c->offload_optimizer_buffer_count = (int)get_num(c, "zero_optimization.offload_optimizer.buffer_count").value;
  c->offload_optimizer_pin_memory = get_bool(c, "zero_optimization.offload_optimizer.pin_memory");
  c->offload_optimizer_pipeline = get_bool(c, "zero_optimization.offload_optimizer.pipeline_read") ||
                                  get_bool(c, "zero_optimization.offload_optimizer.pipeline_write");
  c->zero_sub_group_size = get_num(c, "zero_optimization.sub_group_size").value;
  if (strcmp(c->offload_optimizer_device, "none") && c->zero_stage == 0)
    ds_fail(c, "zero_optimization.offload_optimizer.device \"%s\" needs zero_optimization.stage 1, 2 or 3 (the optimizer "
            "state offloaded is the rank's ZeRO partition)", c->offload_optimizer_device);
  if (!strcmp(c->offload_optimizer_device, "nvme") && !c->offload_optimizer_nvme_path[0])
    ds_fail(c, "zero_optimization.offload_optimizer.device \"nvme\" needs zero_optimization.offload_optimizer.nvme_path");
  /* DeepSpeed's partial offload (stage3.py: the first (1 - ratio) of the sub-groups stay on the accelerator) exists in
   * stage 3 only; stages 1 and 2 ignore the key, which would leave a user believing part of the state stays on the GPU */
  const zt_ds_num ratio = get_num(c, "zero_optimization.offload_optimizer.ratio");
  c->offload_optimizer_ratio = ratio.given ? ratio.value : 1.0;
  if (c->offload_optimizer_ratio != 1.0 && (c->zero_stage != 3 || strcmp(c->offload_optimizer_device, "cpu")))
    ds_fail(c, "zero_optimization.offload_optimizer.ratio %g needs zero_optimization.stage 3 and offload device \"cpu\" "
            "(stage %d, device \"%s\"): DeepSpeed's partial offload is a stage-3 CPU-offload feature",
            c->offload_optimizer_ratio, c->zero_stage, c->offload_optimizer_device);
  c->ac_partition = get_bool(c, "activation_checkpointing.partition_activations");
  c->ac_cpu = get_bool(c, "activation_checkpointing.cpu_checkpointing");
  c->ac_contiguous = get_bool(c, "activation_checkpointing.contiguous_memory_optimization");
  c->ac_synchronize = get_bool(c, "activation_checkpointing.synchronize_checkpoint_boundary");
  c->ac_profile = get_bool(c, "activation_checkpointing.profile");
  const zt_ds_num nc = get_num(c, "activation_checkpointing.number_checkpoints");
  c->ac_number_checkpoints = nc.given ? (int)nc.value : -1;
  if (c->ac_contiguous && !c->ac_partition) /* DeepSpeed's checkpointing.configure assert */
    ds_fail(c, "activation_checkpointing: Contiguous Checkpointing is only available with partitioned activations. "
            "Set partitioned activations to true in deepspeed config");
  c->aio_block_size = (int)get_num(c, "aio.block_size").value;
  c->aio_queue_depth = (int)get_num(c, "aio.queue_depth").value;
  c->aio_intra_op_parallelism = (int)get_num(c, "aio.intra_op_parallelism").value;
  c->aio_single_submit = get_bool(c, "aio.single_submit");
  c->aio_overlap_events = get_bool(c, "aio.overlap_events");

  c->tensorboard_enabled = get_bool(c, "tensorboard.enabled");
  get_str(c, "tensorboard.output_path", c->tensorboard_output_path, sizeof c->tensorboard_output_path);
  get_str(c, "tensorboard.job_name", c->tensorboard_job_name, sizeof c->tensorboard_job_name);
  c->csv_monitor_enabled = get_bool(c, "csv_monitor.enabled");
  get_str(c, "csv_monitor.output_path", c->csv_monitor_output_path, sizeof c->csv_monitor_output_path);
  get_str(c, "csv_monitor.job_name", c->csv_monitor_job_name, sizeof c->csv_monitor_job_name);
  c->timers_throughput_enabled = get_bool(c, "timers.throughput.enabled");
  c->timers_throughput_synchronized = get_bool(c, "timers.throughput.synchronized");
  c->load_universal = get_bool(c, "checkpoint.load_universal");
  get_str(c, "checkpoint.tag_validation", c->tag_validation, sizeof c->tag_validation);
  c->flops_profiler_enabled = get_bool(c, "flops_profiler.enabled");
  c->fp_recompute_fwd_factor = get_num(c, "flops_profiler.recompute_fwd_factor").value;
  const char *fp_ints[3] = {"flops_profiler.profile_step", "flops_profiler.module_depth", "flops_profiler.top_modules"};
  int *fp_dst[3] = {&c->fp_profile_step, &c->fp_module_depth, &c->fp_top_modules};
  for (int i = 0; i < 3; i++) {
    double v = get_num(c, fp_ints[i]).value;
    zt_check(v <= 2147483647.0, c->path, "%s must be at most 2147483647, got %.0f", fp_ints[i], v);
    *fp_dst[i] = (int)v;
  }
  c->fp_detailed = get_bool(c, "flops_profiler.detailed");
  get_str(c, "flops_profiler.output_file", c->fp_output_file, sizeof c->fp_output_file);

  c->comms_logger_enabled = get_bool(c, "comms_logger.enabled");
  c->cl_verbose = get_bool(c, "comms_logger.verbose");
  c->cl_prof_all = get_bool(c, "comms_logger.prof_all");
  c->cl_debug = get_bool(c, "comms_logger.debug");
  static const char *cl_ops[] = {"all_reduce", "all_gather", "reduce_scatter", "reduce", "broadcast", "send",
                                 "recv", "barrier", "all_to_all_single"};
  const int n_ops = (int)(sizeof cl_ops / sizeof cl_ops[0]);
  const cJSON *ops = get_key(c, "comms_logger.prof_ops");
  int i = 0;
  const cJSON *op;
  cJSON_ArrayForEach(op, ops) {
    if (!cJSON_IsString(op)) ds_fail(c, "comms_logger.prof_ops[%d] must be a string (an op name)", i);
    int ok = 0;
    for (int j = 0; j < n_ops; j++) ok |= strcmp(op->valuestring, cl_ops[j]) == 0;
    if (!ok)
      ds_fail(c, "comms_logger.prof_ops[%d] \"%s\" is not an op zerotron logs (all_reduce, all_gather, "
                 "reduce_scatter, reduce, broadcast, send, recv, barrier, all_to_all_single)", i, op->valuestring);
    if (i >= n_ops) ds_fail(c, "comms_logger.prof_ops has %d names, at most %d allowed", cJSON_GetArraySize(ops), n_ops);
    snprintf(c->cl_prof_ops[i], sizeof c->cl_prof_ops[i], "%s", op->valuestring);
    i++;
  }
  c->cl_n_prof_ops = i;
  read_sparse_attention(c);
  read_curriculum(c);
  read_data_sampling(c);
  read_random_ltd(c);
}

/* DeepSpeed's read_zero_config_deprecated (runtime/zero/config.py get_zero_config): "zero_optimization": true
 * is {"stage": 1, "allgather_bucket_size": <top-level allgather_size, 5e8>}, false is {"stage": 0}, with
 * DeepSpeed's deprecation warning. The tree is rewritten to that object, so what is printed is what runs. */
static void legacy_zero_bool(zt_ds_config *c) {
  cJSON *root = (cJSON *)c->json, *z = cJSON_GetObjectItemCaseSensitive(root, "zero_optimization");
  if (!cJSON_IsBool(z)) return;
  const int stage = cJSON_IsTrue(z) ? 1 : 0;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "stage", stage);
  if (stage > 0) cJSON_AddNumberToObject(o, "allgather_bucket_size", get_num(c, "allgather_size").value);
  cJSON_ReplaceItemInObjectCaseSensitive(root, "zero_optimization", o);
  zt_warn("DeepSpeedConfig: this format of ZeRO optimization setup is deprecated (%s: \"zero_optimization\": %s runs "
          "ZeRO stage %d). Please use the following format: {\"zero_optimization\": {\"stage\": %d, ...}}", c->path,
          stage ? "true" : "false", stage, stage);
}

void zt_ds_config_load_string(zt_ds_config *c, const char *text, const char *name) {
  memset(c, 0, sizeof *c);
  snprintf(c->path, sizeof c->path, "%s", name);
  size_t n = strlen(text);
  c->text = zt_malloc(n + 1, "ds_config text");
  memcpy(c->text, text, n + 1);
  char *buf = zt_malloc(n + 1, "ds_config text");
  memcpy(buf, text, n + 1);
  strip_hjson(buf);
  check_nul_escapes(c, buf);
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(buf, &end, true);
  if (!root) {
    const char *err = cJSON_GetErrorPtr();
    size_t off = (err && err >= buf && err <= buf + n) ? (size_t)(err - buf) : n;
    int line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
      if (buf[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    char near[32] = "";
    if (off < n) {
      snprintf(near, sizeof near, "%.20s", text + off);
      for (char *p = near; *p; p++)
        if (*p == '\n' || *p == '\r') *p = 0;
    }
    free(buf);
    if (off >= n) ds_fail(c, "line %d column %d: JSON syntax error: unexpected end of the file", line, col);
    ds_fail(c, "line %d column %d: JSON syntax error near \"%s\"", line, col, near);
  }
  free(buf);
  c->json = root;
  if (!cJSON_IsObject(root)) ds_fail(c, "the configuration must be a JSON object ({...})");
  check_duplicates(c, root, "");
  check_optimizer(c);
  check_scheduler(c);
  walk(c, root, "", true, false);
  const cJSON *fp16 = get_path(c, "fp16"), *bf16 = get_path(c, "bf16");
  if (!bf16) bf16 = get_path(c, "bfloat16");
  if (cJSON_IsObject(fp16) && cJSON_IsObject(bf16) && cJSON_IsTrue(cJSON_GetObjectItem(fp16, "enabled")) &&
      cJSON_IsTrue(cJSON_GetObjectItem(bf16, "enabled")))
    ds_fail(c, "bfloat16 and fp16 modes cannot be simultaneously enabled");
  legacy_zero_bool(c);
  fill_fields(c);
}

void zt_ds_config_load(zt_ds_config *c, const char *path) {
  size_t got;
  char *text = zt_read_file(path, &got);
  if (!text) zt_fatal(WHAT, "%s: cannot open the DeepSpeed config file: %s", path, strerror(errno));
  if (strlen(text) != got) zt_fatal(WHAT, "%s: the file contains a NUL byte; not a JSON text", path);
  zt_ds_config_load_string(c, text, path);
  free(text);
}

void zt_ds_config_free(zt_ds_config *c) {
  cJSON_Delete((cJSON *)c->json);
  c->json = NULL;
  free(c->text);
  c->text = NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* "auto" and the Megatron flags. */

static bool nearly_equal(double a, double b) {
  return a == b || fabs(a - b) <= 1e-6 * fmax(fabs(a), fabs(b));
}

/* The double a float flag stands for: its shortest decimal repr (0.01f -> 0.01). */
static double widen(float f) {
  char buf[32];
  for (int p = 1; p <= 9; p++) {
    snprintf(buf, sizeof buf, "%.*g", p, (double)f);
    if ((float)strtod(buf, NULL) == f) break;
  }
  return strtod(buf, NULL);
}

void zt_ds_megatron_from_args(zt_ds_megatron *m, const zt_args *a) {
  memset(m, 0, sizeof *m);
#define MV(field, flag, is_set, val) \
  m->field = (zt_ds_megatron_value){(is_set) || zt_args_given(a, flag), zt_args_given(a, flag), (double)(val)}
  MV(micro_batch_size, "--micro-batch-size", false, a->micro_batch_size);
  MV(global_batch_size, "--global-batch-size", false, a->global_batch_size);
  MV(clip_grad, "--clip-grad", true, widen(a->clip_grad));
  MV(lr, "--lr", false, a->lr);
  MV(adam_beta1, "--adam-beta1", true, widen(a->adam_beta1));
  MV(adam_beta2, "--adam-beta2", true, widen(a->adam_beta2));
  MV(adam_eps, "--adam-eps", true, widen(a->adam_eps));
  MV(weight_decay, "--weight-decay", true, widen(a->weight_decay));
  MV(lr_warmup_iters, "--lr-warmup-iters", true, a->lr_warmup_iters);
  MV(train_iters, "--train-iters", a->train_iters > 0, a->train_iters);
  MV(zero_stage, "--zero-stage", false, a->zero_stage);
#undef MV
  m->ds_activation_checkpointing = a->deepspeed_activation_checkpointing && a->recompute_granularity == ZT_RECOMPUTE_FULL;
  m->ac_partition = a->partition_activations;
  m->ac_contiguous = a->contigious_checkpointing;
  m->ac_cpu = a->checkpoint_in_cpu;
  m->ac_synchronize = a->synchronize_each_layer;
  m->ac_profile = a->profile_backward;
  m->ac_number_checkpoints = (a->num_layers + a->recompute_num_layers - 1) / a->recompute_num_layers;
}

/* --zero-stage is Megatron-DeepSpeed's copy of the stage (it decides zero.Init and gathers at model construction,
 * DeepSpeed's engine partitions by the file): the two must agree. */
static void reconcile_zero_stage(const zt_ds_config *c, const zt_ds_megatron_value *m) {
  if (!m->explicit_ || (int)m->value == c->zero_stage) return;
  const bool in_file = get_path(c, "zero_optimization.stage") != NULL;
  zt_fatal("inconsistent arguments", "--zero-stage %d contradicts zero_optimization.stage %d in %s%s", (int)m->value,
           c->zero_stage, c->path, in_file ? "" : " (the file sets no stage: DeepSpeed's default 0)");
}

/* deepspeed.checkpointing.configure(partition_activations=..., contiguous_checkpointing=..., num_checkpoints=...,
 * checkpoint_in_cpu=..., synchronize=..., profile=...): every argument is a bool or a count, never None, so each
 * replaces the activation_checkpointing key of the file. */
static void reconcile_activation_checkpointing(zt_ds_config *c, const zt_ds_megatron *m) {
  if (!m->ds_activation_checkpointing) return;
  const bool before[5] = {c->ac_partition, c->ac_contiguous, c->ac_cpu, c->ac_synchronize, c->ac_profile};
  const bool after[5] = {m->ac_partition, m->ac_contiguous, m->ac_cpu, m->ac_synchronize, m->ac_profile};
  static const char *const keys[5] = {"partition_activations", "contiguous_memory_optimization", "cpu_checkpointing",
                                      "synchronize_checkpoint_boundary", "profile"};
  static const char *const flags[5] = {"--partition-activations", "--contigious-checkpointing", "--checkpoint-in-cpu",
                                       "--synchronize-each-layer", "--profile-backward"};
  for (int i = 0; i < 5; i++)
    if (before[i] != after[i])
      zt_log("> --deepspeed-activation-checkpointing: activation_checkpointing.%s %s in %s is replaced by %s (%s), "
             "as deepspeed.checkpointing.configure does\n", keys[i], before[i] ? "true" : "false", c->path,
             after[i] ? "true" : "false", after[i] ? flags[i] : "not given");
  c->ac_partition = m->ac_partition;
  c->ac_contiguous = m->ac_contiguous;
  c->ac_cpu = m->ac_cpu;
  c->ac_synchronize = m->ac_synchronize;
  c->ac_profile = m->ac_profile;
  c->ac_number_checkpoints = m->ac_number_checkpoints;
}

static void reconcile_one(zt_ds_config *c, zt_ds_num *d, const char *key, const zt_ds_megatron_value *m,
                          const char *flag, bool may_stay_auto) {
  char a[64], b[64];
  if (d->is_auto && !d->given) {
    if (m->set) {
      d->given = true;
      d->value = m->value;
      if (!strstr(key, "betas")) set_num(c, key, m->value);
    } else if (!may_stay_auto) {
      zt_fatal("inconsistent arguments", "\"auto\" for %s in %s needs %s on the command line", key, c->path, flag);
    }
  } else if (d->given) {
    if (m->explicit_ && !nearly_equal(d->value, m->value))
      zt_fatal("inconsistent arguments", "%s %s contradicts %s %s in %s", flag, fmt_num(m->value, a, sizeof a), key,
               fmt_num(d->value, b, sizeof b), c->path);
  } else if (m->explicit_) {
    d->given = true;
    d->value = m->value;
    if (!strstr(key, "betas")) set_num(c, key, m->value);
  }
}

void zt_ds_config_reconcile(zt_ds_config *c, const zt_ds_megatron *m) {
  reconcile_zero_stage(c, &m->zero_stage);
  reconcile_activation_checkpointing(c, m);
  reconcile_one(c, &c->train_micro_batch_size_per_gpu, "train_micro_batch_size_per_gpu", &m->micro_batch_size,
                "--micro-batch-size", true);
  reconcile_one(c, &c->train_batch_size, "train_batch_size", &m->global_batch_size, "--global-batch-size", true);
  if (c->gradient_accumulation_steps.is_auto) c->gradient_accumulation_steps.is_auto = true; /* derived later */
  reconcile_one(c, &c->gradient_clipping, "gradient_clipping", &m->clip_grad, "--clip-grad", false);
  if (c->has_optimizer) {
    reconcile_one(c, &c->lr, "optimizer.params.lr", &m->lr, "--lr", false);
    reconcile_one(c, &c->beta1, "optimizer.params.betas[0]", &m->adam_beta1, "--adam-beta1", false);
    reconcile_one(c, &c->beta2, "optimizer.params.betas[1]", &m->adam_beta2, "--adam-beta2", false);
    if (c->beta1.given && c->beta2.given && cJSON_IsObject(get_path(c, "optimizer.params"))) {
      cJSON *p = get_path(c, "optimizer.params");
      double bb[2] = {c->beta1.value, c->beta2.value};
      cJSON *arr = cJSON_CreateDoubleArray(bb, 2);
      if (cJSON_GetObjectItemCaseSensitive(p, "betas")) cJSON_ReplaceItemInObjectCaseSensitive(p, "betas", arr);
      else cJSON_AddItemToObject(p, "betas", arr);
    }
    reconcile_one(c, &c->eps, "optimizer.params.eps", &m->adam_eps, "--adam-eps", false);
    reconcile_one(c, &c->weight_decay, "optimizer.params.weight_decay", &m->weight_decay, "--weight-decay", false);
  }
  if (c->has_scheduler) {
    const char *t = c->scheduler_type;
    bool warm = !strcmp(t, "WarmupLR") || !strcmp(t, "WarmupDecayLR");
    if (warm) {
      zt_ds_megatron_value zero = {true, false, 0.0}; /* HF: fill_only(warmup_min_lr, 0), not a flag */
      reconcile_one(c, &c->sched.warmup_min_lr, "scheduler.params.warmup_min_lr", &zero, "(HF rule: 0)", false);
      reconcile_one(c, &c->sched.warmup_max_lr, "scheduler.params.warmup_max_lr", &m->lr, "--lr", false);
    }
    if (warm || !strcmp(t, "WarmupCosineLR"))
      reconcile_one(c, &c->sched.warmup_num_steps, "scheduler.params.warmup_num_steps", &m->lr_warmup_iters,
                    "--lr-warmup-iters", false);
    if (!strcmp(t, "WarmupDecayLR") || !strcmp(t, "WarmupCosineLR"))
      reconcile_one(c, &c->sched.total_num_steps, "scheduler.params.total_num_steps", &m->train_iters,
                    "--train-iters", false);
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* The batch triple (DeepSpeed config.py). */

static long long floordiv(long long a, long long b) {
  long long q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

void zt_ds_config_batch(zt_ds_config *c, int dp_world_size) {
  zt_check(dp_world_size >= 1, WHAT, "%s: data-parallel world size %d must be >= 1", c->path, dp_world_size);
  long long W = dp_world_size;
  bool hb = c->train_batch_size.given, hm = c->train_micro_batch_size_per_gpu.given,
       hg = c->gradient_accumulation_steps.given;
  long long tb = hb ? (long long)c->train_batch_size.value : 0;
  long long mb = hm ? (long long)c->train_micro_batch_size_per_gpu.value : 0;
  long long gas = hg ? (long long)c->gradient_accumulation_steps.value : 0;
  if (hb && hm && hg) {
  } else if (hb && hm) {
    if (mb == 0) ds_fail(c, "Micro batch size per gpu: %lld has to be greater than 0", mb);
    gas = floordiv(floordiv(tb, mb), W);
  } else if (hb && hg) {
    if (gas == 0) ds_fail(c, "Gradient accumulation steps: %lld has to be greater than 0", gas);
    mb = floordiv(floordiv(tb, W), gas);
  } else if (hm && hg) {
    if (__builtin_mul_overflow(mb, gas, &tb) || __builtin_mul_overflow(tb, W, &tb))
      ds_fail(c, "train_micro_batch_size_per_gpu %lld * gradient_accumulation_steps %lld * world_size %lld overflows",
              mb, gas, W);
  } else if (hb) {
    gas = 1;
    mb = floordiv(tb, W);
  } else if (hm) {
    if (__builtin_mul_overflow(mb, W, &tb))
      ds_fail(c, "train_micro_batch_size_per_gpu %lld * world_size %lld overflows", mb, W);
    gas = 1;
  } else {
    ds_fail(c, "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided");
  }
  if (tb <= 0) ds_fail(c, "Train batch size: %lld has to be greater than 0", tb);
  if (mb <= 0) ds_fail(c, "Micro batch size per gpu: %lld has to be greater than 0", mb);
  if (gas <= 0) ds_fail(c, "Gradient accumulation steps: %lld has to be greater than 0", gas);
  long long prod;
  if (__builtin_mul_overflow(mb, gas, &prod) || __builtin_mul_overflow(prod, W, &prod) || tb != prod)
    ds_fail(c, "Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * "
               "gradient_acc_step * world_size %lld != %lld * %lld * %lld", tb, mb, gas, W);
  if (tb > 2147483647)
    ds_fail(c, "train_batch_size %lld (train_micro_batch_size_per_gpu %lld * gradient_accumulation_steps %lld * "
               "world_size %lld) is out of range: zerotron holds the batch sizes in 32-bit ints (at most 2147483647)",
            tb, mb, gas, W);
  c->train_batch_size = (zt_ds_num){true, c->train_batch_size.is_auto, (double)tb};
  c->train_micro_batch_size_per_gpu = (zt_ds_num){true, c->train_micro_batch_size_per_gpu.is_auto, (double)mb};
  c->gradient_accumulation_steps = (zt_ds_num){true, c->gradient_accumulation_steps.is_auto, (double)gas};
  set_num(c, "train_batch_size", (double)tb);
  set_num(c, "train_micro_batch_size_per_gpu", (double)mb);
  set_num(c, "gradient_accumulation_steps", (double)gas);
}

/* ---------------------------------------------------------------------------------------------- */
/* The effective configuration. */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void fmt_print_value(const cJSON *v, char *buf, size_t n) {
  if (cJSON_IsNull(v)) snprintf(buf, n, "None");
  else if (cJSON_IsString(v)) snprintf(buf, n, "%s", v->valuestring);
  else fmt_item(v, buf, n);
}

void zt_ds_config_print(const zt_ds_config *c) {
  char **lines = zt_calloc((size_t)zt_ds_schema_count, sizeof(char *), "ds_config print lines");
  int nl = 0;
  for (int i = 0; i < zt_ds_schema_count; i++) {
    const zt_ds_key *k = &zt_ds_schema[i];
    if (k->type == ZT_DS_OBJECT || k->alias_of || strchr(k->path, '*')) continue;
    char val[512];
    const cJSON *it = get_key(c, k->path);
    if (it) {
      fmt_print_value(it, val, sizeof val);
    } else if (!k->def) {
      snprintf(val, sizeof val, "None (required by its scheduler)");
    } else {
      cJSON *d = cJSON_Parse(k->def);
      fmt_print_value(d, val, sizeof val);
      cJSON_Delete(d);
    }
    size_t len = strlen(k->path);
    int dots = len < 60 ? (int)(60 - len) : 3;
    char *line = zt_malloc(len + (size_t)dots + strlen(val) + 8, "ds_config print line");
    sprintf(line, "  %s %.*s %s", k->path, dots,
            "............................................................", val);
    lines[nl++] = line;
  }
  qsort(lines, (size_t)nl, sizeof(char *), cmp_str);
  zt_log("DeepSpeedEngine configuration:\n");
  for (int i = 0; i < nl; i++) {
    zt_log("%s\n", lines[i]);
    free(lines[i]);
  }
  free(lines);
}
