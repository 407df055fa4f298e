/* run_text_generation_server (text_generation_server.h). Rank 0 listens on --port (0.0.0.0, Flask's 5000 by default)
 * and answers one HTTP request at a time (Megatron's server takes a lock around each): PUT /api with a JSON object,
 * checked field by field in Megatron's order with Megatron's messages and Python's types (an int is not a float,
 * true counts as an int where Megatron asks isinstance(x, int)), then generated on every rank (evaluate/
 * text_generation.c) and answered as Flask's jsonify writes it (sorted keys, compact, ASCII, a newline). The other
 * ranks follow rank 0's requests. SIGINT or SIGTERM ends the server after the request at hand. */
#include "evaluate/text_generation_server.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "data/tokenizer/tokenizer.h"
#include "evaluate/eval_args.h"
#include "evaluate/eval_model.h"
#include "evaluate/pyjson.h"
#include "evaluate/strbuf.h"
#include "evaluate/text_generation.h"
#include "runtime/base/error.h"
#include "runtime/base/timer.h"
#include "runtime/comm/comm.h"
#include "train/args.h"
#include "train/engine.h"

#define MAX_HEADER (64 << 10)
#define MAX_BODY (16 << 20)

typedef struct {
  int port;           /* --port (5000, Flask's) */
  int64_t max_tokens; /* --max-tokens-to-oom (12000) */
} server_flags;

static volatile sig_atomic_t stopping;
static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static void usage(void) {
  printf("usage: run_text_generation_server --load CHECKPOINT_DIR MODEL_FLAGS... [--port N] [--max-tokens-to-oom N]\n\n"
         "A REST server generating text from a GPT checkpoint saved by pretrain_gpt (Megatron-DeepSpeed's\n"
         "tools/run_text_generation_server.py). Rank 0 listens on 0.0.0.0:PORT; runs under mpirun with\n"
         "--tensor-model-parallel-size and --pipeline-model-parallel-size in any layout.\n\n"
         "  curl 'http://localhost:5000/api' -X PUT -H 'Content-Type: application/json' \\\n"
         "       -d '{\"prompts\": [\"Hello world\"], \"tokens_to_generate\": 16}'\n\n"
         "request fields (Megatron's megatron/text_generation_server.py): prompts (1 to 128 strings),\n"
         "tokens_to_generate (64), logprobs, temperature (1.0), top_k (0; 1 is greedy), top_p (0.0), top_p_decay,\n"
         "top_p_bound, add_BOS, stop_on_eol, stop_on_double_eol, prevent_newline_after_colon, random_seed, no_log;\n"
         "beam_width (beam search of one prompt), stop_token (50256), length_penalty\n"
         "(1.0). The reply: {\"logprobs\", \"segments\", \"text\"} (beam search: {\"scores\", \"segments\",\n"
         "\"text\"}).\n\n"
         "server flags:\n"
         "  --port N                   the TCP port (default 5000, Flask's; 0: any free port, printed)\n"
         "  --max-tokens-to-oom N      a request's prompts x (longest prompt + tokens_to_generate) at most N (12000)\n"
         "  --micro-batch-size N       the request's prompts go through the model N at a time (default 1)\n"
         "  --temperature, --top_p, --top_k, --out-seq-length\n"
         "                             accepted as Megatron's server accepts them: not used (each request gives\n"
         "                             its own)\n\n"
         "model and run flags are pretrain_gpt's (see pretrain_gpt --help): --num-layers, --hidden-size,\n"
         "--num-attention-heads, --max-position-embeddings (the longest prompt + generation), --tokenizer-type and\n"
         "its files, --load, --load-tag, --use-checkpoint-args, --tensor-model-parallel-size,\n"
         "--pipeline-model-parallel-size, --fp16/--bf16 (weights rounded as the run held them), --seed (the sampling\n"
         "stream). docs/generate.md\n");
}

/* Takes the server's flags out of argv; the rest (with placeholders for the training-only flags pretrain_gpt's
 * parser requires) goes to *rest. */
