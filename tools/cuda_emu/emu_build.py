#!/usr/bin/env python3
"""Writes the Makefile that builds the emulated CUDA tests and programs (tools/cuda_emu/README.md);
scripts/cuda_emu_tests.sh runs it. Everything is generated from the current sources into OUT:

  OUT/gen/<path>.cpp, OUT/gen/<path>.cuh   every .cu / .cuh of the library, through gen.py
  OUT/obj/...                               those compiled as C++, the emulator's runtime (tools/cuda_emu/src),
                                            the library's C files that only exist with CUDA (#ifdef ZT_HAVE_CUDA),
                                            compiled with ZT_HAVE_CUDA=1, and the tests
  OUT/bin/test_cuda_*                       one executable per tests/cuda/test_cuda_*.c, linked against the CPU
                                            library (libzt.a) of an existing CMake build ZT_BUILD, minus its CUDA
                                            libraries: the emulated objects come first and define every CUDA symbol.
  OUT/bin/<program>                         the PROGRAMS below: the same, plus the emulated NCCL (src/nccl.cpp) and
                                            the library's real NCCL backend (runtime/comm/comm_nccl.c) compiled
                                            against it, so that multi-process GPU code runs under mpirun.

Prints what scripts/cuda_emu_tests.sh runs, one per line (NAME, or NAME@NP+ENV=VALUE,...: under mpirun -np NP
with those variables), then "-NAME" for each program it builds but does not run.

    emu_build.py --root ROOT --zt-build ZT_BUILD --out OUT [--san]
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys

CU_DIRS = ['runtime', 'models', 'train', 'data', 'checkpoints', 'evaluate']
# Programs other than tests/cuda/test_cuda_*.c, linked with the emulated NCCL: (binary, source, runs), a run being
# '' (one process) or '@NP' (mpirun -np NP), either followed by '+VAR=VALUE,...' (its environment). No runs: built
# only (scripts/cuda_emu_tests.sh says where). Add a driver here (e.g. a tests/cuda/*_emu.c) to have it built.
PROGRAMS = [
    ('nccl_check', 'tools/cuda_emu/nccl_check.c', ['@3+ZT_EMU_DEVICES=3']),
    ('test_comm_nccl', 'tests/comm/test_comm_nccl.c', ['', '@2+ZT_EMU_DEVICES=2']),
    ('pretrain_gpt', 'train/pretrain_gpt.c', []),
    ('pretrain_bert', 'train/pretrain_bert.c', []),
    ('pretrain_t5', 'train/pretrain_t5.c', []),
    ('evaluate_zeroshot', 'evaluate/cli/evaluate_zeroshot.c', []),
    ('generate_samples', 'evaluate/cli/generate_samples.c', []),
    ('run_text_generation_server', 'evaluate/cli/run_text_generation_server.c', []),
    ('finetune_bert', 'tasks/cli/finetune_bert.c', []),
]
CUDA_LIBS = re.compile(r'(cuda|cublas|cudart|cudadevrt|culibos|nccl|nvrtc|cudnn)', re.I)


def find(root, dirs, exts):
    out = []
    for d in dirs:
        for base, subdirs, files in os.walk(os.path.join(root, d)):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith('.') and not s.startswith('build'))
            out += [os.path.join(base, f) for f in sorted(files) if f.endswith(exts)]
    return out


def link_line(zt_build):
    """The libraries after the objects of an executable that links `zt`, with paths made absolute and the CUDA
    libraries left out."""
    probes = glob.glob(os.path.join(zt_build, '**/zt_emu_link_probe.dir/link.txt'), recursive=True)
    # link.txt paths are relative to the directory of the target's CMakeFiles
    candidates = [(p, os.path.dirname(os.path.dirname(os.path.dirname(p)))) for p in probes] + \
        [(os.path.join(zt_build, 'CMakeFiles/pretrain_gpt.dir/link.txt'), zt_build)]
    for path, cwd in candidates:
        if os.path.exists(path):
            words = shlex.split(open(path).read())
            break
    else:
        ninja = os.path.join(zt_build, 'build.ninja')
        if not os.path.exists(ninja):
            sys.exit('emu_build.py: %s has neither CMakeFiles/pretrain_gpt.dir/link.txt nor build.ninja: is it a '
                     'configured and built zerotron build directory?' % zt_build)
        text = open(ninja).read()
        m = re.search(r'^build (?:\S*/)?bin/(?:zt_emu_link_probe|pretrain_gpt):.*?\n((?:  .*\n)+)', text, re.M)
        libs = re.search(r'^  LINK_LIBRARIES = (.*)$', m.group(1), re.M) if m else None
        if not libs:
            sys.exit('emu_build.py: no link line for pretrain_gpt in %s' % ninja)
        words, cwd = shlex.split(libs.group(1)), zt_build
        words = ['-o', 'x'] + words
    words = words[words.index('-o') + 2:]  # after the output: the libraries
    out = []
    for w in words:
        if w.endswith('.o') or CUDA_LIBS.search(w):
            continue
        if not w.startswith('-') and not os.path.isabs(w):
            w = os.path.normpath(os.path.join(cwd, w))
        if w.startswith('-Wl,-rpath,'):
            paths = [p for p in w[len('-Wl,-rpath,'):].split(':') if not CUDA_LIBS.search(p)]
            if not paths:
                continue
            w = '-Wl,-rpath,' + ':'.join(paths)
        out.append(w)
    if not any(w.endswith('libzt.a') for w in out):
        sys.exit('emu_build.py: the link line of %s does not name libzt.a' % zt_build)
    return out


def zt_includes(zt_build, root):
    """The include directories and definitions the library is compiled with (for the CUDA-only C files)."""
    flags = os.path.join(zt_build, 'CMakeFiles/zt.dir/flags.make')
    inc = ['-I' + root]
    if os.path.exists(flags):
        for line in open(flags):
            if line.startswith('C_INCLUDES = '):
                inc = shlex.split(line[len('C_INCLUDES = '):])
    out = []  # without the CUDA and NCCL directories (a flag taking the next word goes with it)
    i = 0
    while i < len(inc):
        words = inc[i:i + 2] if inc[i] in ('-isystem', '-I', '-idirafter') else inc[i:i + 1]
        if not any(CUDA_LIBS.search(w) for w in words):
            out += words
        i += len(words)
    return out


def cuda_only_c_files(root):
    """The library's C files that compile to nothing without CUDA: they need ZT_HAVE_CUDA=1 here."""
    out = []
    for f in find(root, CU_DIRS, ('.c',)):
        rel = os.path.relpath(f, root)
        if re.search(r'(^|/)(cuda_stub|comm_nccl[a-z_]*|pretrain_[a-z0-9]+|launcher)\.c$', rel) or '/cli/' in rel:
            continue
        if re.search(r'^\s*#\s*if(def)?\s*\(?\s*(defined\s*\(?\s*)?ZT_HAVE_CUDA', open(f).read(), re.M):
            out.append(f)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--root', required=True)
    ap.add_argument('--zt-build', required=True)
    ap.add_argument('--out', required=True)
    ap.add_argument('--san', action='store_true')
    a = ap.parse_args()
    root, out, zt_build = (os.path.abspath(p) for p in (a.root, a.out, a.zt_build))
    emu = os.path.join(root, 'tools/cuda_emu')
    os.makedirs(out, exist_ok=True)
    libzt = os.path.join(zt_build, 'libzt.a')
    if not os.path.exists(libzt):
        sys.exit('emu_build.py: %s not found: build the library first (scripts/build.sh, or cmake --build %s '
                 '--target zt)' % (libzt, zt_build))

    cxx = os.environ.get('CXX', 'g++')
    cc = os.environ.get('CC', 'gcc')
    opt = ['-O1', '-g', '-fno-omit-frame-pointer', '-fsanitize=address,undefined', '-fno-sanitize-recover=undefined'] \
        if a.san else ['-O2']
    arch = os.environ.get('ZT_EMU_ARCH', '-march=native').split()
    contract = '-ffp-contract=' + ('off' if os.environ.get('ZT_EMU_CONTRACT', '1') == '0' else 'fast')
    # locals that kernels read before writing hold a pattern instead of what the stack had (when supported)
    probe = subprocess.run([cxx, '-ftrivial-auto-var-init=pattern', '-x', 'c++', '-E', '-', '-o', os.devnull],
                           input=b'', capture_output=True)
    autoinit = ['-ftrivial-auto-var-init=pattern'] if probe.returncode == 0 else []
    cxxflags = ['-std=c++17'] + opt + arch + [contract, '-fno-strict-aliasing'] + autoinit + \
        ['-Wall', '-Wno-sign-compare', '-Wno-unknown-pragmas', '-Wno-unused-parameter', '-Wno-unused-function',
         '-I' + os.path.join(out, 'gen'), '-I' + os.path.join(emu, 'include'), '-I' + root, '-MMD', '-MP']
    cflags = ['-std=c11'] + opt + arch + ['-Wall', '-Wno-unused-parameter', '-I' + root, '-MMD', '-MP']
    extra = shlex.split(os.environ.get('ZT_EMU_CXXFLAGS', ''))
    ldflags = (['-fsanitize=address,undefined'] if a.san else []) + link_line(zt_build)

    # every object depends on the flags: a stamp rewritten only when they change
    stamp = os.path.join(out, 'flags.stamp')
    flags_text = '\n'.join([cxx, cc] + cxxflags + cflags + extra + ldflags) + '\n'
    if not os.path.exists(stamp) or open(stamp).read() != flags_text:
        with open(stamp, 'w') as f:
            f.write(flags_text)

    rules, gen_objs, emu_objs, c_objs, tests, programs = [], [], [], [], [], []
    q = shlex.quote
    gen_py = os.path.join(emu, 'gen.py')
    headers = []
    for f in find(root, CU_DIRS, ('.cu', '.cuh')):
        rel = os.path.relpath(f, root)
        if f.endswith('.cuh'):
            g = os.path.join(out, 'gen', rel)
            headers.append(g)
        else:
            g = os.path.join(out, 'gen', rel + '.cpp')
        rules.append('%s: %s %s\n\t@python3 %s %s %s' % (g, f, gen_py, gen_py, q(f), q(g)))
        if f.endswith('.cu'):
            o = os.path.join(out, 'obj', rel + '.o')
            gen_objs.append(o)
            rules.append('%s: %s $(STAMP) | headers\n\t@echo "  CXX (emulated) %s"\n\t@mkdir -p %s\n\t@%s %s -c %s -o %s'
                         % (o, g, rel, os.path.dirname(o), cxx, ' '.join(map(q, cxxflags + extra)), g, o))
    inc = zt_includes(zt_build, root)
    nccl_objs = []
    for f in find(os.path.join(emu, 'src'), ['.'], ('.cpp',)):
        o = os.path.join(out, 'obj/emu', os.path.basename(f) + '.o')
        # the emulated NCCL only goes into the PROGRAMS; it needs MPI's headers, and folds without FMA contraction
        # (its sums must not depend on which products the compiler fuses)
        is_nccl = os.path.basename(f).startswith('nccl')
        (nccl_objs if is_nccl else emu_objs).append(o)
        flags = cxxflags + extra + (['-O3'] if 'cublaslt' in f and not a.san else []) + \
            (inc + ['-ffp-contract=off'] if is_nccl else [])
        rules.append('%s: %s $(STAMP) | headers\n\t@echo "  CXX (emulator) %s"\n\t@mkdir -p %s\n\t@%s %s -c %s -o %s'
                     % (o, f, os.path.basename(f), os.path.dirname(o), cxx, ' '.join(map(q, flags)), f, o))
    for f in cuda_only_c_files(root):
        rel = os.path.relpath(f, root)
        o = os.path.join(out, 'obj/c', rel + '.o')
        c_objs.append(o)
        rules.append('%s: %s $(STAMP)\n\t@echo "  CC (ZT_HAVE_CUDA) %s"\n\t@mkdir -p %s\n\t@%s %s %s -DZT_HAVE_CUDA=1 -c %s -o %s '
                     '2> %s.err || { echo "  warning: %s does not compile with ZT_HAVE_CUDA=1 (a test that needs it '
                     'will not link):"; head -n 5 %s.err; rm -f %s; }'
                     % (o, f, rel, os.path.dirname(o), cc, ' '.join(map(q, cflags)), ' '.join(map(q, inc)), f, o, o,
                        rel, o, o))
    # what the emulator does not provide, from the library's own stubs: NCCL (a CUDA build's libzt.a has the real
    # backend, which would pull libnccl in): linked as objects, ahead of libzt.a
    stub_objs = []
    for rel in ['runtime/comm/comm_nccl_stub.c']:
        f = os.path.join(root, rel)
        if not os.path.exists(f):
            continue
        o = os.path.join(out, 'obj/stub', rel + '.o')
        stub_objs.append(o)
        rules.append('%s: %s $(STAMP)\n\t@echo "  CC (stub) %s"\n\t@mkdir -p %s\n\t@%s %s %s -c %s -o %s'
                     % (o, f, rel, os.path.dirname(o), cc, ' '.join(map(q, cflags)), ' '.join(map(q, inc)), f, o))
    # the CUDA-only C files go in an archive, linked whole: a test reaches them through libzt.a (the shared model
    # asks for the CUDA backend), after the linker has scanned their archive, so it would otherwise take libzt.a's
    # CPU-build copies
    lib_c = os.path.join(out, 'obj/libzt_cuda_c.a')
    for f in sorted(find(os.path.join(root, 'tests/cuda'), ['.'], ('.c',))):
        name = os.path.basename(f)[:-2]
        if not name.startswith('test_cuda_'):
            continue
        o = os.path.join(out, 'obj/tests', name + '.o')
        b = os.path.join(out, 'bin', name)
        tests.append(b)
        rules.append('%s: %s $(STAMP)\n\t@echo "  CC %s"\n\t@mkdir -p %s\n\t@%s %s -c %s -o %s'
                     % (o, f, os.path.relpath(f, root), os.path.dirname(o), cc, ' '.join(map(q, cflags)), f, o))
        rules.append('%s: %s $(GEN_OBJS) $(EMU_OBJS) $(STUB_OBJS) %s %s\n\t@echo "  LINK %s"\n\t@mkdir -p %s\n'
                     '\t@%s -o %s %s $(GEN_OBJS) $(EMU_OBJS) $(STUB_OBJS) -Wl,--whole-archive %s '
                     '-Wl,--no-whole-archive %s'
                     % (b, o, lib_c, libzt, name, os.path.dirname(b), cxx, b, o, lib_c, ' '.join(map(q, ldflags))))
    # the emulator's own test: its semantics and the undefined behaviour it must catch
    st_src = os.path.join(emu, 'selftest.cu')
    st_gen = os.path.join(out, 'gen/tools/cuda_emu/selftest.cu.cpp')
    st_obj = os.path.join(out, 'obj/emu/selftest.cu.o')
    st_bin = os.path.join(out, 'bin/emu_selftest')
    rules.append('%s: %s %s\n\t@python3 %s %s %s' % (st_gen, st_src, gen_py, gen_py, st_src, st_gen))
    rules.append('%s: %s $(STAMP)\n\t@echo "  CXX (emulated) tools/cuda_emu/selftest.cu"\n\t@mkdir -p %s\n\t@%s %s -c %s -o %s'
                 % (st_obj, st_gen, os.path.dirname(st_obj), cxx, ' '.join(map(q, cxxflags + extra)), st_gen, st_obj))
    rules.append('%s: %s $(EMU_OBJS) %s\n\t@echo "  LINK emu_selftest"\n\t@mkdir -p %s\n\t@%s -o %s %s $(EMU_OBJS) %s'
                 % (st_bin, st_obj, libzt, os.path.dirname(st_bin), cxx, st_bin, st_obj, ' '.join(map(q, ldflags))))
    tests.insert(0, st_bin)
    # the real NCCL backend of runtime/comm, against the emulated nccl.h (the library's stub is not linked)
    emu_inc = ['-I' + os.path.join(emu, 'include')]
    backend_src = os.path.join(root, 'runtime/comm/comm_nccl.c')
    backend_obj = os.path.join(out, 'obj/nccl/runtime/comm/comm_nccl.c.o')
    backend_flags = cflags + emu_inc + inc + ['-DZT_HAVE_CUDA=1']
    rules.append('%s: %s $(STAMP)\n\t@echo "  CC (emulated NCCL) runtime/comm/comm_nccl.c"\n\t@mkdir -p %s\n'
                 '\t@%s %s -c %s -o %s' % (backend_obj, backend_src, os.path.dirname(backend_obj), cc,
                                          ' '.join(map(q, backend_flags)), backend_src, backend_obj))
    runs, built_only = [], []
    for name, src, prog_runs in PROGRAMS:
        f = os.path.join(root, src)
        if not os.path.exists(f):
            continue
        o = os.path.join(out, 'obj/programs', name + '.o')
        b = os.path.join(out, 'bin', name)
        programs.append(b)
        rules.append('%s: %s $(STAMP)\n\t@echo "  CC %s"\n\t@mkdir -p %s\n\t@%s %s -c %s -o %s'
                     % (o, f, src, os.path.dirname(o), cc, ' '.join(map(q, cflags + emu_inc + inc)), f, o))
        # the CUDA-only C files linked whole: a program reaches them through libzt.a (the engine calls the GPU
        # model), after the linker has scanned their archive, so it would otherwise take libzt.a's CPU-build copies
        rules.append('%s: %s %s $(NCCL_OBJS) $(GEN_OBJS) $(EMU_OBJS) %s %s\n\t@echo "  LINK %s"\n\t@mkdir -p %s\n'
                     '\t@%s -o %s %s %s $(NCCL_OBJS) -Wl,--whole-archive %s -Wl,--no-whole-archive $(GEN_OBJS) '
                     '$(EMU_OBJS) %s'
                     % (b, o, backend_obj, lib_c, libzt, name, os.path.dirname(b), cxx, b, o, backend_obj, lib_c,
                        ' '.join(map(q, ldflags))))
        runs += [name + r for r in prog_runs]
        if not prog_runs:
            built_only.append(name)
    with open(os.path.join(out, 'Makefile.tmp'), 'w') as mk:
        mk.write('# generated by tools/cuda_emu/emu_build.py: do not edit\n.DELETE_ON_ERROR:\n')
        mk.write('STAMP = %s\n' % stamp)
        mk.write('GEN_OBJS = %s\nEMU_OBJS = %s\nC_OBJS = %s\nSTUB_OBJS = %s\nNCCL_OBJS = %s\n'
                 % (' '.join(gen_objs), ' '.join(emu_objs), ' '.join(c_objs), ' '.join(stub_objs),
                    ' '.join(nccl_objs)))
        mk.write('all: %s\n.PHONY: all headers\nheaders: %s\n' % (' '.join(tests + programs), ' '.join(headers)))
        # an archive of whichever CUDA-only C files compiled (a failure is reported, not fatal)
        mk.write('%s: $(C_OBJS)\n\t@rm -f $@\n\t@ar rcs $@ $(wildcard $(C_OBJS))\n' % lib_c)
        mk.write('\n'.join(rules) + '\n')
        for d in gen_objs + emu_objs + c_objs + stub_objs + nccl_objs + [st_obj, backend_obj]:
            mk.write('-include %s\n' % (d[:-2] + '.d'))
        for t in tests:
            mk.write('-include %s\n' % os.path.join(out, 'obj/tests', os.path.basename(t) + '.d'))
        for p in programs:
            mk.write('-include %s\n' % os.path.join(out, 'obj/programs', os.path.basename(p) + '.d'))
    os.replace(os.path.join(out, 'Makefile.tmp'), os.path.join(out, 'Makefile'))
    for t in tests:
        print(os.path.basename(t))
    for r in runs:
        print(r)
    for name in built_only:
        print('-' + name)


if __name__ == '__main__':
    main()
