"""Tests of tools/demo_model: the GGUF writer against hand-assembled bytes, the SPM encoder
against llama.cpp's outputs (fixture suite), torch vs numpy forward passes on a random tiny
model written and read back, and the committed models/demo.gguf.

Run: /usr/bin/python3 tests/unit/tools/demo_model_test.py -v   (from the repository root)
"""

import os
import random
import re
import struct
import sys
import tempfile
import unittest

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "demo_model"))

import check_gguf  # noqa: E402
import corpus  # noqa: E402
import gguf_writer as gw  # noqa: E402
import tokenizer as tk  # noqa: E402

FIXTURES = os.environ.get("PAGODA_FIXTURES_DIR", os.path.join(ROOT, "..", "shared", "fixtures"))
DEMO = os.path.join(ROOT, "models", "demo.gguf")


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


class GgufWriterTest(unittest.TestCase):
    def test_bytes_match_the_spec(self):
        w = gw.GGUFWriter(alignment=32)
        w.add_string("general.architecture", "llama")
        w.add_array("a.ints", gw.INT32, [1, -2])
        t = np.arange(6, dtype=np.float32).reshape(2, 3)
        w.add_tensor("t", t, gw.GGML_TYPE_F32)
        h = np.array([1.5, -2.0], dtype=np.float32)
        w.add_tensor("h", h, gw.GGML_TYPE_F16)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.gguf")
            w.write(p)
            got = open(p, "rb").read()
        # Assembled by hand from docs/gguf.md.
        exp = b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 2) + struct.pack("<Q", 3)
        exp += gstr("general.alignment") + struct.pack("<I", 4) + struct.pack("<I", 32)
        exp += gstr("general.architecture") + struct.pack("<I", 8) + gstr("llama")
        exp += gstr("a.ints") + struct.pack("<I", 9) + struct.pack("<IQ", 5, 2) + struct.pack("<ii", 1, -2)
        # tensor infos: ne innermost first; offsets relative to the data section
        exp += gstr("t") + struct.pack("<I", 2) + struct.pack("<QQ", 3, 2) + struct.pack("<IQ", 0, 0)
        exp += gstr("h") + struct.pack("<I", 1) + struct.pack("<Q", 2) + struct.pack("<IQ", 1, 32)
        exp += b"\0" * ((-len(exp)) % 32)
        exp += struct.pack("<6f", 0, 1, 2, 3, 4, 5) + b"\0" * 8
        exp += bytes.fromhex("003e") + bytes.fromhex("00c0")  # f16 1.5, -2.0 (little-endian)
        exp += b"\0" * 28
        self.assertEqual(got, exp)


class SpmEncoderTest(unittest.TestCase):
    def test_matches_llama_cpp_on_the_llama_spm_suite(self):
        base = os.path.join(FIXTURES, "tokenizer", "ggml-vocab-llama-spm.gguf")
        if not os.path.exists(base):
            self.skipTest(f"fixtures not found at {FIXTURES}")
        meta, _ = check_gguf.read_gguf(base)
        vocab = check_gguf.vocab_from_meta(meta)
        with open(base + ".inp", encoding="utf-8") as f:
            inputs = f.read().split("\n__ggml_vocab_test__\n")
        with open(base + ".out", encoding="utf-8") as f:
            outputs = f.read().split("\n")
        n = 0
        for text, line in zip(inputs, outputs):
            expected = [int(t) for t in line.split()]
            got = vocab.encode(text, add_bos=False, parse_special=False, slow=True)
            self.assertEqual(got, expected, repr(text))
            n += 1
        self.assertGreaterEqual(n, 40)

    @classmethod
    def setUpClass(cls):
        docs = corpus.generate(7, 1500)
        cls.docs = docs
        frags = [s for d in docs for s in d if isinstance(s, str)]
        cls.vocab = tk.train_vocab(frags, 1200, ["<|system|>", "<|user|>", "<|assistant|>"])

    def test_vocab_layout(self):
        v = self.vocab
        self.assertEqual(v.tokens[:3], ["<unk>", "<s>", "</s>"])
        self.assertEqual(v.types[:3], [tk.TYPE_UNKNOWN, tk.TYPE_CONTROL, tk.TYPE_CONTROL])
        for b in range(256):
            self.assertEqual(v.tokens[3 + b], f"<0x{b:02X}>")
            self.assertEqual(v.types[3 + b], tk.TYPE_BYTE)
        learned = [s for s, t in zip(v.scores, v.types) if t == tk.TYPE_NORMAL and s != 0.0]
        self.assertEqual(learned, sorted(learned, reverse=True))
        self.assertEqual(len(set(learned)), len(learned))
        self.assertLessEqual(len(v), 1200)

    def test_chunked_encoding_equals_whole_fragment_spm(self):
        for d in random.Random(3).sample(self.docs, 200):
            self.assertEqual(self.vocab.encode(d), self.vocab.encode(d, slow=True))
        odd = "Héllo  wörld\t12345 🦙 it's <|user|>hi</s>\n\n end"
        self.assertEqual(self.vocab.encode(odd), self.vocab.encode(odd, slow=True))

    def test_round_trip_and_special_tokens(self):
        v = self.vocab
        text = 'Once upon a time, "Hi!" said Ænne. 🦙\n2 + 3 = 5'
        ids = v.encode(text)
        self.assertEqual(ids[0], tk.BOS)
        self.assertEqual(v.decode(ids), " " + text)  # the ▁ prefix decodes to a space
        ids = v.encode("<|user|>Hello</s><|assistant|>")
        self.assertEqual(ids[1], v.tokens.index("<|user|>"))
        self.assertTrue(v.tokens[ids[2]].startswith("\u2581H"))  # space prefix after a special
        self.assertEqual(ids[-2:], [tk.EOS, v.tokens.index("<|assistant|>")])

    def test_chat_template_matches_training_segments(self):
        import jinja2.sandbox
        env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        tpl = env.from_string(corpus.CHAT_TEMPLATE)
        for d in self.docs:
            if not any(isinstance(s, corpus.Special) for s in d):
                continue
            msgs, role = [], None
            for s in d:
                if isinstance(s, corpus.Special) and s.text != corpus.EOS:
                    role = s.text[2:-2]
                elif isinstance(s, str):
                    msgs.append({"role": role, "content": s})
            rendered = tpl.render(messages=msgs, add_generation_prompt=False)
            self.assertEqual(self.vocab.encode(rendered), self.vocab.encode(d))