static void split_args(int argc, char **argv, server_flags *sf, int *rest_n, char ***rest) {
  char **r = zt_malloc(((size_t)argc + 10) * sizeof(char *), "arguments");
  int n = 0, unused = 0;
  zt_eval_seen seen = {0};
  r[n++] = argv[0];
  sf->port = 5000;
  sf->max_tokens = 12000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    size_t key;
    const char *inl = zt_eval_flag_name(a, &key);
#define IS(name) (key == strlen(name) && !strncmp(a, name, key))
    if (IS("--port") || IS("--max-tokens-to-oom") || IS("--temperature") || IS("--top_p") || IS("--top_k") ||
        IS("--out-seq-length") || IS("--local_rank")) {
      const char *v = zt_eval_flag_value(argc, argv, &i, a, key, inl);
      if (IS("--port")) {
        const double p = zt_eval_parse_num("--port", v, 1);
        zt_check(p >= 0 && p <= 65535, "bad argument value", "--port %s: expected 0 (any free port) to 65535", v);
        sf->port = (int)p;
      } else if (IS("--max-tokens-to-oom")) {
        sf->max_tokens = (int64_t)zt_eval_parse_num("--max-tokens-to-oom", v, 1);
        zt_check(sf->max_tokens > 0, "bad argument value", "--max-tokens-to-oom %s: expected a positive number", v);
      } else {
        (void)zt_eval_parse_num(a, v, IS("--top_k") || IS("--out-seq-length") || IS("--local_rank"));
        unused |= !IS("--local_rank");
      }
    } else {
      zt_eval_seen_arg(&seen, a, key);
      r[n++] = argv[i];
    }
#undef IS
  }
  if (unused)
    zt_log(" > --temperature/--top_p/--top_k/--out-seq-length: not used by the server (as in Megatron); each request "
           "gives its own (temperature, top_k, top_p, tokens_to_generate)\n");
  n = zt_eval_placeholders(&seen, r, n, 1);
  r[n] = NULL;
  *rest_n = n;
  *rest = r;
}

/* ---- the request's fields with Python's types ----------------------------------------------------------------- */

typedef enum { PY_NONE, PY_BOOL, PY_INT, PY_FLOAT, PY_STR, PY_LIST, PY_DICT } pytype;
typedef struct {
  const cJSON *v; /* NULL: absent */
  pytype t;
} field;

/* Whether each member value of the JSON object text s (valid JSON) is a number written as a float ("1.0", "1e3"):
 * json.loads makes those floats and the others ints. cJSON keeps no such difference; its members come in the same
 * order. */
static int *float_literals(const char *s, int members) {
  int *f = zt_calloc((size_t)members + 1, sizeof(int), "request");
  int depth = 0, idx = -1;
  for (const char *p = s; *p; p++) {
    if (*p == '"') {
      for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1]) p++;
      if (!*p) break;
    } else if (*p == '{' || *p == '[') {
      depth++;
    } else if (*p == '}' || *p == ']') {
      depth--;
    } else if (*p == ':' && depth == 1 && ++idx < members) {
      const char *q = p + 1;
      while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
      for (; *q == '-' || *q == '+' || *q == '.' || *q == 'e' || *q == 'E' || (*q >= '0' && *q <= '9'); q++)
        if (*q == '.' || *q == 'e' || *q == 'E') f[idx] = 1;
    }
  }
  return f;
}

static field get(const cJSON *obj, const int *is_float, const char *name) {
  field f = {0};
  int i = 0;
  for (const cJSON *c = obj->child; c; c = c->next, i++) /* a repeated key: the last, as json.loads */
    if (c->string && !strcmp(c->string, name)) {
      f.v = c;
      f.t = cJSON_IsBool(c) ? PY_BOOL : cJSON_IsNumber(c) ? (is_float[i] ? PY_FLOAT : PY_INT)
          : cJSON_IsString(c) ? PY_STR : cJSON_IsArray(c) ? PY_LIST : cJSON_IsObject(c) ? PY_DICT : PY_NONE;
    }
  return f;
}

static int is_int(field f) { return f.t == PY_INT || f.t == PY_BOOL; } /* isinstance(x, int) */
static double num(field f) { return f.t == PY_BOOL ? (cJSON_IsTrue(f.v) ? 1.0 : 0.0) : f.v->valuedouble; }

/* megatron/text_generation_server.py MegatronGenerate.put's checks, in its order and words; NULL when the request
 * may run, with *q its settings. */
