"""SentencePiece-style (llama.cpp `tokenizer.ggml.model = "llama"`) vocab: BPE training and an
encoder that reproduces llama.cpp's SPM tokenizer exactly.

Vocab layout: <unk>=0, <s>=1, </s>=2, <0x00>..<0xFF> (type BYTE) = 3..258, then the single
characters of the corpus and the learned BPE pieces (type NORMAL), then the chat control
tokens. Spaces are written as U+2581. Scores: learned pieces get -1, -2, ... in merge order, so
the SPM rule "merge the adjacent pair whose concatenation has the highest score" replays the
BPE merges; single characters and special tokens get 0 (their scores are never consulted: a
merge result has at least two characters).

Encoding (llama.cpp llama_tokenize_impl, SPM branch, with parse_special):
  1. split the text on control-token strings (longest first);
  2. for each plain fragment: prepend " " when it is the first fragment or follows a control
     token (add_space_prefix), replace " " by U+2581, then run the SPM merge loop on UTF-8
     characters: a max-heap of adjacent bigrams keyed (score, -left); a popped bigram is stale
     when either side was merged away or the sizes no longer add up; merging re-adds the
     bigrams with the new neighbours. Each final symbol is emitted as its token, else split
     back along the recorded merge, else as <0xXX> byte tokens.
BPE training pre-splits text into chunks (U+2581-prefixed letter runs, single digits, single
other characters), so no piece spans two chunks; hence SPM merges never cross a chunk boundary
and encoding chunk by chunk (with a cache) gives the same ids as encoding the whole fragment.
encode_fragment_slow() is the whole-fragment algorithm; check_gguf.py verifies the agreement.
"""

import heapq
import re
from collections import Counter, defaultdict

SPACE = "\u2581"
UNK, BOS, EOS = 0, 1, 2
TYPE_NORMAL, TYPE_UNKNOWN, TYPE_CONTROL, TYPE_BYTE = 1, 2, 3, 6

CHUNK_RE = re.compile(SPACE + r"?[A-Za-z']+|" + SPACE + r"?[0-9]|" + SPACE + r"?[^A-Za-z0-9" +
                      SPACE + r"]|" + SPACE)


def escape(text):
    return text.replace(" ", SPACE)


def chunks(escaped):
    out = CHUNK_RE.findall(escaped)
    assert "".join(out) == escaped
    return out


def train_bpe(chunk_counts, n_merges):
    """Classic BPE over chunk frequencies. Returns (base_chars, pieces_in_merge_order).
    Deterministic: ties broken by the pair's text."""
    words = []  # [symbols list, count]
    for chunk, cnt in sorted(chunk_counts.items()):
        words.append([list(chunk), cnt])
    base = sorted({ch for w, _ in words for ch in w})
    pair_counts = Counter()
    where = defaultdict(set)  # pair -> word indices
    for i, (syms, cnt) in enumerate(words):
        for a, b in zip(syms, syms[1:]):
            pair_counts[(a, b)] += cnt
            where[(a, b)].add(i)
    pieces = []
    seen = set(base)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    while len(pieces) < n_merges and heap:
        negc, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -negc:
            continue  # stale entry; the current count was pushed when it changed
        if -negc < 2:
            break
        merged = pair[0] + pair[1]
        if merged not in seen:
            pieces.append(merged)
            seen.add(merged)
        changed = Counter()
        for i in sorted(where.pop(pair, ())):
            syms, cnt = words[i]
            j, out = 0, []
            while j < len(syms):
                if j + 1 < len(syms) and syms[j] == pair[0] and syms[j + 1] == pair[1]:
                    out.append(merged)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            for a, b in zip(syms, syms[1:]):
                pair_counts[(a, b)] -= cnt
                changed[(a, b)] += 0
            for a, b in zip(out, out[1:]):
                pair_counts[(a, b)] += cnt
                where[(a, b)].add(i)
                changed[(a, b)] += 0
            words[i][0] = out
        pair_counts.pop(pair, None)
        for p in changed:
            c = pair_counts.get(p, 0)
            if c <= 0:
                pair_counts.pop(p, None)
            elif p != pair:
                heapq.heappush(heap, (-c, p))
    return base, pieces


