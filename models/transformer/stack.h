/* The layer stack (Megatron-core's TransformerBlock): the layers of one pipeline stage built from a layer spec, and
 * the layer loop every model shares: full activation recompute (only each layer's input is kept; the layer runs
 * again before its backward; all layers, or the first N of each chunk), DeepSpeed's partitioned activations (each
 * tensor-parallel rank keeps 1/tp of every saved layer input), virtual pipeline chunks (the stage holds vpp chunks
 * of layers, one chunk's activations at a time), ZeRO-3 fetch/release/grad-ready events per layer
 * (runtime/zero/zero3.h drives them through the model's hook), the flops profiler's per-layer latency slots and
 * activation_checkpointing.profile's per-layer timings, and random-LTD's gather and scatter around the layers it
 * applies to (models/transformer/random_ltd.h).
 * A model owns one stack per layer sequence (GPT: the encoder; T5: an encoder and a decoder). */
#ifndef ZT_STACK_H
#define ZT_STACK_H

#include "models/model.h"
#include "models/transformer/transformer.h"

typedef struct {
  zt_model *model;           /* the events, the backend and dtype, the profiling callbacks */
  const zt_block_config *cfg;
  zt_layer_spec spec;
  char prefix[64];           /* "language_model.encoder": layer l is "<prefix>.layers.<l - name0>" */
  int name0;                 /* 0, or the layer number named 0 (a T5 decoder's layers follow the encoder's numbers
                                for their dropout sites and are named from 0); set before registering */
  int total_layers;          /* of the whole model (the output projections' init std, the names) */
  int nlayers, chunk_layers, vpp;
  int unit0;                 /* the ZeRO-3 unit of this stack's first layer */
  int recompute;             /* full recompute: the first `recompute` layers of each chunk (any count >= the chunk's
                                layers: all of them, Megatron's uniform method; fewer: its block method); 0: none */
  int part_acts;
  zt_block *blocks;          /* nlayers, in chunk order; blocks[i].layer: the global layer number */
  zt_ffn *ffns;
  int B, T, Tk;
  /* activations (the residual stream holds N = B*T tokens, or B*T/tp with --sequence-parallel) */
  void *layer_in;            /* [L+1, N, C] inputs of the chunk's layers and its output; partitioned: [N, C] */
  void *layer_out;           /* [N, C] the chunk's output */
  void *act_parts;           /* partitioned: [L-1, N*C/tp] this rank's piece of the inputs of layers 1..L-1 */
  void *act_work;            /* partitioned: [2, N, C] whole layer inputs/outputs */
  void *recompute_out;       /* [N, C] throw-away layer output during recompute */
  zt_block_scratch scratch;  /* shared with the model's head */
  int fwd_chunk;             /* the chunk of the last forward */
  /* random-LTD (cfg->ltd_layers set; models/transformer/random_ltd.h), at the planned B x T: */
  void *ltd_in;              /* [N, C] the kept tokens' rows of a layer's input */
  void *ltd_cat;             /* [2N, C] a whole tensor, then the kept rows to scatter into it (one gather) */
  void *ltd_d;               /* [N, C] the layer's output rows; in the backward d(output), then d(input), of them */
  int32_t *ltd_gid, *ltd_sid;  /* [N] backend: rows to gather; each output row's source in ltd_cat */
  uint8_t *ltd_pad;          /* [N] backend: the kept tokens' padding flags (an encoder's key padding) */
  int32_t *h_gid, *h_sid, *h_perm, *h_kept; /* host work for the ids */
  uint8_t *h_pad;            /* [2N] host: the pass's padding flags, then the kept tokens' */
} zt_stack;

/* The layers [l0, l0 + n) of each of the vpp chunks, chunk c's first layer given by layers[c] (global numbers);
 * partition_activations takes effect with recompute, tensor parallelism without sequence parallelism, one pipeline
 * stage and more than one layer. Tk: the encoder positions of cross-attention layers. */
void zt_stack_init(zt_stack *s, zt_model *m, const zt_block_config *cfg, const zt_layer_spec *spec,
                   const char *prefix, int total_layers, int vpp, const int *chunk_first, int chunk_layers, int unit0,
                   int recompute, int partition_activations, int B, int T, int Tk);
void zt_stack_free(zt_stack *s);
/* Registers the layers' parameters; first[i] receives the index of layer i's first parameter (its unit). */
void zt_stack_register(zt_stack *s, zt_param_table *t, int *first);
void zt_stack_bind(zt_stack *s, const zt_param_table *t, void *params, void *grads, size_t es);
/* Plans the layer inputs, the layers' activations (overlapping: every recomputed layer's, the kept layers' after
 * them, which are dead by the time the recomputed layers run again, and the chunks'),
 * the recompute output and the scratch (same calls in the sizing and carving passes). */
void zt_stack_plan(zt_stack *s, zt_memplan *plan);

/* Runs chunk `chunk` over its input zt_stack_input(s); its output is zt_stack_output(s). Returns the sum of the
 * layers' auxiliary losses (MoE). */
float zt_stack_forward(zt_stack *s, int chunk, const zt_pass *pass, const zt_cross_input *mem);
/* The backward of the last forward's chunk: dres [N, C] holds d(output) and receives d(input). */
void zt_stack_backward(zt_stack *s, const zt_pass *pass, void *dres, const zt_cross_input *mem, float aux_grad);
static inline void *zt_stack_input(const zt_stack *s) { return s->layer_in; }
static inline void *zt_stack_output(const zt_stack *s) { return s->layer_out; }
/* The flops profiler's latency slots of the layers: slots + i * ZT_FT_SLOTS for layer i of the stage, or NULL. */
void zt_stack_profile(zt_stack *s, double *slots);

#endif