static const char *check_request(const cJSON *j, const int *isf, zt_tg_request *q, int *no_log, int vocab) {
  static char why[160];
  *q = (zt_tg_request){.tokens_to_generate = 64, .temperature = 1.0, .random_seed = -1};
  *no_log = 0;
  const field prompts = get(j, isf, "prompts");
  if (!prompts.v) return "prompts argument required";
  if (get(j, isf, "max_len").v) return "max_len is no longer used.  Replace with tokens_to_generate";
  if (get(j, isf, "sentences").v) return "sentences is no longer used.  Replace with prompts";
  if (prompts.t != PY_LIST) return "prompts is not a list of strings";
  const int n = cJSON_GetArraySize(prompts.v);
  for (const cJSON *c = prompts.v->child; c; c = c->next)
    if (!cJSON_IsString(c)) return "prompts is not a list of strings";
  if (n == 0) return "prompts is empty";
  if (n > 128) return "Maximum number of prompts is 128";
  field f = get(j, isf, "tokens_to_generate");
  if (f.v) {
    if (!is_int(f)) return "tokens_to_generate must be an integer greater than 0";
    if (num(f) < 0) return "tokens_to_generate must be an integer greater than or equal to 0";
    if (num(f) > 1e9) return "tokens_to_generate: Length of prompt + tokens_to_generate longer than allowed";
    q->tokens_to_generate = (int)num(f);
  }
  if ((f = get(j, isf, "logprobs")).v) {
    if (f.t != PY_BOOL) return "logprobs must be a boolean value";
    q->logprobs = cJSON_IsTrue(f.v);
  }
  if (q->tokens_to_generate == 0 && !q->logprobs) return "tokens_to_generate=0 implies logprobs should be True";
  if ((f = get(j, isf, "temperature")).v) {
    if (f.t != PY_INT && f.t != PY_FLOAT) return "temperature must be a positive number less than or equal to 100.0";
    if (!(num(f) > 0.0 && num(f) <= 100.0)) return "temperature must be a positive number less than or equal to 100.0";
    q->temperature = num(f);
  }
  if ((f = get(j, isf, "top_k")).v) {
    if (f.t != PY_INT) return "top_k must be an integer equal to or greater than 0 and less than or equal to 1000";
    if (!(num(f) >= 0 && num(f) <= 1000))
      return "top_k must be equal to or greater than 0 and less than or equal to 1000";
    q->top_k = (int)num(f);
  }
  if ((f = get(j, isf, "top_p")).v) {
    if (f.t != PY_FLOAT) return "top_p must be a positive float less than or equal to 1.0";
    if (num(f) > 0.0 && q->top_k > 0) return "cannot set both top-k and top-p samplings.";
    if (!(num(f) >= 0.0 && num(f) <= 1.0)) return "top_p must be less than or equal to 1.0";
    q->top_p = num(f);
  }
  if ((f = get(j, isf, "top_p_decay")).v) {
    if (f.t != PY_FLOAT) return "top_p_decay must be a positive float less than or equal to 1.0";
    if (q->top_p == 0.0) return "top_p_decay cannot be set without top_p";
    if (!(num(f) >= 0.0 && num(f) <= 1.0)) return "top_p_decay must be less than or equal to 1.0";
    q->top_p_decay = num(f);
  }
  if ((f = get(j, isf, "top_p_bound")).v) {
    if (f.t != PY_FLOAT) return "top_p_bound must be a positive float less than or equal to top_p";
    if (q->top_p == 0.0) return "top_p_bound cannot be set without top_p";
    if (!(num(f) > 0.0 && num(f) <= q->top_p)) return "top_p_bound must be greater than 0 and less than top_p";
    q->top_p_bound = num(f);
  }
  if ((f = get(j, isf, "add_BOS")).v) {
    if (f.t != PY_BOOL) return "add_BOS must be a boolean value";
    q->add_bos = cJSON_IsTrue(f.v);
  }
  for (const cJSON *c = prompts.v->child; c; c = c->next)
    if (!c->valuestring[0] && !q->add_bos) return "Empty prompts require add_BOS=true";
  static const char *const flags[3] = {"stop_on_double_eol", "stop_on_eol", "prevent_newline_after_colon"};
  int *dst[3] = {&q->stop_on_double_eol, &q->stop_on_eol, &q->prevent_newline_after_colon};
  for (int k = 0; k < 3; k++)
    if ((f = get(j, isf, flags[k])).v) {
      if (f.t != PY_BOOL) {
        snprintf(why, sizeof why, "%s must be a boolean value", flags[k]);
        return why;
      }
      *dst[k] = cJSON_IsTrue(f.v);
    }
  if ((f = get(j, isf, "random_seed")).v) {
    if (!is_int(f)) return "random_seed must be integer";
    if (num(f) < 0) return "random_seed must be a positive integer";
    q->random_seed = num(f) < 9e18 ? (int64_t)num(f) : (int64_t)9e18;
  }
  if ((f = get(j, isf, "no_log")).v) {
    if (f.t != PY_BOOL) return "no_log must be a boolean value";
    *no_log = cJSON_IsTrue(f.v);
  }
  const field beam = get(j, isf, "beam_width");
  if (beam.v) {
    if (!is_int(beam)) return "beam_width must be integer";
    if (num(beam) < 1) return "beam_width must be an integer > 1";
    if (n > 1) return "When doing beam_search, batch size must be 1";
  }
  q->stop_token = 50256;
  q->length_penalty = 1.0;
  if ((f = get(j, isf, "stop_token")).v) {
    if (!is_int(f)) return "stop_token must be an integer";
    q->stop_token = num(f) >= -2147483648.0 && num(f) <= 2147483647.0 ? (int32_t)num(f) : -1;
  }
  if ((f = get(j, isf, "length_penalty")).v) {
    if (f.t != PY_FLOAT) return "length_penalty must be a float";
    q->length_penalty = num(f);
  }
  if (beam.v) {
    q->beam_width = num(beam) < 1e9 ? (int)num(beam) : 1000000000; /* memory refuses it long before */
    return NULL;
  }
  if (q->top_k > 1 && q->top_k >= vocab) { /* sample()'s assertion */
    snprintf(why, sizeof why, "top-k is larger than vocab size. (top_k %d, the tokenizer's %d ids)", q->top_k, vocab);
    return why;
  }
  return NULL;
}