class Vocab:
    def __init__(self, tokens, scores, types):
        self.tokens, self.scores, self.types = list(tokens), list(scores), list(types)
        self.ids = {}
        for i, t in enumerate(self.tokens):
            self.ids.setdefault(t.encode("utf-8"), i)
        self.byte_ids = [self.ids[f"<0x{b:02X}>".encode()] for b in range(256)]
        specials = [t for t, ty in zip(self.tokens, self.types)
                    if ty in (TYPE_CONTROL, TYPE_UNKNOWN)]
        specials.sort(key=lambda t: (-len(t), t))
        self.special_re = re.compile("(" + "|".join(re.escape(t) for t in specials) + ")")
        self.special_ids = {t: self.tokens.index(t) for t in specials}
        self._cache = {}

    @staticmethod
    def build(base_chars, pieces, control_tokens):
        tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
        scores = [0.0] * len(tokens)
        types = [TYPE_UNKNOWN, TYPE_CONTROL, TYPE_CONTROL] + [TYPE_BYTE] * 256
        for ch in base_chars:
            tokens.append(ch)
            scores.append(0.0)
            types.append(TYPE_NORMAL)
        for i, p in enumerate(pieces):
            tokens.append(p)
            scores.append(-float(i + 1))
            types.append(TYPE_NORMAL)
        for t in control_tokens:
            tokens.append(t)
            scores.append(0.0)
            types.append(TYPE_CONTROL)
        assert len(set(tokens)) == len(tokens)
        return Vocab(tokens, scores, types)

    def __len__(self):
        return len(self.tokens)

    # ---- SPM core (llama.cpp llm_tokenizer_spm_session) ---------------------------------

    def encode_fragment_slow(self, escaped):
        text = escaped.encode("utf-8")
        # symbols: [start, n, prev, next]
        syms = []
        offs = 0
        while offs < len(text):
            c = text[offs]
            ln = 1 if c < 0x80 else 2 if (c >> 5) == 6 else 3 if (c >> 4) == 14 else 4 if (c >> 3) == 30 else 1
            n = min(ln, len(text) - offs)
            idx = len(syms)
            syms.append([offs, n, idx - 1, -1 if offs + n == len(text) else idx + 1])
            offs += n
        heap = []
        rev_merge = {}

        def try_add(left, right):
            if left == -1 or right == -1:
                return
            s = text[syms[left][0]:syms[left][0] + syms[left][1] + syms[right][1]]
            tid = self.ids.get(s)
            if tid is None:
                return
            heapq.heappush(heap, (-self.scores[tid], left, right, len(s)))
            rev_merge[s] = (left, right)

        for i in range(1, len(syms)):
            try_add(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            ls, rs = syms[left], syms[right]
            if ls[1] == 0 or rs[1] == 0 or ls[1] + rs[1] != size:
                continue
            ls[1] += rs[1]
            rs[1] = 0
            ls[3] = rs[3]
            if rs[3] >= 0:
                syms[rs[3]][2] = left
            try_add(ls[2], left)
            try_add(left, ls[3])
        out = []

        def resegment(i):
            s = text[syms[i][0]:syms[i][0] + syms[i][1]]
            tid = self.ids.get(s)
            if tid is not None:
                out.append(tid)
                return
            p = rev_merge.get(s)
            if p is None:
                out.extend(self.byte_ids[b] for b in s)
                return
            resegment(p[0])
            resegment(p[1])

        i = 0 if syms else -1
        while i != -1:
            resegment(i)
            i = syms[i][3]
        return out

    def encode_fragment(self, escaped):
        out = []
        for ch in chunks(escaped):
            ids = self._cache.get(ch)
            if ids is None:
                ids = self._cache[ch] = self.encode_fragment_slow(ch)
            out.extend(ids)
        return out

    def encode(self, text, add_bos=True, parse_special=True, slow=False):
        """llama.cpp-compatible tokenization of text (str) or of a list of segments where
        objects with a `.text` attribute are control tokens."""
        segs = text if isinstance(text, list) else [text]
        frags = []  # ("tok", id) or ("raw", str)
        for s in segs:
            if hasattr(s, "text"):
                frags.append(("tok", self.special_ids[s.text]))
            elif parse_special:
                for k, part in enumerate(self.special_re.split(s)):
                    if k % 2 == 1:
                        frags.append(("tok", self.special_ids[part]))
                    elif part:
                        frags.append(("raw", part))
            elif s:
                frags.append(("raw", s))
        out = [BOS] if add_bos else []
        prev_special = True
        enc = self.encode_fragment_slow if slow else self.encode_fragment
        for kind, val in frags:
            if kind == "tok":
                out.append(val)
                prev_special = True
            else:
                raw = (" " + val) if prev_special else val
                out.extend(enc(escape(raw)))
                prev_special = False
        return out

    def decode(self, ids, skip_special=True):
        b = bytearray()
        for i in ids:
            ty = self.types[i]
            if ty == TYPE_BYTE:
                b.append(int(self.tokens[i][3:5], 16))
            elif ty in (TYPE_CONTROL, TYPE_UNKNOWN):
                if not skip_special:
                    b += self.tokens[i].encode()
            else:
                b += self.tokens[i].replace(SPACE, " ").encode()
        return b.decode("utf-8", errors="replace")


def train_vocab(fragments, vocab_size, control_tokens):
    """fragments: plain-text fragments as encode() will see them (each is first in its
    document or follows a control token, so gets the space prefix). vocab_size counts every
    token, fixed ones included."""
    counts = Counter()
    for t in fragments:
        counts.update(chunks(escape(" " + t)))
    n_fixed = 3 + 256 + len(control_tokens)
    base = sorted({ch for c in counts for ch in c})
    n_merges = vocab_size - n_fixed - len(base)
    base, pieces = train_bpe(counts, n_merges)
    for p in pieces:
        assert SPACE not in p[1:], p
    return Vocab.build(base, pieces, control_tokens)
