"""gpu_programs.py - the GPU benchmark's programs at real sizes (issue #22).

Each entry of PROGRAMS: name -> Program(build, kind, note).  build() returns
(f, args): a JAX function and a pytree of In leaves, each an input's shape,
dtype and how the GPU machine makes its values from a seed (the inputs are
never shipped: gpu_bench.py makes them there with numpy, see make_input).
kind is "compute" (GEMM-bound: TFLOP/s against the dense peak) or "memory"
(bandwidth-bound: GB/s against HBM's), for the summary's targets.

The sizes are the issue's: bf16 GEMMs 4096^3, 8192^3 and a batched one,
attention B=8 H=16 T=2048 d=128 (forward, forward+backward), softmax,
layernorm and RMSnorm on [16384, 4096] in bf16 and f32, cross-entropy over a
128k vocabulary, a physical transpose of 8192^2 bf16, row and column
reductions over 256 MB, AdamW over 100M parameters in 224 tensors, an
embedding gather and its scatter-add gradient, a ResNet-50 and a GPT-2-small
training step (bf16), a llama-style decoder layer's prefill of 2048 tokens
and 128 decode steps with a KV cache.  This file needs jax only to build the
functions, make_input numpy (and ml_dtypes for bf16); the In leaves and
ITEMSIZE nothing.
"""
import collections
import math

try:
    import numpy as np
except ImportError:       # gpu_bench.py --dry-run, and the mock's listed inputs
    np = None
try:
    import ml_dtypes
    BF16 = np.dtype(ml_dtypes.bfloat16)
except (ImportError, AttributeError):
    ml_dtypes = None
    BF16 = None

ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int8": 1, "uint8": 1,
            "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8,
            "bool": 1}


class In:
    """One input: shape, dtype name and how its values are made.

    init: ("normal", scale) (zero mean, that standard deviation: made as a
    uniform distribution, four times faster to draw than a Gaussian one, and
    these are gigabytes), ("uniform", lo, hi), ("int", lo, hi) (integers in
    [lo, hi)), ("zeros",), ("const", value)."""

    def __init__(self, shape, dtype, init=("normal", 1.0)):
        self.shape = tuple(int(d) for d in shape)
        self.dtype = dtype
        self.init = tuple(init)

    def spec(self):
        return {"shape": list(self.shape), "dtype": self.dtype, "init": list(self.init)}


def np_dtype(name):
    if np is None:
        raise RuntimeError("no numpy in this python")
    if name == "bfloat16":
        if BF16 is None:
            raise RuntimeError("bfloat16 needs ml_dtypes")
        return BF16
    return np.dtype(name)


def make_input(spec, rng):
    """The numpy array of an In's spec (a dict from spec()), from rng."""
    shape, dt, init = tuple(spec["shape"]), np_dtype(spec["dtype"]), spec["init"]
    kind = init[0]
    if kind == "normal":
        x = rng.random(shape, dtype=np.float32)
        x -= np.float32(0.5)
        x *= np.float32(init[1] * math.sqrt(12.0))
    elif kind == "uniform":
        x = rng.random(shape, dtype=np.float32)
        x *= np.float32(init[2] - init[1])
        x += np.float32(init[1])
    elif kind == "int":
        return rng.integers(init[1], init[2], size=shape, dtype=np.int64).astype(dt)
    elif kind == "zeros":
        return np.zeros(shape, dt)
    elif kind == "const":
        return np.full(shape, init[1], dt)
    else:
        raise ValueError("unknown init %r" % (kind,))
    return x if dt == np.float32 else x.astype(dt)


Program = collections.namedtuple("Program", "build kind note small trips traffic")
Program.__new__.__defaults__ = (None, 1, None)
Program.__doc__ = """build: the builder at the benchmark's size; kind: "compute" or
"memory"; note: a line for the README and the table; small: the builder at a
toy size (gpu_prepare.py --small, for trying the plumbing on the host);
trips: how many times the program's loop body runs (XLA's cost analysis counts
a while body once); traffic: fn(input bytes, output bytes, specs) -> the
least bytes the program must move, where that is not its inputs and outputs
once."""