/* ---- HTTP -------------------------------------------------------------------------------------------------------- */

static void send_all(int fd, const char *p, size_t n) {
  while (n) {
    const ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return; /* the client went away: nothing to tell it */
    }
    p += w, n -= (size_t)w;
  }
}

static void reply(int fd, int code, const char *extra_headers, const char *body, size_t n) {
  const char *why = code == 200 ? "OK" : code == 400 ? "BAD REQUEST" : code == 404 ? "NOT FOUND"
                    : code == 405 ? "METHOD NOT ALLOWED" : code == 411 ? "LENGTH REQUIRED"
                    : code == 413 ? "REQUEST ENTITY TOO LARGE" : code == 431 ? "REQUEST HEADER FIELDS TOO LARGE"
                    : "INTERNAL SERVER ERROR";
  char head[512];
  const int h = snprintf(head, sizeof head, "HTTP/1.1 %d %s\r\nServer: zerotron\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\n%sConnection: close\r\n\r\n", code, why, n, extra_headers);
  send_all(fd, head, (size_t)h);
  send_all(fd, body, n);
}

/* A refusal: the message as a JSON string and a newline (flask_restful's output_json of the str put() returns). */
static void reply_text(int fd, int code, const char *msg) {
  zt_strbuf b = {0};
  zt_pyjson_string(&b, msg, strlen(msg));
  zt_strbuf_put(&b, "\n", 1);
  reply(fd, code, "", b.p, b.n);
  free(b.p);
}

/* An HTTP-level error as flask_restful writes it: {"message": "..."} */
static void reply_message(int fd, int code, const char *extra_headers, const char *msg) {
  zt_strbuf b = {0};
  zt_strbuf_put(&b, "{\"message\": ", 12);
  zt_pyjson_string(&b, msg, strlen(msg));
  zt_strbuf_put(&b, "}\n", 2);
  reply(fd, code, extra_headers, b.p, b.n);
  free(b.p);
}

