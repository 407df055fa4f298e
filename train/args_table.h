/* Private to train/args.c: the Megatron-DeepSpeed flags zerotron knows but refuses (by the work they
 * land with), and the flags Megatron itself has deprecated. */
#ifndef ZT_ARGS_TABLE_H
#define ZT_ARGS_TABLE_H

typedef struct {
  const char *area;  /* "it lands with the <area> work" */
  const char *flags; /* space-separated flag names */
} zt_args_known_group;

typedef struct {
  const char *flag;
  const char *replacement;
} zt_args_deprecated;

extern const zt_args_known_group zt_args_known_groups[];      /* ends with {NULL, NULL} */
extern const zt_args_deprecated zt_args_deprecated_flags[];   /* ends with {NULL, NULL} */

#endif