# ---- the programs (jax imported only when a builder runs) ----------------------

def _jax():
    import jax
    import jax.numpy as jnp
    return jax, jnp


def gemm(m, n, k, batch=None):
    def build():
        jax, jnp = _jax()
        if batch:
            f = lambda a, b: jnp.einsum("bij,bjk->bik", a, b)  # noqa: E731
            return f, (In((batch, m, k), "bfloat16"), In((batch, k, n), "bfloat16"))
        return (lambda a, b: a @ b), (In((m, k), "bfloat16"), In((k, n), "bfloat16"))
    return build


def _attention(q, k, v):
    """Causal multi-head attention, [B, H, T, d] bf16; softmax in f32."""
    jax, jnp = _jax()
    t, d = q.shape[2], q.shape[3]
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k, preferred_element_type=jnp.float32)
    s = s * np.float32(1 / math.sqrt(d))
    mask = jnp.tril(jnp.ones((t, t), bool))
    s = jnp.where(mask, s, np.float32(-1e30))
    p = jax.nn.softmax(s, axis=-1).astype(q.dtype)
    return jnp.einsum("bhqk,bhkd->bhqd", p, v)


def attention(b=8, h=16, t=2048, d=128, backward=False):
    def build():
        jax, _ = _jax()
        qkv = tuple(In((b, h, t, d), "bfloat16") for _ in range(3))
        if not backward:
            return _attention, qkv

        def fwd_bwd(q, k, v, do):
            o, vjp = jax.vjp(_attention, q, k, v)
            return (o,) + vjp(do)
        return fwd_bwd, qkv + (In((b, h, t, d), "bfloat16"),)
    return build


def softmax(rows, cols, dtype):
    def build():
        jax, jnp = _jax()

        def f(x):
            return jax.nn.softmax(x.astype(jnp.float32), axis=-1).astype(x.dtype)
        return f, (In((rows, cols), dtype),)
    return build


def layernorm(rows, cols, dtype):
    def build():
        jax, jnp = _jax()

        def f(x, g, b):
            y = x.astype(jnp.float32)
            m = jnp.mean(y, -1, keepdims=True)
            v = jnp.mean(jnp.square(y - m), -1, keepdims=True)
            return ((y - m) * jax.lax.rsqrt(v + 1e-5) * g + b).astype(x.dtype)
        return f, (In((rows, cols), dtype), In((cols,), "float32", ("uniform", 0.5, 1.5)),
                   In((cols,), "float32", ("normal", 0.1)))
    return build


def rmsnorm(rows, cols, dtype):
    def build():
        jax, jnp = _jax()

        def f(x, g):
            y = x.astype(jnp.float32)
            r = jax.lax.rsqrt(jnp.mean(jnp.square(y), -1, keepdims=True) + 1e-6)
            return (y * r * g).astype(x.dtype)
        return f, (In((rows, cols), dtype), In((cols,), "float32", ("uniform", 0.5, 1.5)))
    return build


def cross_entropy(tokens=2048, vocab=131072):
    """Mean cross-entropy of bf16 logits and its gradient (what a training
    step computes at the output layer)."""
    def build():
        jax, jnp = _jax()

        def loss(logits, labels):
            z = logits.astype(jnp.float32)
            lse = jax.nn.logsumexp(z, axis=-1)
            picked = jnp.take_along_axis(z, labels[:, None], axis=-1)[:, 0]
            return jnp.mean(lse - picked)

        def f(logits, labels):
            l, g = jax.value_and_grad(loss)(logits, labels)
            return l, g
        return f, (In((tokens, vocab), "bfloat16", ("normal", 2.0)),
                   In((tokens,), "int32", ("int", 0, vocab)))
    return build


def transpose(n, dtype):
    """A physical transpose: the result's layout is row-major, so x.T must be
    written out; the scale is a consumer that keeps it a computation."""
    def build():
        def f(x, s):
            return x.T * s
        return f, (In((n, n), dtype), In((), dtype, ("const", 2.0)))
    return build


def reduce(rows, cols, axis):
    def build():
        _, jnp = _jax()
        return (lambda x: jnp.sum(x, axis=axis)), (In((rows, cols), "float32"),)
    return build