/* jsonify({"text": ..., "segments": ..., "logprobs": ...}) (beam search: "scores" for "logprobs"): sorted keys, no
 * spaces, ASCII, a newline. */
static void reply_result(int fd, const zt_tokenizer *tok, const zt_tg_output *o) {
  zt_strbuf b = {0};
  if (o->scores) {
    zt_strbuf_put(&b, "{\"scores\":[", 11);
    for (int i = 0; i < o->n; i++) {
      if (i) zt_strbuf_put(&b, ",", 1);
      zt_pyjson_float(&b, (double)o->scores[i]);
    }
    zt_strbuf_put(&b, "]", 1);
  } else if (!o->logprobs[0]) {
    zt_strbuf_put(&b, "{\"logprobs\":", 12);
    zt_strbuf_put(&b, "null", 4);
  } else {
    zt_strbuf_put(&b, "{\"logprobs\":[", 13);
    for (int i = 0; i < o->n; i++) {
      zt_strbuf_put(&b, i ? ",[" : "[", i ? 2 : 1);
      for (int k = 0; k + 1 < o->len[i]; k++) {
        if (k) zt_strbuf_put(&b, ",", 1);
        zt_pyjson_float(&b, (double)o->logprobs[i][k]);
      }
      zt_strbuf_put(&b, "]", 1);
    }
    zt_strbuf_put(&b, "]", 1);
  }
  zt_strbuf_put(&b, ",\"segments\":[", 13);
  for (int i = 0; i < o->n; i++) {
    zt_strbuf_put(&b, i ? ",[" : "[", i ? 2 : 1);
    for (int k = 0; k < o->len[i]; k++) {
      size_t n;
      char *s = zt_tokenizer_segment(tok, o->tokens[i][k], &n);
      if (k) zt_strbuf_put(&b, ",", 1);
      zt_pyjson_string(&b, s, n);
      free(s);
    }
    zt_strbuf_put(&b, "]", 1);
  }
  zt_strbuf_put(&b, "],\"text\":[", 10);
  for (int i = 0; i < o->n; i++) {
    size_t n;
    char *s = zt_tokenizer_decode(tok, o->tokens[i], (size_t)o->len[i], &n);
    if (i) zt_strbuf_put(&b, ",", 1);
    zt_pyjson_string(&b, s, n);
    free(s);
  }
  zt_strbuf_put(&b, "]}\n", 3);
  reply(fd, 200, "", b.p, b.n);
  free(b.p);
}

