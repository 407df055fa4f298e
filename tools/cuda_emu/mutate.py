#!/usr/bin/env python3
"""Mutation check of the CUDA tests under the CPU emulator: each mutant is one small, plausible bug planted in a
kernel source (a missing barrier, an off-by-one, the wrong cuBLASLt beta or ld, ...); the test that covers the
kernel must fail against it. A mutant that survives names a bug the tests (or the emulator) would miss.

    tools/cuda_emu/mutate.py --out DIR [--zt-build BUILD] [--list] [NAME ...]

DIR is an emulator build directory (scripts/cuda_emu_tests.sh --out DIR; built here when missing). The sources in
the repository are never modified: a mutant is written to DIR/mutants/, generated over the file's emulated copy,
built and tested, and the copy is regenerated from the original afterwards. Prints one line per mutant and exits
non-zero when one survives.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# name: (file, test, original text, mutated text, extra environment, what the bug is)
MUTANTS = {
    'blocksum_war': ('runtime/ops/cuda/common.cuh', 'test_cuda_ops',
                     '  __syncthreads();  // s may still be read by a previous call\n', '',
                     {}, 'zt_block_sum without the barrier that protects s from the previous call (a WAR race)'),
    'ln_param_sync': ('runtime/ops/cuda/layernorm.cu', 'test_cuda_ops',
                      '  sb[threadIdx.y][threadIdx.x] = gb;\n  __syncthreads();\n',
                      '  sb[threadIdx.y][threadIdx.x] = gb;\n', {},
                      'layernorm dweight/dbias partials read before the other row lanes wrote them'),
    'ln_param_lanes': ('runtime/ops/cuda/layernorm.cu', 'test_cuda_ops', 'for (int r = 1; r < kTileR; r++)',
                       'for (int r = 1; r < kTileR - 1; r++)', {}, 'one row lane of the dweight partials dropped'),
    'map_tail': ('runtime/ops/cuda/elementwise.cu', 'test_cuda_ops', '    tail = np * K;', '    tail = np * K + 1;', {},
                 'the vectorized map leaves the first tail element unwritten'),
    'dropout_element': ('runtime/ops/cuda/elementwise.cu', 'test_cuda_ops', 'const size_t e = 4 * q + j;',
                        'const size_t e = 4 * q + (j ^ 1);', {}, 'dropout words applied to the wrong element'),
    'dropout_fmul_rn': ('runtime/ops/cuda/elementwise.cu', 'test_cuda_ops', '__fmul_rn(zt_ld(x, i), scale)',
                        'zt_ld(x, i) * scale', {},
                        'x * scale left contractible into an FMA with the residual add (the CPU rounds the product)'),
    'ce_rescale': ('runtime/ops/cuda/cross_entropy.cu', 'test_cuda_ops', 's = s * expf(m - x) + 1.0f;', 's = s + 1.0f;',
                   {}, 'online softmax sum not rescaled when the running max grows'),
    'emb_sort_bits': ('runtime/ops/cuda/embedding.cu', 'test_cuda_ops',
                      'const int end_bit = 32 - __builtin_clz((unsigned)rows);',
                      'const int end_bit = 31 - __builtin_clz((unsigned)rows);', {},
                      'the radix sort of the embedding backward ignores the keys\' top bit'),
    'emb_run_walk': ('runtime/ops/cuda/embedding.cu', 'test_cuda_ops', '    if (m < 8) break;',
                     '    if (m < 8 || j >= i + 8) break;', {}, 'a run of more than 16 tokens is cut short'),
    'matmul_beta_fwd': ('runtime/ops/cuda/matmul.cu', 'test_cuda_matmul', 'plan_run(p, weight, inp, 0.0f, y, bias, pre_gelu);',
                        'plan_run(p, weight, inp, 1.0f, y, bias, pre_gelu);', {},
                        'forward with beta = 1: adds the (poisoned) output buffer'),
    'matmul_beta_dw': ('runtime/ops/cuda/matmul.cu', 'test_cuda_matmul',
                       'plan_run(plan_get(g), inp, dout, 1.0f, dweight, nullptr, nullptr);',
                       'plan_run(plan_get(g), inp, dout, 0.0f, dweight, nullptr, nullptr);', {},
                       'dweight written instead of accumulated'),
    'matmul_ld': ('runtime/ops/cuda/matmul.cu', 'test_cuda_matmul',
                  'const gemm g = {dt, CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, IC, OC, IC, nullptr, nullptr,',
                  'const gemm g = {dt, CUBLAS_OP_N, CUBLAS_OP_N, IC, N, OC, OC, OC, IC, nullptr, nullptr,', {},
                  'dinp product with lda = OC instead of IC (cuBLASLt must compute the wrong thing or refuse)'),
    'matmul_trans': ('runtime/ops/cuda/matmul.cu', 'test_cuda_matmul',
                     'gemm g = {dt, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, IC, IC, IC, OC,',
                     'gemm g = {dt, CUBLAS_OP_N, CUBLAS_OP_N, OC, N, IC, IC, IC, OC,', {},
                     'forward without the transpose of the weight'),
    'matmul_late_bias': ('runtime/ops/cuda/matmul.cu', 'test_cuda_matmul',
                         'const void *late_bias = bias && !p.fused_bias ? bias : nullptr;',
                         'const void *late_bias = nullptr;', {'ZT_EMU_LT_EPILOGUES': 'none'},
                         'bias dropped when cuBLASLt refuses the fused epilogue (the heuristic offers none here)'),
    'matmul_col_sync': ('runtime/ops/cuda/matmul.cu', 'test_cuda_matmul',
                        '  sums[threadIdx.y][threadIdx.x] = acc;\n  __syncthreads();\n',
                        '  sums[threadIdx.y][threadIdx.x] = acc;\n', {},
                        'dbias partial sums read before the other row lanes wrote them'),
    'adam_range': ('runtime/ops/cuda/optimizer.cu', 'test_cuda_optim', 'while (blockIdx.x >= b.first_block[r + 1]) r++;',
                   'while (blockIdx.x > b.first_block[r + 1]) r++;', {}, 'a block finds the wrong Adam range'),
    'nonfinite_atomic': ('runtime/ops/cuda/optimizer.cu', 'test_cuda_optim',
                         'atomicAdd(count, (unsigned long long)c);', '*count = c;', {},
                         'the per-warp counts stored instead of atomically added'),
    'sumsq_sync': ('runtime/ops/cuda/optimizer.cu', 'test_cuda_optim', '  if (lane == 0) s[warp] = x;\n  __syncthreads();\n',
                   '  if (lane == 0) s[warp] = x;\n', {}, 'block sum of doubles reads the warp sums before the barrier'),
    'attn_sync_pv': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention',
                     '    __syncthreads();\n    tile_mma<TM, TD, BK, LS, LH, false, false>(o, Ps, Vs, ty, tx);',
                     '    tile_mma<TM, TD, BK, LS, LH, false, false>(o, Ps, Vs, ty, tx);', {},
                     'attention forward reads P before every thread wrote it'),
    'attn_sync_top': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention',
                      '    __syncthreads();  // the previous tile\'s Ks, Vs and Ps are read\n', '', {},
                      'attention forward loads the next K/V tile while other warps still read the previous one'),
    'attn_sync_dkdv': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention',
                       '    __syncthreads();\n    tile_mma<TK, TD, BQ, LS, LH, true, false>(dv_acc, Ps, dOs, ty, tx);',
                       '    tile_mma<TK, TD, BQ, LS, LH, true, false>(dv_acc, Ps, dOs, ty, tx);', {},
                       'attention dk/dv reads P and dS columns other warps have not written yet'),
    'attn_causal': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention', '(!a.causal || j <= i)',
                    '(!a.causal || j < i || i == 0)', {}, 'causal mask hides the diagonal'),
    'attn_lay_transpose': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention_sparse',
                           'lay_tile_bitmap<BQ>(lay_tiles, (t_end + 31) / 32, L.col_ptr, L.row_idx,',
                           'lay_tile_bitmap<BQ>(lay_tiles, (t_end + 31) / 32, L.row_ptr, L.col_idx,', {},
                           'block-sparse dk/dv walks the query tiles of its block rows (CSR) instead of the transpose'),
    'attn_lay_tmask': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention_sparse',
                       'lay_line_mask(L.col_ptr, L.row_idx, L, g, k0 + c, a.Tk, q0, BQ)',
                       'lay_line_mask(L.row_ptr, L.col_idx, L, g, k0 + c, a.Tk, q0, BQ)', {},
                       'block-sparse dk/dv masks its key columns with the layout rows (a wrong transposed index)'),
    'attn_lay_intile': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention_sparse',
                        ' && (!LAY || (listed >> c & 1));\n        s[i][j] = vis', ';\n        s[i][j] = vis', {},
                        'block-sparse forward without the in-tile mask (unlisted elements of a walked tile count)'),
    'attn_lay_skip': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention_sparse',
                      'lay_next_tile(lay_tiles, q0 / BQ + 1, t_end)', 'lay_next_tile(lay_tiles, q0 / BQ + 2, t_end)', {},
                      'block-sparse dk/dv skips the listed query tile right after each one it walks'),
    'attn_lay_edge': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention_sparse', 'if (start >= W) break;',
                      'if (start >= W - 1) break;', {},
                      'block-sparse in-tile mask misses a layout block starting at the tile\'s last position'),
    'attn_lay_bitmap': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention_sparse',
                        't <= (first + L.blk - 1) / TILE; t++)', 't < (first + L.blk - 1) / TILE; t++)', {},
                        'block-sparse work list misses the last tile each listed layout block meets (all of them when block <= tile)'),
    'attn_lay_smem': ('runtime/ops/cuda/attention.cu', 'test_cuda_attention_sparse', '  if (smem > ready) {',
                      '  if (!ready) {', {},
                      'the shared memory limit set on the first launch only (a longer sequence\'s tile bitmap needs more)'),
}

# Mutants the emulator cannot kill, and why: reported, not counted as failures.
KNOWN_SURVIVORS = {
    'dropout_fmul_rn': 'the product feeds the add through a select (kept ? x * scale : 0), which neither GCC nor, '
                       'most likely, nvcc contracts into an FMA: the __fmul_rn is a guarantee, not a difference here',
    'attn_sync_pv': 'each thread reads only the P rows its own half-warp wrote, and the row_sum shuffles order those '
                    'writes in the emulator, whose memory is sequentially consistent; on a GPU only a barrier (or '
                    '__syncwarp) orders them: the emulator does not model the weak memory model',
}


def run(cmd, env=None, timeout=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def gen_target(out, rel):
    return os.path.join(out, 'gen', rel if rel.endswith('.cuh') else rel + '.cpp')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True)
    ap.add_argument('--zt-build', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--list', action='store_true')
    ap.add_argument('--jobs', default=str(os.cpu_count() or 2))
    ap.add_argument('names', nargs='*')
    a = ap.parse_args()
    if a.list:
        for n, m in MUTANTS.items():
            print('%-18s %-34s %s' % (n, m[0], m[5]))
        return 0
    names = a.names or list(MUTANTS)
    out = os.path.abspath(a.out)
    gen_py = os.path.join(HERE, 'gen.py')
    r = run([sys.executable, os.path.join(HERE, 'emu_build.py'), '--root', ROOT, '--zt-build', a.zt_build, '--out', out])
    if r.returncode:
        sys.exit(r.stderr)
    if run(['make', '-C', out, '-j' + a.jobs, 'all']).returncode:
        sys.exit('mutate.py: the unmutated build fails (%s/Makefile)' % out)
    os.makedirs(os.path.join(out, 'mutants'), exist_ok=True)
    survived = 0
    for name in names:
        rel, test, old, new, extra_env, what = MUTANTS[name]
        src = os.path.join(ROOT, rel)
        text = open(src).read()
        if text.count(old) != 1:
            print('%-18s SKIPPED: the original text occurs %d times in %s (the source changed)' % (name, text.count(old), rel))
            continue
        mutant = os.path.join(out, 'mutants', name + '_' + os.path.basename(rel))
        with open(mutant, 'w') as f:
            f.write(text.replace(old, new))
        target = gen_target(out, rel)
        t0 = time.time()
        try:
            r = run([sys.executable, gen_py, mutant, target])
            b = run(['make', '-C', out, '-j' + a.jobs, os.path.join(out, 'bin', test)])
            if r.returncode or b.returncode:
                verdict = 'KILLED (does not build)'
            else:
                env = dict(os.environ, OMP_NUM_THREADS='1', **extra_env)
                try:
                    t = run([os.path.join(out, 'bin', test)], env=env, timeout=900)
                    fails = [l for l in t.stdout.splitlines() if l.startswith('FAIL')]
                    emu = [l for l in t.stderr.splitlines() if 'cuda emulator: error' in l or l.startswith('error:')]
                    if t.returncode == 0:
                        verdict = 'SURVIVED'
                    elif fails:
                        verdict = 'KILLED: %d FAIL lines, first: %s' % (len(fails), fails[0][:150])
                    elif emu:
                        verdict = 'KILLED: %s' % emu[0][:200]
                    else:
                        verdict = 'KILLED: exit status %d' % t.returncode
                except subprocess.TimeoutExpired:
                    verdict = 'KILLED: timeout'
        finally:  # the emulated copy of the original again
            run([sys.executable, gen_py, src, target])
        if verdict == 'SURVIVED' and name in KNOWN_SURVIVORS:
            verdict = 'SURVIVED (known: %s)' % KNOWN_SURVIVORS[name]
        survived += verdict == 'SURVIVED'
        env_note = ' [%s]' % ' '.join('%s=%s' % kv for kv in extra_env.items()) if extra_env else ''
        print('%-18s %-16s %5.0fs  %s%s\n    (%s)' % (name, test, time.time() - t0, verdict, env_note, what), flush=True)
    run(['make', '-C', out, '-j' + a.jobs, 'all'])
    known = sum(1 for n in names if n in KNOWN_SURVIVORS)
    print('%d of %d mutants killed, %d unexpected survivors (%d known emulator blind spots listed)' %
          (len(names) - survived - known, len(names), survived, known))
    return 1 if survived else 0


if __name__ == '__main__':
    sys.exit(main())