def adamw_shapes(d=768, layers=14):
    """224 tensors, 99.9M parameters: 14 transformer layers of width 768
    (q, k, v, o, fc1, fc2 weights and biases, two layernorms' scales and
    biases), and an embedding of 2048 x 768."""
    shapes = []
    for _ in range(layers):
        shapes += [(d, d), (d,), (d, d), (d,), (d, d), (d,), (d, d), (d,),
                   (d, 4 * d), (4 * d,), (4 * d, d), (d,), (d,), (d,), (d,), (d,)]
    shapes.append((2048, d))
    return shapes


def adamw(small=False):
    def build():
        jax, jnp = _jax()
        shapes = adamw_shapes(16, 2) if small else adamw_shapes()
        b1, b2, eps, lr, wd = 0.9, 0.999, 1e-8, 1e-3, 0.01

        def f(params, grads, m, v, step):
            t = step.astype(jnp.float32) + 1
            c1 = 1 - b1 ** t
            c2 = 1 - b2 ** t
            out_p, out_m, out_v = [], [], []
            for p, g, mm, vv in zip(params, grads, m, v):
                mm = b1 * mm + (1 - b1) * g
                vv = b2 * vv + (1 - b2) * g * g
                upd = (mm / c1) / (jnp.sqrt(vv / c2) + eps) + wd * p
                out_p.append(p - lr * upd)
                out_m.append(mm)
                out_v.append(vv)
            return out_p, out_m, out_v
        params = [In(s, "float32", ("normal", 0.02)) for s in shapes]
        grads = [In(s, "float32", ("normal", 1e-3)) for s in shapes]
        m = [In(s, "float32", ("normal", 1e-4)) for s in shapes]
        v = [In(s, "float32", ("uniform", 0.0, 1e-6)) for s in shapes]
        return f, (params, grads, m, v, In((), "int32", ("const", 10)))
    return build


def embedding_gather(vocab=50304, d=1024, tokens=131072):
    def build():
        return (lambda table, ids: table[ids]), (
            In((vocab, d), "float32"), In((tokens,), "int32", ("int", 0, vocab)))
    return build


def embedding_scatter_add(vocab=50304, d=1024, tokens=131072):
    """The gather's gradient: the rows' gradients added into a zero table."""
    def build():
        _, jnp = _jax()

        def f(grad, ids):
            return jnp.zeros((vocab, d), grad.dtype).at[ids].add(grad)
        return f, (In((tokens, d), "float32"), In((tokens,), "int32", ("int", 0, vocab)))
    return build


# ---- ResNet-50 ------------------------------------------------------------------

def resnet50_params(num_classes=1000):
    """[(name, shape, init)] in order: HWIO convolutions, batch-norm scales and
    biases, the classifier."""
    ps = []

    def conv(name, kh, cin, cout, gamma=("uniform", 0.8, 1.2)):
        ps.append((name, (kh, kh, cin, cout), ("normal", math.sqrt(2.0 / (kh * kh * cin)))))
        ps.append((name + "_g", (cout,), gamma))
        ps.append((name + "_b", (cout,), ("normal", 0.05)))
    conv("stem", 7, 3, 64)
    cin = 64
    for stage, (width, blocks) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for blk in range(blocks):
            pre = "s%db%d" % (stage, blk)
            conv(pre + "c1", 1, cin, width)
            conv(pre + "c2", 3, width, width)
            # small scales on each block's last batch norm (Goyal et al.'s
            # zero-init residual, not quite zero): a block starts near the
            # identity, and the bf16 gradients stay well conditioned
            conv(pre + "c3", 1, width, 4 * width, ("uniform", 0.0, 0.2))
            if blk == 0:
                conv(pre + "proj", 1, cin, 4 * width)
            cin = 4 * width
    ps.append(("fc_w", (cin, num_classes), ("normal", 1 / math.sqrt(cin))))
    ps.append(("fc_b", (num_classes,), ("zeros",)))
    return ps