/* A header's value (case-insensitive name) in the header block, or NULL; *n its length. */
static const char *header_value(const char *head, const char *name, size_t *n) {
  const size_t k = strlen(name);
  for (const char *l = strstr(head, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
    const char *s = l + 2;
    if (!strncasecmp(s, name, k) && s[k] == ':') {
      s += k + 1;
      while (*s == ' ' || *s == '\t') s++;
      const char *e = strstr(s, "\r\n");
      *n = e ? (size_t)(e - s) : strlen(s);
      while (*n && (s[*n - 1] == ' ' || s[*n - 1] == '\t')) (*n)--;
      return s;
    }
  }
  return NULL;
}

typedef struct {
  zt_tg *g;
  const zt_tokenizer *tok;
  int64_t served;
} server;

static void generate(server *sv, int fd, const char *ip, char *body, size_t n) {
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(body, n, &end, 0);
  if (j && end) /* nothing but whitespace after the value, as json.loads */
    for (const char *p = end; p < body + n; p++)
      if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
        cJSON_Delete(j);
        j = NULL;
        break;
      }
  if (!j) {
    char msg[160];
    snprintf(msg, sizeof msg, "Failed to decode JSON object: not valid JSON (at byte %zu of %zu)",
             end ? (size_t)(end - body) : (size_t)0, n);
    reply_message(fd, 400, "", msg);
    return;
  }
  if (!cJSON_IsObject(j)) {
    reply_text(fd, 400, "prompts argument required");
    cJSON_Delete(j);
    return;
  }
  int *isf = float_literals(body, cJSON_GetArraySize(j));
  zt_tg_request q;
  int no_log;
  const char *err = check_request(j, isf, &q, &no_log, zt_tg_vocab(sv->g));
  free(isf);
  if (err) {
    reply_text(fd, 400, err);
    cJSON_Delete(j);
    return;
  }
  if (!no_log) {
    const time_t now = time(NULL);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char ts[64];
    strftime(ts, sizeof ts, "%Y-%m-%d %H:%M:%S", &tm);
    printf("request IP: %s\n%.*s\nstart time:  %s.%06ld\n", ip, (int)(n < 4096 ? n : 4096), body, ts, (long)tv.tv_usec);
    fflush(stdout);
  }
  const cJSON *pr = cJSON_GetObjectItemCaseSensitive(j, "prompts");
  for (const cJSON *c = j->child; c; c = c->next) /* the last "prompts", as get() */
    if (c->string && !strcmp(c->string, "prompts")) pr = c;
  const int np = cJSON_GetArraySize(pr);
  char **prompts = zt_malloc((size_t)np * sizeof(char *), "prompts");
  size_t *plen = zt_malloc((size_t)np * sizeof(size_t), "prompts");
  int i = 0;
  for (const cJSON *c = pr->child; c; c = c->next, i++) prompts[i] = c->valuestring, plen[i] = strlen(c->valuestring);
  zt_tg_output o;
  const double t0 = zt_now();
  err = zt_tg_run(sv->g, &q, prompts, plen, np, &o);
  if (err) {
    reply_text(fd, 400, err);
  } else {
    reply_result(fd, sv->tok, &o);
    int64_t toks = 0;
    for (int k = 0; k < o.n; k++) toks += o.len[k];
    if (!no_log)
      zt_log("> request %lld: %d prompts, %lld tokens (prompts and generated) in %.3f s\n", (long long)sv->served, np,
             (long long)toks, zt_now() - t0);
    zt_tg_output_free(&o);
  }
  sv->served++;
  free(prompts), free(plen);
  cJSON_Delete(j);
}

/* Reads one request from fd and answers it. */
static void handle(server *sv, int fd, const char *ip) {
  char *buf = zt_malloc(MAX_HEADER + 1, "request");
  size_t have = 0;
  char *eoh = NULL;
  while (!eoh) {
    if (have == MAX_HEADER) {
      reply_message(fd, 431, "", "The request's header is larger than 64 KiB.");
      free(buf);
      return;
    }
    const ssize_t r = recv(fd, buf + have, MAX_HEADER - have, 0);
    if (r < 0 && errno == EINTR && !stopping) continue;
    if (r <= 0) {
      free(buf);
      return;
    }
    have += (size_t)r;
    buf[have] = 0;
    eoh = strstr(buf, "\r\n\r\n");
  }
  const size_t head_len = (size_t)(eoh - buf) + 4;
  eoh[2] = 0; /* the header block keeps its last "\r\n" */
  char method[16] = "", target[1024] = "";
  sscanf(buf, "%15s %1023s", method, target);
  char *qm = strchr(target, '?');
  if (qm) *qm = 0;
  size_t vn;
  const char *te = header_value(buf, "Transfer-Encoding", &vn);
  const char *cl = header_value(buf, "Content-Length", &vn);
  const long long clen = cl ? strtoll(cl, NULL, 10) : 0;
  if (strcmp(target, "/api") != 0) {
    reply_message(fd, 404, "", "The requested URL was not found on the server. If you entered the URL manually please "
                  "check your spelling and try again.");
  } else if (!strcmp(method, "OPTIONS")) {
    reply(fd, 200, "Allow: OPTIONS, PUT\r\n", "", 0);
  } else if (strcmp(method, "PUT") != 0) {
    reply_message(fd, 405, "Allow: OPTIONS, PUT\r\n", "The method is not allowed for the requested URL.");
  } else if (te && !cl) {
    reply_message(fd, 411, "", "A Content-Length header is required (chunked bodies are not read).");
  } else if (clen < 0 || clen > MAX_BODY) {
    reply_message(fd, 413, "", "The request's body is larger than 16 MiB.");
  } else {
    const char *ex = header_value(buf, "Expect", &vn);
    if (ex && vn == 12 && !strncasecmp(ex, "100-continue", 12)) send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    char *body = zt_malloc((size_t)clen + 1, "request body");
    size_t got = have - head_len < (size_t)clen ? have - head_len : (size_t)clen;
    memcpy(body, buf + head_len, got);
    while (got < (size_t)clen) {
      const ssize_t r = recv(fd, body + got, (size_t)clen - got, 0);
      if (r < 0 && errno == EINTR && !stopping) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    body[got] = 0;
    if (got == (size_t)clen) generate(sv, fd, ip, body, got);
    free(body);
  }
  free(buf);
}

/* Closes the connection after the reply: what the client sent and was not read (a body the reply did not need) is
 * read and dropped until the client closes (at most 1 s and 32 MiB), since closing a socket with unread bytes sends a
 * reset that can reach the client before it has read the reply. */
static void linger_close(int fd) {
  shutdown(fd, SHUT_WR);
  const struct timeval to = {.tv_sec = 1};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &to, sizeof to);
  char sink[65536];
  for (size_t total = 0; total < ((size_t)32 << 20);) {
    const ssize_t r = recv(fd, sink, sizeof sink, 0);
    if (r <= 0) break;
    total += (size_t)r;
  }
  close(fd);
}

