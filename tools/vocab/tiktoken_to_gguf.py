#!/usr/bin/python3
# Offline tool (not used by the build or tests): a tiktoken BPE file (cl100k_base.tiktoken:
# "<base64 token> <rank>" lines) -> a vocab-only GGUF (byte-level BPE, pre "llama-bpe": the
# cl100k split regex), as a stand-in for a ~100k byte-level BPE vocabulary in
# `pagoda bench grammar`. Merges are rebuilt from the ranks (each token is the BPE of its bytes
# with lower ranks); cl100k's special tokens follow. Usage:
#   python3 tools/vocab/tiktoken_to_gguf.py cl100k_base.tiktoken cl100k.gguf
import base64, struct, sys

src, dst = sys.argv[1], sys.argv[2]
ranks = {}
for ln in open(src, 'rb'):
    parts = ln.split()
    if len(parts) != 2 or not parts[1].isdigit():
        break  # the end of the token list (some copies have other text appended)
    ranks[base64.b64decode(parts[0], validate=True)] = int(parts[1])
by_rank = sorted(ranks.items(), key=lambda kv: kv[1])
assert [r for _, r in by_rank] == list(range(len(by_rank)))

def bytes_to_unicode():
    bs = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + list(range(ord('®'), ord('ÿ') + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return dict(zip(bs, map(chr, cs)))
b2u = bytes_to_unicode()
def enc(b): return ''.join(b2u[x] for x in b)

def bpe(token, max_rank):
    parts = [bytes([b]) for b in token]
    while True:
        best = None
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and (best is None or r < best[1]): best = (i, r)
        if best is None or best[1] >= max_rank: break
        i = best[0]
        parts = parts[:i] + [parts[i] + parts[i + 1]] + parts[i + 2:]
    return parts

merges = []
for tok, r in by_rank:
    if len(tok) == 1: continue
    parts = bpe(tok, r)
    assert len(parts) == 2, (tok, parts)
    merges.append(enc(parts[0]) + ' ' + enc(parts[1]))

tokens = [enc(t) for t, _ in by_rank]
types = [1] * len(tokens)
specials = ['<|reserved_100256|>', '<|endoftext|>', '<|fim_prefix|>', '<|fim_middle|>', '<|fim_suffix|>']
for s in specials:
    tokens.append(s); types.append(3)
eos = tokens.index('<|endoftext|>')

def s8(x):
    b = x.encode('utf-8'); return struct.pack('<Q', len(b)) + b
kvs = []
def kv_str(k, v): kvs.append(s8(k) + struct.pack('<I', 8) + s8(v))
def kv_u32(k, v): kvs.append(s8(k) + struct.pack('<I', 4) + struct.pack('<I', v))
def kv_arr_str(k, vs): kvs.append(s8(k) + struct.pack('<I', 9) + struct.pack('<IQ', 8, len(vs)) + b''.join(s8(v) for v in vs))
def kv_arr_i32(k, vs): kvs.append(s8(k) + struct.pack('<I', 9) + struct.pack('<IQ', 5, len(vs)) + struct.pack('<%di' % len(vs), *vs))
kv_str('general.architecture', 'gpt2')
kv_str('general.name', 'cl100k_base')
kv_str('tokenizer.ggml.model', 'gpt2')
kv_str('tokenizer.ggml.pre', 'llama-bpe')
kv_arr_str('tokenizer.ggml.tokens', tokens)
kv_arr_i32('tokenizer.ggml.token_type', types)
kv_arr_str('tokenizer.ggml.merges', merges)
kv_u32('tokenizer.ggml.bos_token_id', eos)
kv_u32('tokenizer.ggml.eos_token_id', eos)
with open(dst, 'wb') as f:
    f.write(b'GGUF' + struct.pack('<IQQ', 3, 0, len(kvs)))
    for k in kvs: f.write(k)
print(len(tokens), 'tokens', len(merges), 'merges')