def resnet50_train(batch=64, image=224, num_classes=1000, lr=0.1):
    """One SGD step of ResNet-50 v1.5 (bf16, NHWC, batch norm with the batch's
    statistics): returns the loss and the updated parameters."""
    def build():
        jax, jnp = _jax()
        names = [n for n, _, _ in resnet50_params(num_classes)]

        def forward(p, x):
            P = dict(zip(names, p))

            def cbn(name, h, stride=1, relu=True):
                w = P[name]
                kh = w.shape[0]
                pad = [((kh - 1) // 2, kh // 2)] * 2
                h = jax.lax.conv_general_dilated(h, w, (stride, stride), pad,
                                                 dimension_numbers=("NHWC", "HWIO", "NHWC"))
                y = h.astype(jnp.float32)
                m = jnp.mean(y, (0, 1, 2))
                v = jnp.mean(jnp.square(y - m), (0, 1, 2))
                y = (y - m) * jax.lax.rsqrt(v + 1e-5) * P[name + "_g"].astype(jnp.float32) \
                    + P[name + "_b"].astype(jnp.float32)
                y = y.astype(h.dtype)
                return jax.nn.relu(y) if relu else y
            h = cbn("stem", x, 2)
            h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max,
                                      (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)])
            for stage, blocks in enumerate((3, 4, 6, 3)):
                for blk in range(blocks):
                    pre = "s%db%d" % (stage, blk)
                    stride = 2 if blk == 0 and stage > 0 else 1
                    y = cbn(pre + "c1", h)
                    y = cbn(pre + "c2", y, stride)        # v1.5: the stride on the 3x3
                    y = cbn(pre + "c3", y, relu=False)
                    sc = cbn(pre + "proj", h, stride, relu=False) if blk == 0 else h
                    h = jax.nn.relu(y + sc)
            h = jnp.mean(h.astype(jnp.float32), (1, 2))
            return h @ P["fc_w"].astype(jnp.float32) + P["fc_b"].astype(jnp.float32)

        def loss(p, x, labels):
            logits = forward(p, x)
            lp = jax.nn.log_softmax(logits)
            return -jnp.mean(jnp.take_along_axis(lp, labels[:, None], axis=-1))

        def step(p, x, labels):
            l, g = jax.value_and_grad(loss)(p, x, labels)
            return l, [(w - lr * gw.astype(jnp.float32)).astype(w.dtype) for w, gw in zip(p, g)]
        params = [In(s, "bfloat16", init) for _, s, init in resnet50_params(num_classes)]
        return step, (params, In((batch, image, image, 3), "bfloat16"),
                      In((batch,), "int32", ("int", 0, num_classes)))
    return build


# ---- GPT-2 small ----------------------------------------------------------------

def gpt2_params(layers=12, d=768, vocab=50304, ctx=1024):
    ps = [("wte", (vocab, d), ("normal", 0.02)), ("wpe", (ctx, d), ("normal", 0.01))]
    for i in range(layers):
        p = "h%d_" % i
        ps += [(p + "ln1_g", (d,), ("uniform", 0.9, 1.1)), (p + "ln1_b", (d,), ("zeros",)),
               (p + "qkv_w", (d, 3 * d), ("normal", 0.02)), (p + "qkv_b", (3 * d,), ("zeros",)),
               (p + "proj_w", (d, d), ("normal", 0.02 / math.sqrt(2 * layers))),
               (p + "proj_b", (d,), ("zeros",)),
               (p + "ln2_g", (d,), ("uniform", 0.9, 1.1)), (p + "ln2_b", (d,), ("zeros",)),
               (p + "fc_w", (d, 4 * d), ("normal", 0.02)), (p + "fc_b", (4 * d,), ("zeros",)),
               (p + "out_w", (4 * d, d), ("normal", 0.02 / math.sqrt(2 * layers))),
               (p + "out_b", (d,), ("zeros",))]
    ps += [("lnf_g", (d,), ("uniform", 0.9, 1.1)), ("lnf_b", (d,), ("zeros",))]
    return ps