static int listen_on(int port, int *bound) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  zt_check(fd >= 0, "server", "socket: %s", strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = INADDR_ANY};
  zt_check(bind(fd, (struct sockaddr *)&a, sizeof a) == 0, "bad argument value", "--port %d: cannot listen on "
           "0.0.0.0:%d: %s", port, port, strerror(errno));
  zt_check(listen(fd, 16) == 0, "server", "listen: %s", strerror(errno));
  socklen_t len = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &len);
  *bound = ntohs(a.sin_port);
  return fd;
}

static void serve(server *sv, int lfd) {
  while (!stopping) {
    struct sockaddr_in peer;
    socklen_t pl = sizeof peer;
    const int fd = accept(lfd, (struct sockaddr *)&peer, &pl);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      zt_fatal("server", "accept: %s", strerror(errno));
    }
    const struct timeval to = {.tv_sec = 60};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &to, sizeof to);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &to, sizeof to);
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof ip);
    handle(sv, fd, ip);
    linger_close(fd);
  }
}

int zt_text_generation_server_main(int argc, char **argv) {
  if (zt_program_start(&argc, &argv, usage)) return 0;
  zt_eval_program = "run_text_generation_server";
  server_flags sf;
  int rn;
  char **rest;
  split_args(argc, argv, &sf, &rn, &rest);
  zt_args args;
  zt_eval_parse(&args, rn, rest);
  zt_tokenizer *tok = zt_engine_tokenizer(&args);
  zt_check(tok != NULL && zt_tokenizer_eod(tok) >= 0, "missing argument", "run_text_generation_server needs the "
           "tokenizer of the checkpoint, with an end-of-document token (--tokenizer-type GPT2BPETokenizer and its "
           "files)");
  /* a request's prompt + generation may take every position (generation.py's check is against
   * max_position_embeddings, not --seq-length) */
  if (args.max_position_embeddings > 0 && args.max_position_embeddings != args.seq_length) {
    zt_log(" > --seq-length %d: the server plans --max-position-embeddings %d positions per row (Megatron's limit for "
           "a prompt and its generation)\n", args.seq_length, args.max_position_embeddings);
    args.seq_length = args.max_position_embeddings;
  }
  zt_eval_decoding_setup(&args, tok, "serve");
  int lfd = -1, port = sf.port;
  if (zt_comm_rank() == 0) lfd = listen_on(sf.port, &port); /* a port in use is refused before the model loads */
  struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: accept() returns */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  zt_tg *g = zt_tg_new(&args, tok, sf.max_tokens);
  if (zt_comm_rank() == 0) {
    server sv = {.g = g, .tok = tok};
    zt_log(" * Running on http://0.0.0.0:%d/api (PUT; pid %ld)\n", port, (long)getpid());
    fflush(stdout);
    serve(&sv, lfd);
    close(lfd);
    zt_log("> stopping after %lld requests\n", (long long)sv.served);
    zt_tg_stop(g);
  } else {
    zt_tg_follow(g);
  }
  zt_tg_free(g);
  zt_tokenizer_free(tok);
  free(rest);
  zt_comm_finalize();
  return 0;
}
