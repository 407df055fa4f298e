#!/usr/bin/env python3
"""Turns a CUDA source (.cu or .cuh) into C++ the CPU emulator compiles (tools/cuda_emu/README.md).

    gen.py SOURCE OUTPUT

Four rewrites, each keeping the line count (so compiler messages, __FILE__ and __LINE__ point at the original,
which a #line directive names):
  kernel<<<grid, block[, smem[, stream]]>>>(args)
      -> ::zt_emu::launch_kernel("kernel", __FILE__, __LINE__, grid, block, smem, stream,
                                 [&](auto &&...p) { kernel(p...); }, args)
  extern __shared__ T name[];            -> T *name = (T *)::zt_emu::shared_dynamic();
  __shared__ [__align__(n)] T a[d1][d2], b;  -> ZT_EMU_SHARED(T, a, [d1][d2], n); ZT_EMU_SHARED(T, b, , n)
  __global__ ... __launch_bounds__(N) f(...) {  -> the same, with ZT_EMU_KERNEL_BEGIN(N); after the brace
Everything else (qualifiers, intrinsics, headers) is left to the emulator's headers. Comments and string literals
are never rewritten. A construct the rewrites do not understand stops the generation with its line number.
"""
import os
import re
import sys


def code_mask(src):
    """mask[i] is True where src[i] is code (not inside a comment, string or character literal)."""
    mask = [True] * len(src)
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('//', i):
            j = src.find('\n', i)
            j = n if j < 0 else j
        elif src.startswith('/*', i):
            j = src.find('*/', i + 2)
            j = n if j < 0 else j + 2
        elif c in '"\'':
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == '\\' else 1
            j += 1
        else:
            i += 1
            continue
        for k in range(i, min(j, n)):
            mask[k] = False
        i = j
    return mask


class Source:
    def __init__(self, path, text):
        self.path, self.text = path, text
        self.mask = code_mask(text)

    def fail(self, pos, msg):
        line = self.text.count('\n', 0, pos) + 1
        sys.exit('%s:%d: gen.py: %s' % (self.path, line, msg))

    def find(self, word, start=0, ident=True):
        """Next position of `word` in code (as a whole identifier when ident)."""
        while True:
            i = self.text.find(word, start)
            if i < 0:
                return -1
            ok = self.mask[i]
            if ident:
                before = self.text[i - 1] if i > 0 else ' '
                after = self.text[i + len(word)] if i + len(word) < len(self.text) else ' '
                ok = ok and not (before.isalnum() or before == '_') and not (after.isalnum() or after == '_')
            if ok:
                return i
            start = i + 1

    def match(self, open_pos):
        """Position of the bracket closing the one at open_pos (counting (), [] and {} in code)."""
        pairs = {'(': ')', '[': ']', '{': '}'}
        stack = []
        for i in range(open_pos, len(self.text)):
            if not self.mask[i]:
                continue
            c = self.text[i]
            if c in pairs:
                stack.append(pairs[c])
            elif c in ')]}':
                if not stack or stack.pop() != c:
                    self.fail(i, 'unbalanced %r' % c)
                if not stack:
                    return i
        self.fail(open_pos, 'unclosed %r' % self.text[open_pos])

    def split_top(self, a, b):
        """src[a:b] split at the commas outside (), [] and {}: list of (start, end)."""
        parts, depth, start = [], 0, a
        for i in range(a, b):
            if not self.mask[i]:
                continue
            c = self.text[i]
            if c in '([{':
                depth += 1
            elif c in ')]}':
                depth -= 1
            elif c == ',' and depth == 0:
                parts.append((start, i))
                start = i + 1
        parts.append((start, b))
        return parts


def rewrite_launches(s, out):
    """Collects (start, end, replacement) for every kernel<<<...>>>(...)."""
    pos = 0
    while True:
        i = s.find('<<<', pos, ident=False)
        if i < 0:
            return
        j = s.find('>>>', i + 3, ident=False)
        if j < 0:
            s.fail(i, '<<< without >>>')
        # the kernel expression: [::]name[<template args>] possibly qualified, read backwards from <<<
        k = i
        while k > 0 and s.text[k - 1].isspace():
            k -= 1
        while True:
            if s.text[k - 1] == '>':
                depth, k = 0, k - 1
                while k >= 0:
                    c = s.text[k]
                    depth += c == '>'
                    depth -= c == '<'
                    if depth == 0:
                        break
                    k -= 1
            while k > 0 and (s.text[k - 1].isalnum() or s.text[k - 1] == '_'):
                k -= 1
            if s.text[k - 2:k] == '::':
                k -= 2
                continue
            break
        kernel = s.text[k:i].strip()
        if not re.match(r'^[A-Za-z_:][\w:]*(<.*>)?$', kernel, re.S):
            s.fail(i, 'cannot read the kernel before <<<: %r' % kernel)
        cfg = [s.text[a:b].strip() for a, b in s.split_top(i + 3, j)]
        if not 2 <= len(cfg) <= 4 or not all(cfg):
            s.fail(i, 'launch configuration %r: want grid, block[, smem[, stream]]' % s.text[i + 3:j])
        cfg += ['0', '0'][len(cfg) - 2:]
        p = j + 3
        while p < len(s.text) and s.text[p].isspace():
            p += 1
        if s.text[p] != '(':
            s.fail(j, 'kernel launch without an argument list')
        close = s.match(p)
        args = s.text[p + 1:close]
        call = ('::zt_emu::launch_kernel("%s", __FILE__, __LINE__, dim3(%s), dim3(%s), (size_t)(%s), '
                '(cudaStream_t)(%s), [&](auto &&...zt_emu_p) { %s(zt_emu_p...); }%s%s)'
                % (' '.join(kernel.split()).replace('"', '\\"'), cfg[0], cfg[1], cfg[2], cfg[3], kernel,
                   ', ' if args.strip() else '', args))
        # keep the line count: the newlines of the replaced text go after the call
        newlines = s.text.count('\n', k, close + 1) - call.count('\n')
        out.append((k, close + 1, call + '\n' * max(newlines, 0)))
        pos = close + 1