def gpt2_train(batch=8, t=1024, layers=12, d=768, heads=12, vocab=50304, lr=1e-4):
    """One SGD step of GPT-2 small (124M parameters, bf16; layernorm, softmax
    and the loss in f32; tied embeddings; the vocabulary padded to 50304):
    returns the loss and the updated parameters."""
    def build():
        jax, jnp = _jax()
        spec = gpt2_params(layers, d, vocab, t)
        names = [n for n, _, _ in spec]

        def ln(x, g, b):
            y = x.astype(jnp.float32)
            m = jnp.mean(y, -1, keepdims=True)
            v = jnp.mean(jnp.square(y - m), -1, keepdims=True)
            return ((y - m) * jax.lax.rsqrt(v + 1e-5) * g + b).astype(x.dtype)

        def loss(p, tokens, targets):
            P = dict(zip(names, p))
            x = P["wte"][tokens] + P["wpe"][None, :t]
            for i in range(layers):
                q = "h%d_" % i
                y = ln(x, P[q + "ln1_g"], P[q + "ln1_b"])
                qkv = y @ P[q + "qkv_w"] + P[q + "qkv_b"]
                qkv = qkv.reshape(batch, t, 3, heads, d // heads).transpose(2, 0, 3, 1, 4)
                a = _attention(qkv[0], qkv[1], qkv[2])
                a = a.transpose(0, 2, 1, 3).reshape(batch, t, d)
                x = x + a @ P[q + "proj_w"] + P[q + "proj_b"]
                y = ln(x, P[q + "ln2_g"], P[q + "ln2_b"])
                y = jax.nn.gelu(y @ P[q + "fc_w"] + P[q + "fc_b"], approximate=True)
                x = x + y @ P[q + "out_w"] + P[q + "out_b"]
            x = ln(x, P["lnf_g"], P["lnf_b"])
            logits = jnp.einsum("btd,vd->btv", x, P["wte"], preferred_element_type=jnp.float32)
            lp = jax.nn.log_softmax(logits)
            return -jnp.mean(jnp.take_along_axis(lp, targets[..., None], axis=-1))

        def step(p, tokens, targets):
            l, g = jax.value_and_grad(loss)(p, tokens, targets)
            return l, [(w - lr * gw.astype(jnp.float32)).astype(w.dtype) for w, gw in zip(p, g)]
        params = [In(s, "float32" if n.endswith(("_g", "_b")) and "ln" in n else "bfloat16",
                     init) for n, s, init in spec]
        return step, (params, In((batch, t), "int32", ("int", 0, 50257)),
                      In((batch, t), "int32", ("int", 0, 50257)))
    return build


# ---- a llama-style decoder layer ---------------------------------------------

LLAMA = dict(d=4096, heads=32, kv_heads=8, hd=128, ffn=14336)


LLAMA_SMALL = dict(d=256, heads=4, kv_heads=2, hd=64, ffn=512)


def _llama_weights(c):
    d, h, kvh, hd, ffn = (c[k] for k in ("d", "heads", "kv_heads", "hd", "ffn"))
    s = 1 / math.sqrt(d)
    return [In((d,), "bfloat16", ("uniform", 0.9, 1.1)),           # attention norm
            In((d, h * hd), "bfloat16", ("normal", s)),               # wq
            In((d, kvh * hd), "bfloat16", ("normal", s)),             # wk
            In((d, kvh * hd), "bfloat16", ("normal", s)),             # wv
            In((h * hd, d), "bfloat16", ("normal", s)),               # wo
            In((d,), "bfloat16", ("uniform", 0.9, 1.1)),           # ffn norm
            In((d, ffn), "bfloat16", ("normal", s)),                  # w1 (gate)
            In((d, ffn), "bfloat16", ("normal", s)),                  # w3 (up)
            In((ffn, d), "bfloat16", ("normal", 1 / math.sqrt(ffn)))]  # w2 (down)


def _llama_layer(c, x, pos, w, kcache, vcache, start):
    """x [B, S, d] at positions pos [S]; the new keys and values go into the
    caches [B, L, kvh, hd] at start; attention over cache positions <= pos."""
    jax, jnp = _jax()
    h, kvh, hd = (c[k] for k in ("heads", "kv_heads", "hd"))
    anorm, wq, wk, wv, wo, fnorm, w1, w3, w2 = w
    b, s, _ = x.shape

    def rms(z, g):
        y = z.astype(jnp.float32)
        return (y * jax.lax.rsqrt(jnp.mean(y * y, -1, keepdims=True) + 1e-5)
                * g.astype(jnp.float32)).astype(z.dtype)

    def rope(z):
        half = hd // 2
        inv = 1.0 / (500000.0 ** (jnp.arange(half, dtype=jnp.float32) / half))
        ang = pos.astype(jnp.float32)[:, None] * inv[None, :]
        c, sn = jnp.cos(ang)[None, :, None, :], jnp.sin(ang)[None, :, None, :]
        z1, z2 = z[..., :half].astype(jnp.float32), z[..., half:].astype(jnp.float32)
        return jnp.concatenate([z1 * c - z2 * sn, z2 * c + z1 * sn], -1).astype(z.dtype)
    y = rms(x, anorm)
    q = rope((y @ wq).reshape(b, s, h, hd))
    k = rope((y @ wk).reshape(b, s, kvh, hd))
    v = (y @ wv).reshape(b, s, kvh, hd)
    kcache = jax.lax.dynamic_update_slice(kcache, k, (0, start, 0, 0))
    vcache = jax.lax.dynamic_update_slice(vcache, v, (0, start, 0, 0))
    L = kcache.shape[1]
    qg = q.reshape(b, s, kvh, h // kvh, hd)
    sc = jnp.einsum("bsgrd,blgd->bgrsl", qg, kcache, preferred_element_type=jnp.float32)
    sc = sc * np.float32(1 / math.sqrt(hd))
    mask = jnp.arange(L)[None, :] <= pos[:, None]
    sc = jnp.where(mask[None, None, None], sc, np.float32(-1e30))
    p = jax.nn.softmax(sc, -1).astype(x.dtype)
    o = jnp.einsum("bgrsl,blgd->bsgrd", p, vcache).reshape(b, s, h * hd)
    x = x + o @ wo
    y = rms(x, fnorm)
    x = x + (jax.nn.silu(y @ w1) * (y @ w3)) @ w2
    return x, kcache, vcache


def llama_prefill(tokens=2048, cache=2048 + 128, c=LLAMA):
    """The layer over a 2048-token prompt (batch 1): its output and the KV
    cache (room for 128 more tokens) it fills."""
    def build():
        jax, jnp = _jax()
        kvh, hd, d = c["kv_heads"], c["hd"], c["d"]

        def f(x, w):
            zeros = jnp.zeros((1, cache, kvh, hd), x.dtype)
            return _llama_layer(c, x, jnp.arange(tokens), w, zeros, zeros, 0)
        return f, (In((1, tokens, d), "bfloat16"), _llama_weights(c))
    return build


def llama_decode(prompt=2048, steps=128, c=LLAMA):
    """128 decode steps of the layer (batch 1) after a 2048-token prompt, with
    the KV cache: step i takes the input row x[i] (its token's embedding, as
    a decoder given its tokens computes), appends its key and value to the
    cache and attends over the prompt and the steps before it; a fori_loop,
    one while loop in the HLO.  Returns every step's output and the caches."""
    def build():
        jax, jnp = _jax()
        kvh, hd, d = c["kv_heads"], c["hd"], c["d"]

        def f(xs, w, kc, vc):
            def body(i, carry):
                ys, kc, vc = carry
                pos = prompt + i
                x = jax.lax.dynamic_slice(xs, (i, 0), (1, d))[None]
                y, kc, vc = _llama_layer(c, x, jnp.reshape(pos, (1,)), w, kc, vc, pos)
                ys = jax.lax.dynamic_update_slice(ys, y[0], (i, 0))
                return ys, kc, vc
            return jax.lax.fori_loop(0, steps, body, (jnp.zeros_like(xs), kc, vc))
        cache = (1, prompt + steps, kvh, hd)
        return f, (In((steps, d), "bfloat16"), _llama_weights(c),
                   In(cache, "bfloat16"), In(cache, "bfloat16"))
    return build


def _gather_traffic(in_bytes, out_bytes, specs, trips):
    """the rows it copies, read and written, and the indices"""
    return 2 * out_bytes + 4 * specs[1]["shape"][0]


def _decode_traffic(in_bytes, out_bytes, specs, trips):
    """the weights read at every step, the caches read once (a lower bound)"""
    w = sum(math.prod(sp["shape"]) * 2 for sp in specs[1:-2])
    return trips * w + in_bytes + out_bytes


P = Program
PROGRAMS = collections.OrderedDict([
    ("gemm_bf16_4096", P(gemm(4096, 4096, 4096), "compute", "4096^3", gemm(64, 64, 64))),
    ("gemm_bf16_8192", P(gemm(8192, 8192, 8192), "compute", "8192^3", gemm(128, 64, 96))),
    ("bmm_bf16_32x2048", P(gemm(2048, 2048, 2048, batch=32), "compute",
                           "32 GEMMs of 2048^3", gemm(32, 48, 64, batch=3))),
    ("attention_fwd", P(attention(), "compute", "B=8 H=16 T=2048 d=128, causal",
                        attention(2, 2, 64, 32))),
    ("attention_fwd_bwd", P(attention(backward=True), "compute",
                            "output and dq, dk, dv", attention(2, 2, 64, 32, True))),
    ("softmax_bf16", P(softmax(16384, 4096, "bfloat16"), "memory", "[16384, 4096]",
                       softmax(64, 128, "bfloat16"))),
    ("softmax_f32", P(softmax(16384, 4096, "float32"), "memory", "[16384, 4096]",
                      softmax(64, 128, "float32"))),
    ("layernorm_bf16", P(layernorm(16384, 4096, "bfloat16"), "memory", "[16384, 4096]",
                         layernorm(64, 128, "bfloat16"))),
    ("layernorm_f32", P(layernorm(16384, 4096, "float32"), "memory", "[16384, 4096]",
                        layernorm(64, 128, "float32"))),
    ("rmsnorm_bf16", P(rmsnorm(16384, 4096, "bfloat16"), "memory", "[16384, 4096]",
                       rmsnorm(64, 128, "bfloat16"))),
    ("rmsnorm_f32", P(rmsnorm(16384, 4096, "float32"), "memory", "[16384, 4096]",
                      rmsnorm(64, 128, "float32"))),
    ("cross_entropy_128k", P(cross_entropy(), "memory", "2048 x 131072 bf16: loss, d logits",
                             cross_entropy(16, 1000))),
    ("transpose_bf16_8192", P(transpose(8192, "bfloat16"), "memory", "x.T * s, 8192^2",
                              transpose(96, "bfloat16"))),
    ("row_reduce_f32_256MB", P(reduce(8192, 8192, 1), "memory", "sum over rows, 8192^2",
                               reduce(64, 96, 1))),
    ("col_reduce_f32_256MB", P(reduce(8192, 8192, 0), "memory", "sum over columns, 8192^2",
                               reduce(64, 96, 0))),
    ("adamw_100M_224", P(adamw(), "memory", "99.9M f32 parameters in 224 tensors",
                         adamw(small=True))),
    ("embedding_gather", P(embedding_gather(), "memory", "131072 rows of 50304 x 1024 f32",
                           embedding_gather(100, 16, 64), 1, _gather_traffic)),
    ("embedding_scatter_add", P(embedding_scatter_add(), "memory",
                                "131072 rows added into 50304 x 1024 f32",
                                embedding_scatter_add(100, 16, 64))),
    ("resnet50_train_b64", P(resnet50_train(), "compute", "bf16, batch 64, SGD",
                             resnet50_train(4, 64, 10))),
    ("gpt2s_train_b8", P(gpt2_train(), "compute", "bf16, 8 x 1024 tokens, SGD",
                         gpt2_train(1, 64, 2, 64, 2, 256))),
    ("llama_prefill_2048", P(llama_prefill(), "compute", "d=4096, 32/8 heads, ffn 14336",
                             llama_prefill(32, 40, LLAMA_SMALL))),
    ("llama_decode_128", P(llama_decode(), "memory", "128 steps after 2048 tokens, KV cache",
                           llama_decode(32, 8, LLAMA_SMALL), 128, _decode_traffic)),
])
# the loop's trips of the small variant
SMALL_TRIPS = {"llama_decode_128": 8}