class ForwardTest(unittest.TestCase):
    def test_torch_and_numpy_agree_through_the_file(self):
        import torch
        import model as M
        torch.manual_seed(0)
        torch.set_num_threads(2)
        cfg = M.Config(vocab_size=300, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=96,
                       context_length=64)
        m = M.Llama(cfg)
        with torch.no_grad():
            for p in m.parameters():
                p.add_(torch.randn_like(p) * 0.05)  # non-trivial norms too
        w = gw.GGUFWriter()
        g = {"llama.context_length": 64, "llama.embedding_length": 64, "llama.block_count": 2,
             "llama.feed_forward_length": 96, "llama.attention.head_count": 4,
             "llama.attention.head_count_kv": 2, "llama.rope.dimension_count": 16}
        for k, val in g.items():
            w.add_u32(k, val)
        w.add_f32("llama.rope.freq_base", 10000.0)
        w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
        for name, arr in m.gguf_tensors():
            w.add_tensor(name, arr, gw.GGML_TYPE_F32)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "m.gguf")
            w.write(p)
            meta, tensors = check_gguf.read_gguf(p)
        self.assertEqual(tensors["blk.0.attn_k.weight"][0].shape, (32, 64))
        npm = check_gguf.NumpyLlama(meta, tensors)
        seq = [1, 5, 77, 299, 3, 42, 42, 8, 100, 250]
        ref = np.stack([npm.step(t) for t in seq])
        for fast in (True, False):
            M.FAST_OPS = fast
            with torch.no_grad():
                got = m(torch.tensor([seq])).double().numpy()[0]
            np.testing.assert_allclose(got, ref, atol=1e-4 * np.abs(ref).max())
        M.FAST_OPS = True


@unittest.skipUnless(os.path.exists(DEMO), "models/demo.gguf not built")
class DemoModelTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.meta, cls.tensors = check_gguf.read_gguf(DEMO)
        cls.vocab = check_gguf.vocab_from_meta(cls.meta)
        cls.model = check_gguf.NumpyLlama(cls.meta, cls.tensors)

    def test_metadata(self):
        m = self.meta
        self.assertEqual(m["general.architecture"], "llama")
        self.assertEqual(m["tokenizer.ggml.model"], "llama")
        self.assertEqual(m["general.alignment"], 32)
        self.assertLess(m["llama.attention.head_count_kv"], m["llama.attention.head_count"])
        n = len(m["tokenizer.ggml.tokens"])
        self.assertEqual(len(m["tokenizer.ggml.scores"]), n)
        self.assertEqual(len(m["tokenizer.ggml.token_type"]), n)
        self.assertEqual(m["tokenizer.ggml.bos_token_id"], 1)
        self.assertEqual(m["tokenizer.ggml.eos_token_id"], 2)
        self.assertTrue(m["tokenizer.ggml.add_bos_token"])
        self.assertFalse(m["tokenizer.ggml.add_eos_token"])
        for t in ("<|user|>", "<|assistant|>", "<|system|>"):
            self.assertEqual(m["tokenizer.ggml.token_type"][m["tokenizer.ggml.tokens"].index(t)], 3)
        self.assertLess(os.path.getsize(DEMO), 30 * 1024 * 1024)
        for name, (arr, ty) in self.tensors.items():
            self.assertEqual(ty, 0 if name.endswith("norm.weight") else 1, name)

    def words_are_english(self, text, min_words=10):
        known = set()
        for d in corpus.generate(11, 3000):
            for s in d:
                if isinstance(s, str):
                    known.update(w.lower() for w in re.findall(r"[A-Za-z']+", s))
        words = [w.lower() for w in re.findall(r"[A-Za-z']+", text)]
        self.assertGreaterEqual(len(words), min_words, text)
        frac = sum(w in known for w in words) / len(words)
        self.assertGreater(frac, 0.9, text)

    def test_greedy_story_is_english(self):
        ids = self.vocab.encode("Once upon a time")
        out = check_gguf.generate(self.model, self.vocab, ids, 60, 2)
        text = self.vocab.decode(out)
        self.assertTrue(text.startswith(","), text)
        self.words_are_english(text)

    def test_chat_reply_ends_with_eos(self):
        msgs = [{"role": "user", "content": "What color is the sky?"}]
        ids = self.vocab.encode(check_gguf.render_chat(self.meta, msgs))
        out = check_gguf.generate(self.model, self.vocab, ids, 40, 2)
        self.assertLess(len(out), 40, self.vocab.decode(out))  # stopped at </s>
        self.words_are_english(self.vocab.decode(out), min_words=3)


if __name__ == "__main__":
    unittest.main()