def split_commas(text):
    """text split at the commas outside (), [], {} and <>."""
    parts, depth, cur = [], 0, ''
    for c in text:
        if c in '([{<':
            depth += 1
        elif c in ')]}>':
            depth -= 1
        if c == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += c
    return parts + [cur]


def in_function(s, pos):
    """Whether pos lies in a function body: some enclosing { follows a parameter list's )."""
    stack = []
    for i in range(pos):
        if not s.mask[i]:
            continue
        c = s.text[i]
        if c == '{':
            stack.append(i)
        elif c == '}' and stack:
            stack.pop()
    for b in stack:
        head = re.sub(r'(\s|\b(const|noexcept|mutable|override)\b)+$', '', s.text[:b])
        if head.endswith(')'):
            return True
    return False


def rewrite_shared(s, out):
    pos = 0
    while True:
        i = s.find('__shared__', pos)
        if i < 0:
            return
        end = s.find(';', i, ident=False)
        if end < 0:
            s.fail(i, '__shared__ declaration without ;')
        # `extern` just before: dynamic shared memory
        pre = s.text[:i].rstrip()
        decl = s.text[i + len('__shared__'):end]
        if not in_function(s, i):
            s.fail(i, '__shared__ outside a function body is not supported by the emulator (declare it in the kernel)')
        if '=' in decl or '{' in decl:
            s.fail(i, 'a __shared__ variable cannot have an initializer')
        align = re.search(r'__align__\s*\(\s*(\w+)\s*\)', decl)
        align = align.group(1) if align else '0'
        decl = re.sub(r'__align__\s*\(\s*\w+\s*\)', '', decl)
        if pre.endswith('extern'):
            start = len(pre) - len('extern')
            m = re.match(r'^\s*(.+?)\s*(\w+)\s*\[\s*\]\s*$', decl, re.S)
            if not m:
                s.fail(i, 'extern __shared__ declaration %r: want `extern __shared__ T name[];`' % decl)
            t, name = ' '.join(m.group(1).split()), m.group(2)
            text = '%s *%s = (%s *)::zt_emu::shared_dynamic()' % (t, name, t)
        else:
            start = i
            parts = split_commas(decl)
            m = re.match(r'^\s*(.+?)\s*\b(\w+)\s*((?:\[[^\]]*\]\s*)*)$', parts[0], re.S)
            if not m:
                s.fail(i, '__shared__ declaration %r not understood' % decl)
            t = ' '.join(m.group(1).split())
            decls = [(m.group(2), m.group(3))]
            for extra in parts[1:]:
                m2 = re.match(r'^\s*(\w+)\s*((?:\[[^\]]*\]\s*)*)$', extra, re.S)
                if not m2:
                    s.fail(i, '__shared__ declarator %r not understood (pointers are not supported)' % extra)
                decls.append((m2.group(1), m2.group(2)))
            if '*' in t or '&' in t:
                s.fail(i, '__shared__ pointer or reference %r is not supported' % decl)
            text = '; '.join('ZT_EMU_SHARED(%s, %s, %s, %s)' % (t, n, ''.join(d.split()), align) for n, d in decls)
        newlines = s.text.count('\n', start, end)
        out.append((start, end, text + '\n' * newlines))
        pos = end + 1


def rewrite_kernels(s, out):
    pos = 0
    while True:
        i = s.find('__global__', pos)
        if i < 0:
            return
        brace = s.find('{', i, ident=False)
        semi = s.find(';', i, ident=False)
        if brace < 0 or (0 <= semi < brace):
            pos = i + 1  # a declaration without a body
            continue
        bound = '0'
        lb = s.find('__launch_bounds__', i)
        if 0 <= lb < brace:
            open_p = s.text.index('(', lb)
            first = s.split_top(open_p + 1, s.match(open_p))[0]
            bound = s.text[first[0]:first[1]].strip()
        out.append((brace + 1, brace + 1, ' ZT_EMU_KERNEL_BEGIN(%s);' % bound))
        pos = brace + 1


def transform(path, text):
    s = Source(path, text)
    edits = []
    rewrite_launches(s, edits)
    rewrite_shared(s, edits)
    rewrite_kernels(s, edits)
    edits.sort()
    for (a0, b0, _), (a1, b1, _) in zip(edits, edits[1:]):
        if a1 < b0:
            s.fail(a1, 'overlapping rewrites (a kernel launch inside a __shared__ declaration?)')
    res, last = [], 0
    for a, b, t in edits:
        res.append(text[last:a])
        res.append(t)
        last = b
    res.append(text[last:])
    header = '#include "zt_emu/device.h"\n#line 1 "%s"\n' % os.path.abspath(path)
    return header + ''.join(res)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, dst = sys.argv[1:]
    with open(src) as f:
        text = f.read()
    out = transform(src, text)
    assert out.count('\n') == text.count('\n') + 2, 'line count changed'
    os.makedirs(os.path.dirname(os.path.abspath(dst)), exist_ok=True)
    tmp = dst + '.tmp'
    with open(tmp, 'w') as f:
        f.write(out)
    os.replace(tmp, dst)


if __name__ == '__main__':
    main()
